// Internal: runs a group of host threads, one per device, each bound to its
// device, and lets none of them begin its work until all are bound. A
// simulator counts bound threads as actors and advances its clock only when
// all of them wait on it; a thread still starting up must not be missed, or
// the result would depend on host scheduling. The threads come from a pool
// kept for the process (idle ones spin briefly, then park; none holds a
// binding between groups), so a group costs microseconds, not a thread
// start per device.
#ifndef DISTRIBUTE_THREAD_GROUP_H_
#define DISTRIBUTE_THREAD_GROUP_H_

#include <functional>
#include <vector>

#include "absl/status/status.h"
#include "devices/device.h"

namespace distribute {
namespace internal {

// Runs body(i) on one thread per device (devices[i]), each bound to its
// device (Device::BindThread) and started only once every thread is bound.
// An unbound caller runs devices[0]'s member itself; a single device always
// runs on the calling thread. Returns when all are done. A
// calling thread that is itself bound (a worker of an in-process cluster)
// stays running until every thread is bound, then waits suspended until the
// last thread, still bound, resumes it: the caller's side of the simulation
// never goes empty while the group starts or ends.
void RunBoundThreads(const std::vector<devices::Device*>& devices,
                     const std::function<void(int)>& body);

}  // namespace internal
}  // namespace distribute

#endif  // DISTRIBUTE_THREAD_GROUP_H_
