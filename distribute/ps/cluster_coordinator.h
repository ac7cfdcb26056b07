// ClusterCoordinator, as TF's
// tf.distribute.experimental.coordinator.ClusterCoordinator: schedules
// registered worker functions of a ParameterServerStrategy's cluster on
// whichever worker is free (parameter_server_strategy.h has the model, its
// failure rules and an example), and RemoteValue, a scheduled call's
// outcome.
#ifndef DISTRIBUTE_PS_CLUSTER_COORDINATOR_H_
#define DISTRIBUTE_PS_CLUSTER_COORDINATOR_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "devices/tensor.h"
#include "distribute/ps/parameter_server_strategy.h"
#include "distribute/ps/per_worker_dataset.h"
#include "distribute/server/remote_function_client.h"

namespace distribute {
namespace ps {

namespace ps_internal {
struct Closure;
}  // namespace ps_internal

// The outcome of a scheduled call (TF's RemoteValue). Copies share it.
class RemoteValue {
 public:
  // The function's outputs, or why it failed (its own error, unchanged;
  // CANCELLED when an earlier call's failure or the coordinator's end
  // cancelled it), waiting at most `timeout` for the call to end
  // (DEADLINE_EXCEEDED then: it goes on).
  absl::StatusOr<std::vector<devices::Tensor>> Fetch(
      absl::Duration timeout) const;
  // Fetch without a bound (TF's RemoteValue.get()).
  absl::StatusOr<std::vector<devices::Tensor>> Get() const {
    return Fetch(absl::InfiniteDuration());
  }
  // Whether it has ended, waiting at most `timeout`.
  bool WaitFor(absl::Duration timeout) const;

 private:
  friend class ClusterCoordinator;
  explicit RemoteValue(std::shared_ptr<ps_internal::Closure> closure)
      : closure_(std::move(closure)) {}
  std::shared_ptr<ps_internal::Closure> closure_;
};

struct ClusterCoordinatorOptions {
  // Bound on one call of a function on a worker; past it the call fails
  // with DEADLINE_EXCEEDED (it is not run again: the function may be slow
  // rather than its worker gone). None by default, as in TF: a long step
  // must not fail. A worker that dies is still found (its connection fails,
  // or gRPC keepalive closes it when the worker hangs: ChannelOptions'
  // keepalive), and its calls run on the others.
  absl::Duration call_timeout = absl::InfiniteDuration();
  // How long a worker that could not be reached rests before it is tried
  // again.
  absl::Duration worker_retry_interval = absl::Milliseconds(200);
};

class ClusterCoordinator {
 public:
  // One thread per worker of `strategy`, which must outlive the
  // coordinator.
  static absl::StatusOr<std::unique_ptr<ClusterCoordinator>> Create(
      ParameterServerStrategy& strategy,
      ClusterCoordinatorOptions options = {});

  ClusterCoordinator(const ClusterCoordinator&) = delete;
  ClusterCoordinator& operator=(const ClusterCoordinator&) = delete;
  // Cancels the calls still queued (their values say CANCELLED), waits for
  // those running to end, and stops the threads.
  ~ClusterCoordinator();

  // Queues a call of the workers' function `function` with `args` (host
  // tensors) and returns its value at once. When an earlier call failed
  // since the last Join, returns that error instead, once (TF raises it
  // from schedule).
  absl::StatusOr<RemoteValue> Schedule(absl::string_view function,
                                       std::vector<devices::Tensor> args);

  // TF's create_per_worker_dataset(dataset_fn) and iter() on it, by name:
  // an iterator over the worker dataset `dataset`, which every worker
  // registered with RegisterWorkerDataset (per_worker_dataset.h); pass its
  // handle() to the functions scheduled. Each worker makes its own pipeline
  // when a function first reads it there, and again after a restart. The
  // errors of PerWorkerIterator::Create.
  absl::StatusOr<PerWorkerIterator> CreatePerWorkerDataset(
      absl::string_view dataset) const {
    return PerWorkerIterator::Create(dataset);
  }

  // Waits until every scheduled call has ended; returns the first error of
  // a call since the last Join (once), else OK. DEADLINE_EXCEEDED when calls
  // are still running after `timeout` (they go on).
  absl::Status Join(absl::Duration timeout);

  // Whether every scheduled call has ended (never blocks). The error of a
  // failed call is kept for Join (TF's done() raises it).
  bool Done() const;

  // How many times a call went back to the queue because its worker could
  // not be reached.
  int64_t calls_rescheduled() const;

 private:
  ClusterCoordinator(ParameterServerStrategy& strategy,
                     ClusterCoordinatorOptions options);
  // Worker `w`'s loop: takes queued calls and runs them there.
  void WorkerLoop(int w);
  // Fails every queued call with `status`; mu_ held.
  void CancelQueued(const absl::Status& status)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  ParameterServerStrategy& strategy_;
  const ClusterCoordinatorOptions options_;
  RemoteFunctionClient client_;
  mutable absl::Mutex mu_;
  std::deque<std::shared_ptr<ps_internal::Closure>> queue_ ABSL_GUARDED_BY(mu_);
  int64_t running_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t rescheduled_ ABSL_GUARDED_BY(mu_) = 0;
  std::string last_worker_error_ ABSL_GUARDED_BY(mu_);
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace ps
}  // namespace distribute

#endif  // DISTRIBUTE_PS_CLUSTER_COORDINATOR_H_
