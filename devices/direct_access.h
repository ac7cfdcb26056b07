// DirectAccessGroup: the capability of a Transport group whose ranks are
// threads of one process (devices/host_transport.h), so that a rank may read
// its peers' buffers directly instead of exchanging messages. It provides
// what such algorithms need besides the pointers themselves: a barrier on
// per-rank generation counters (each rank on its own cache line) that spins
// briefly, with a CPU pause or, when the group has more ranks than CPUs, a
// yield, before it blocks; a deadline on every wait; and an abort shared
// with the transport group, after which no rank reads a peer's buffers.
//
// Example (each rank in its own thread; `published` is the algorithm's own
// per-rank table of buffer pointers):
//   devices::DirectAccessGroup* group = transport->direct_access();
//   published[rank] = input.data();            // before arriving
//   absl::Status s = group->Arrive(rank, absl::Now() + absl::Seconds(30));
//   if (!s.ok()) return s;                     // the group is aborted
//   ... read published[q] for every q ...
//   s = group->Arrive(rank, deadline);         // peers are done reading
//   group->Finish(rank);                       // (ends the reading state)
//
// Contract: every rank calls Arrive the same number of times (SPMD). A
// successful Arrive lets the rank read what its peers wrote before their
// matching Arrive, until its next Arrive or Finish. A failed Arrive (the
// deadline, an abort, a rank that left) aborts the group and returns only
// once no peer can still be reading this rank's buffers, so that the
// caller may free them.
#ifndef DEVICES_DIRECT_ACCESS_H_
#define DEVICES_DIRECT_ACCESS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace devices {

// A deadline `timeout` after the first moment a wait needs it, so that a
// wait satisfied within its first few spins never reads the clock (one
// clock read costs about as much as a small collective's barrier). Fixed
// once set; a collective passes one to each of its barriers, so that they
// share one deadline.
class LazyDeadline {
 public:
  explicit LazyDeadline(absl::Duration timeout) : timeout_(timeout) {}
  // A deadline already fixed at `deadline`.
  static LazyDeadline At(absl::Time deadline) {
    LazyDeadline d(absl::ZeroDuration());
    d.deadline_ = deadline;
    d.set_ = true;
    return d;
  }
  // The deadline, fixed at `now` + timeout on the first call.
  absl::Time Get(absl::Time now) {
    if (!set_) {
      deadline_ = now + timeout_;
      set_ = true;
    }
    return deadline_;
  }

 private:
  absl::Duration timeout_;
  absl::Time deadline_;
  bool set_ = false;
};

class DirectAccessGroup {
 public:
  // A group of `size` ranks (>= 1). Waits spin for `spin` before blocking;
  // with `oversubscribed` (more ranks than CPUs) they yield the core instead
  // of pausing on it. `on_abort`, when set, is called (without locks held)
  // when the group aborts itself after a failed wait, with the reason; the
  // transport uses it to abort its own group too, naming the failed rank.
  DirectAccessGroup(
      int size, absl::Duration spin, bool oversubscribed,
      std::function<void(int rank, const absl::Status&)> on_abort = {});
  DirectAccessGroup(const DirectAccessGroup&) = delete;
  DirectAccessGroup& operator=(const DirectAccessGroup&) = delete;

  int size() const { return size_; }

  // Ends the rank's reads of its peers' buffers (if any), arrives at the
  // group's next barrier and waits until every rank has arrived at it.
  // OK: the rank may read what peers wrote before arriving, until its next
  // Arrive or Finish. DEADLINE_EXCEEDED (naming the ranks that did not
  // arrive) past `deadline`; UNAVAILABLE if the group is aborted or a rank
  // has left; INVALID_ARGUMENT for a rank outside [0, size()). On any error
  // the group is aborted and the call returns once no peer still reads.
  absl::Status Arrive(int rank, absl::Time deadline);
  // The same, with a deadline fixed only if the wait has to spin (the
  // barriers of one collective share `deadline`).
  absl::Status Arrive(int rank, LazyDeadline& deadline);

  // Ends the rank's reads of its peers' buffers without arriving.
  void Finish(int rank);

  // For a rank that cannot go on (e.g. a kernel failed between barriers):
  // aborts the group with `reason` (not OK), as a failed Arrive does, and
  // returns `reason` once no peer still reads this rank's buffers.
  absl::Status Fail(int rank, absl::Status reason);

  // Aborts the group: pending and later Arrive calls fail with UNAVAILABLE
  // (DEADLINE_EXCEEDED when `reason` is; GroupAbortCode) carrying `reason`
  // (which must not be OK; the first reason wins). Waits
  // for no one. Thread-safe.
  void Abort(const absl::Status& reason);

  // `rank` is gone (its endpoint was destroyed): Arrive fails for everyone.
  void Leave(int rank);

  // OK, or the reason the group was aborted.
  absl::Status status() const;

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> arrived{0};  // Arrive calls made.
    std::atomic<bool> reading{false};  // Passed a barrier, not yet done.
    std::atomic<bool> gone{false};
  };

  // Whether every rank has arrived `generation` times.
  bool AllArrived(uint64_t generation) const;
  // Wakes blocked waiters (if any).
  void WakeAll();
  // Aborts with `reason` (first wins), calls on_abort_ if this call aborted
  // and `notify`, then waits until no peer of `rank` is reading.
  void FailAndQuiesce(int rank, const absl::Status& reason, bool notify);

  const int size_;
  const absl::Duration spin_;
  const bool oversubscribed_;
  const std::function<void(int, const absl::Status&)> on_abort_;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<bool> aborted_{false};
  std::atomic<int> sleepers_{0};
  mutable absl::Mutex mu_;
  absl::CondVar cv_;  // Signalled with mu_ held on arrival, abort, leave.
  absl::Status abort_status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace devices

#endif  // DEVICES_DIRECT_ACCESS_H_
