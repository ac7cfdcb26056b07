#include "distribute/ps/cluster_coordinator.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"

namespace distribute {
namespace ps {
namespace ps_internal {

// One scheduled call. `status` and `outputs` are written once, before
// `done` is notified.
struct Closure {
  std::string function;
  std::vector<devices::Tensor> args;
  absl::Notification done;
  absl::Status status;
  std::vector<devices::Tensor> outputs;

  void Finish(absl::Status s, std::vector<devices::Tensor> out = {}) {
    status = std::move(s);
    outputs = std::move(out);
    done.Notify();
  }
};

}  // namespace ps_internal

using ps_internal::Closure;

using ps_internal::kWorkerPrefix;

absl::StatusOr<std::vector<devices::Tensor>> RemoteValue::Fetch(
    absl::Duration timeout) const {
  if (!closure_->done.WaitForNotificationWithTimeout(timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("the call of \"", closure_->function,
                     "\" had not ended after ", absl::FormatDuration(timeout)));
  }
  RETURN_IF_ERROR(closure_->status);
  return closure_->outputs;
}

bool RemoteValue::WaitFor(absl::Duration timeout) const {
  return closure_->done.WaitForNotificationWithTimeout(timeout);
}

absl::StatusOr<std::unique_ptr<ClusterCoordinator>> ClusterCoordinator::Create(
    ParameterServerStrategy& strategy, ClusterCoordinatorOptions options) {
  if (strategy.in_process()) {
    return absl::FailedPreconditionError(
        "a ClusterCoordinator schedules on a cluster of servers; an "
        "in-process ParameterServerStrategy's calls run with RunOnWorkers "
        "(distribute/ps/in_process_ps.h)");
  }
  if (options.call_timeout <= absl::ZeroDuration() ||
      options.worker_retry_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "ClusterCoordinatorOptions' call_timeout and worker_retry_interval "
        "must be positive");
  }
  std::unique_ptr<ClusterCoordinator> coordinator(
      new ClusterCoordinator(strategy, options));
  for (int w = 0; w < strategy.num_workers(); ++w) {
    coordinator->threads_.emplace_back(
        [c = coordinator.get(), w] { c->WorkerLoop(w); });
  }
  return coordinator;
}

ClusterCoordinator::ClusterCoordinator(ParameterServerStrategy& strategy,
                                       ClusterCoordinatorOptions options)
    : strategy_(strategy),
      options_(options),
      client_(strategy.channel_options()) {}

ClusterCoordinator::~ClusterCoordinator() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    CancelQueued(absl::CancelledError(
        "the ClusterCoordinator was destroyed before this call ran"));
  }
  for (std::thread& t : threads_) t.join();
}

void ClusterCoordinator::CancelQueued(const absl::Status& status) {
  for (const std::shared_ptr<Closure>& c : queue_) c->Finish(status);
  queue_.clear();
}

absl::StatusOr<RemoteValue> ClusterCoordinator::Schedule(
    absl::string_view function, std::vector<devices::Tensor> args) {
  auto closure = std::make_shared<Closure>();
  closure->function = std::string(function);
  closure->args = std::move(args);
  absl::MutexLock lock(&mu_);
  if (!error_.ok()) {
    absl::Status earlier = std::move(error_);
    error_ = absl::OkStatus();
    return earlier;
  }
  queue_.push_back(closure);
  return RemoteValue(std::move(closure));
}

absl::Status ClusterCoordinator::Join(absl::Duration timeout) {
  absl::MutexLock lock(&mu_);
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return queue_.empty() && running_ == 0;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&idle), timeout)) {
    return absl::DeadlineExceededError(absl::StrCat(
        queue_.size(), " scheduled calls were still queued and ", running_,
        " running after ", absl::FormatDuration(timeout),
        " (they go on; Join again to wait longer)",
        rescheduled_ == 0
            ? std::string()
            : absl::StrCat("; calls went back to the queue ", rescheduled_,
                           " times because their worker failed, "
                           "last ",
                           last_worker_error_)));
  }
  absl::Status earlier = std::move(error_);
  error_ = absl::OkStatus();
  return earlier;
}

bool ClusterCoordinator::Done() const {
  absl::MutexLock lock(&mu_);
  return queue_.empty() && running_ == 0;
}

int64_t ClusterCoordinator::calls_rescheduled() const {
  absl::MutexLock lock(&mu_);
  return rescheduled_;
}

void ClusterCoordinator::WorkerLoop(int w) {
  const std::string& target =
      strategy_.worker_targets()[static_cast<size_t>(w)];
  while (true) {
    std::shared_ptr<Closure> closure;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || !queue_.empty();
      };
      mu_.Await(absl::Condition(&ready));
      if (stopping_) return;
      closure = queue_.front();
      queue_.pop_front();
      ++running_;
    }
    absl::StatusOr<std::vector<devices::Tensor>> reply =
        client_.Call(target, absl::StrCat(kWorkerPrefix, closure->function),
                     closure->args, options_.call_timeout);
    // The reply of a worker function is always OK (the function's own
    // error travels inside it), so these come from the worker or the
    // network: unreachable, or stopping under the call (a server that stops
    // cancels the calls it still runs), as TF's worker failures.
    const absl::StatusCode code = reply.status().code();
    if (code == absl::StatusCode::kUnavailable ||
        code == absl::StatusCode::kCancelled ||
        code == absl::StatusCode::kAborted) {
      // The call goes back to the front of the queue for another worker,
      // and this one rests.
      absl::MutexLock lock(&mu_);
      --running_;
      ++rescheduled_;
      last_worker_error_ =
          absl::StrCat("worker ", target, ": ", reply.status().ToString());
      if (stopping_ || !error_.ok()) {
        closure->Finish(absl::CancelledError(absl::StrCat(
            "cancelled after its worker failed, because ",
            stopping_ ? std::string("the ClusterCoordinator was destroyed")
                      : absl::StrCat("an earlier scheduled call failed: ",
                                     error_.ToString()))));
        if (stopping_) return;
        continue;
      }
      queue_.push_front(std::move(closure));
      auto stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&stopping),
                           options_.worker_retry_interval);
      continue;
    }
    absl::Status status = reply.status();
    std::vector<devices::Tensor> outputs;
    if (status.ok()) {
      if (reply->size() < 2 || reply->at(0).dtype() != devices::DType::kInt32 ||
          reply->at(0).num_elements() != 1) {
        status = absl::InternalError(absl::StrCat(
            "worker ", target, " answered function \"", closure->function,
            "\" malformed: is it registered with RegisterWorkerFunction?"));
      } else {
        const int32_t code = reply->at(0).data<int32_t>()[0];
        if (code != 0) {
          absl::StatusOr<std::string> message = TensorName(reply->at(1));
          status = absl::Status(code > 0 && code <= 16
                                    ? static_cast<absl::StatusCode>(code)
                                    : absl::StatusCode::kUnknown,
                                message.ok() ? *message : "");
        } else {
          outputs.assign(std::make_move_iterator(reply->begin() + 2),
                         std::make_move_iterator(reply->end()));
        }
      }
    }
    absl::MutexLock lock(&mu_);
    --running_;
    if (!status.ok()) {
      if (error_.ok()) error_ = status;
      CancelQueued(absl::CancelledError(
          absl::StrCat("cancelled because an earlier scheduled call failed: ",
                       status.ToString())));
    }
    closure->Finish(std::move(status), std::move(outputs));
  }
}

}  // namespace ps
}  // namespace distribute
