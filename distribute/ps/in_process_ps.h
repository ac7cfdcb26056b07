// A parameter-server cluster inside one process, on a platform of several
// hosts (the simulator's multi-host topologies, e.g.
// sim:dgx_h100_cluster:3): ps tasks are devices of the platform (hosts'
// CPUs) that keep their variables' shards in their memory, and workers are
// threads bound to other hosts' devices. Reading a variable copies its
// shards to the reader's device; updating one copies the value from the
// writer's device (a replica's) to the ps devices and applies it there
// with their kernels. The copies cross the
// platform's links and the updates run on the ps devices' streams, so on
// the simulator each costs its simulated transfer and kernel time, and
// workers' updates contend for the ps devices as they would for a ps task.
//
//   auto servers = *InProcessParameterServers::Create(*platform, {ps_cpu});
//   auto chief = *ParameterServerStrategy::CreateInProcess(servers, true);
//   auto w0 = *ParameterServerStrategy::CreateInProcess(servers, false,
//                                                       worker0_options);
//   ... the same model made in each strategy's scope ...
//   absl::Status s = RunOnWorkers({host0, host1}, steps,
//       [&](int worker, int64_t step) { return TrainStep(worker, step); });
//
// Determinism: RunOnWorkers binds every worker's thread before any starts,
// so on the simulator which worker takes which call, and every value, is
// the same run to run.
#ifndef DISTRIBUTE_PS_IN_PROCESS_PS_H_
#define DISTRIBUTE_PS_IN_PROCESS_PS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "devices/device.h"
#include "devices/platform.h"
#include "devices/tensor.h"
#include "distribute/ps/parameter_server_strategy.h"
#include "distribute/variables.h"

namespace distribute {
namespace ps {

class InProcessParameterServers
    : public std::enable_shared_from_this<InProcessParameterServers> {
 public:
  // Ps task p is device ps_devices[p] of `platform` (which must outlive
  // it). INVALID_ARGUMENT for an empty or repeated list; NOT_FOUND for a
  // device the platform lacks; FAILED_PRECONDITION for a timing-only
  // device (it keeps no values).
  static absl::StatusOr<std::shared_ptr<InProcessParameterServers>> Create(
      devices::Platform& platform, const std::vector<std::string>& ps_devices);

  devices::Platform& platform() const { return platform_; }
  // Canonical names, in task order.
  const std::vector<std::string>& ps_devices() const { return ps_devices_; }
  // How many shards (of all variables) the ps devices hold.
  int64_t size() const;

  // Makes variable `layout.name` from `initial` (whole, in host memory or on
  // a device of the platform): each shard on its ps device.
  // ALREADY_EXISTS when a variable of that name was made.
  absl::Status CreateVariable(const Variable& layout,
                              const devices::Tensor& initial);
  // The layout of variable `name`; NOT_FOUND when it was not made.
  absl::StatusOr<Variable> Layout(const std::string& name) const;
  // The storage of variable `name` (whose pieces are at `locations`); a
  // variable not made by then is NOT_FOUND when it is read or updated.
  std::shared_ptr<RemoteVariableStorage> Storage(
      std::string name, std::vector<std::string> locations);

 private:
  friend class InProcessVariableStorage;
  struct Entry {
    Variable layout;
    std::vector<devices::Tensor> shards;  // on their ps devices
  };
  InProcessParameterServers(devices::Platform& platform,
                            std::vector<std::string> ps_devices,
                            std::vector<devices::Device*> devices)
      : platform_(platform),
        ps_devices_(std::move(ps_devices)),
        devices_(std::move(devices)) {}
  absl::StatusOr<std::shared_ptr<Entry>> Find(const std::string& name) const;

  devices::Platform& platform_;
  const std::vector<std::string> ps_devices_;
  const std::vector<devices::Device*> devices_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
};

// Runs fn(worker, call) for every call in 0 .. num_calls - 1 on the
// workers: one thread per worker, bound to workers[w] (its host's device),
// all started together. Worker w starts with call w; after that a worker
// takes the next call whenever it is free, so on the simulator each call
// goes to the worker free first in simulated time (which must wait on the
// simulator at least once a call for that order to be the simulator's). Returns
// when every call has run; the first failure (by call index) stops the workers
// from taking more calls and is returned, prefixed with its call and worker.
// INVALID_ARGUMENT for no workers or a negative count.
absl::Status RunOnWorkers(
    const std::vector<devices::Device*>& workers, int64_t num_calls,
    const std::function<absl::Status(int worker, int64_t call)>& fn);

}  // namespace ps
}  // namespace distribute

#endif  // DISTRIBUTE_PS_IN_PROCESS_PS_H_
