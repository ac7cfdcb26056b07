#include "distribute/ps/parameter_server_strategy.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/dtype.h"
#include "devices/shape.h"

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

namespace {

// Worker functions are registered under this prefix: their wrapper always
// answers OK with {code, message, outputs...}, so that any failed call is
// the worker's (or the network's), never the function's.
constexpr char kWorkerPrefix[] = "__ps_worker.";

absl::StatusOr<std::vector<std::string>> Targets(
    const cluster::ClusterSpec& cluster, absl::string_view job) {
  if (!cluster.has_job(job)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ParameterServerStrategy needs a \"", job,
                     "\" job in its cluster "
                     "(it has ",
                     cluster.jobs().empty() ? "none" : "only other jobs",
                     "): give the cluster spec worker and ps tasks"));
  }
  absl::StatusOr<std::vector<int64_t>> indices = cluster.task_indices(job);
  if (!indices.ok()) return indices.status();
  std::vector<std::string> targets;
  for (int64_t i : *indices) {
    absl::StatusOr<std::string> address = cluster.task_address(job, i);
    if (!address.ok()) return address.status();
    targets.push_back(*std::move(address));
  }
  if (targets.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the \"", job, "\" job has no tasks"));
  }
  return targets;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ParameterServerStrategy>>
ParameterServerStrategy::Create(const cluster::ClusterSpec& cluster,
                                ParameterServerStrategyOptions options) {
  absl::StatusOr<std::vector<std::string>> workers = Targets(cluster, "worker");
  if (!workers.ok()) return workers.status();
  absl::StatusOr<std::vector<std::string>> ps = Targets(cluster, "ps");
  if (!ps.ok()) return ps.status();
  if (options.ps_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "ParameterServerStrategyOptions.ps_timeout must be positive");
  }
  return std::unique_ptr<ParameterServerStrategy>(new ParameterServerStrategy(
      *std::move(workers), *std::move(ps), std::move(options)));
}

ParameterServerStrategy::ParameterServerStrategy(
    std::vector<std::string> workers, std::vector<std::string> ps,
    ParameterServerStrategyOptions options)
    : workers_(std::move(workers)),
      ps_(std::move(ps)),
      options_(std::move(options)),
      client_(std::make_unique<PsClient>(ps_, options_.channel,
                                         options_.ps_timeout)) {}

absl::StatusOr<Variable> ParameterServerStrategy::CreateVariable(
    absl::string_view name, const devices::Tensor& initial) {
  if (name.empty()) {
    return absl::InvalidArgumentError("a variable needs a non-empty name");
  }
  if (initial.num_elements() > 0 &&
      (!initial.has_data() || !initial.host_accessible())) {
    return absl::InvalidArgumentError(
        absl::StrCat("the initial value of variable \"", name,
                     "\" is not in host memory: copy it to the host first"));
  }
  // One creation at a time, so that two threads creating one name cannot
  // both pass the check below and place it twice.
  absl::MutexLock lock(&mu_);
  absl::StatusOr<std::vector<ShardInfo>> existing = client_->Lookup(name);
  if (existing.ok()) {
    return absl::AlreadyExistsError(absl::StrCat(
        "a variable \"", name, "\" exists on the ps tasks already"));
  }
  // NOT_FOUND: new. FAILED_PRECONDITION: an earlier creation stopped part
  // way; creating it again completes it (a ps task takes an identical shard
  // again).
  if (!absl::IsNotFound(existing.status()) &&
      !absl::IsFailedPrecondition(existing.status())) {
    return existing.status();
  }

  const devices::Shape& shape = initial.shape();
  std::vector<VariableShard> pieces = {VariableShard{shape, 0}};
  if (options_.variable_partitioner != nullptr && shape.rank() >= 1) {
    absl::StatusOr<std::vector<int64_t>> parts =
        (*options_.variable_partitioner)(shape, initial.dtype(), 0);
    if (!parts.ok()) return parts.status();
    for (size_t i = 1; i < parts->size(); ++i) {
      if ((*parts)[i] != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the variable partitioner splits variable \"", name,
            "\" along axis ", i,
            ": ParameterServerStrategy shards along the first axis only (as "
            "TF)"));
      }
    }
    absl::StatusOr<std::vector<VariableShard>> split =
        ShardVariableShape(shape, *parts);
    if (!split.ok()) return split.status();
    pieces = *std::move(split);
  }
  // Placement continues the round-robin, and is kept only once every shard
  // is created: a creation that failed part way gets the same places when
  // it is tried again.
  Variable variable{std::string(name), initial.dtype(), shape, {}};
  int ps = next_ps_;
  for (size_t k = 0; k < pieces.size(); ++k) {
    variable.shards.push_back(ShardInfo{
        ps, static_cast<int64_t>(k), static_cast<int64_t>(pieces.size()),
        pieces[k].offset, shape.rank() == 0 ? 1 : pieces[k].shape.dim(0)});
    ps = (ps + 1) % num_ps();
  }
  for (size_t k = 0; k < pieces.size(); ++k) {
    devices::Tensor piece = initial;
    if (pieces.size() > 1) {
      absl::StatusOr<devices::Tensor> rows =
          RowsOf(initial, pieces[k].offset, pieces[k].shape.dim(0));
      if (!rows.ok()) return rows.status();
      piece = *std::move(rows);
    }
    absl::Status created =
        client_->CreateShard(name, variable.shards[k], piece);
    if (!created.ok()) {
      return absl::Status(
          created.code(),
          absl::StrCat("creating shard ", k, " of ", pieces.size(),
                       " of variable \"", name,
                       "\" failed (create it again to complete it): ",
                       created.message()));
    }
  }
  next_ps_ = ps;
  return variable;
}

absl::Status RegisterWorkerFunction(Server& server, absl::string_view name,
                                    WorkerFunction fn,
                                    absl::Duration ps_timeout) {
  if (name.empty() || !fn) {
    return absl::InvalidArgumentError(
        "a worker function needs a non-empty name and a function");
  }
  absl::StatusOr<std::vector<std::string>> ps =
      Targets(server.cluster_spec(), "ps");
  if (!ps.ok()) return ps.status();
  auto client = std::make_shared<PsClient>(
      *std::move(ps), server.channel_options(), ps_timeout);
  return server.function_registry().Register(
      absl::StrCat(kWorkerPrefix, name),
      [client, fn = std::move(fn)](std::vector<devices::Tensor> args)
          -> absl::StatusOr<std::vector<devices::Tensor>> {
        absl::StatusOr<std::vector<devices::Tensor>> out =
            fn(*client, std::move(args));
        std::vector<devices::Tensor> reply;
        reply.push_back(*devices::Tensor::FromVector<int32_t>(
            {static_cast<int32_t>(out.status().code())}, devices::Shape()));
        reply.push_back(NameTensor(out.status().message()));
        if (out.ok()) {
          for (devices::Tensor& t : *out) reply.push_back(std::move(t));
        }
        return reply;
      });
}

absl::StatusOr<std::vector<devices::Tensor>> RemoteValue::Fetch(
    absl::Duration timeout) const {
  if (!closure_->done.WaitForNotificationWithTimeout(timeout)) {
    return absl::DeadlineExceededError(
        absl::StrCat("the call of \"", closure_->function,
                     "\" had not ended after ", absl::FormatDuration(timeout)));
  }
  if (!closure_->status.ok()) return closure_->status;
  return closure_->outputs;
}

bool RemoteValue::WaitFor(absl::Duration timeout) const {
  return closure_->done.WaitForNotificationWithTimeout(timeout);
}

absl::StatusOr<std::unique_ptr<ClusterCoordinator>> ClusterCoordinator::Create(
    ParameterServerStrategy& strategy, ClusterCoordinatorOptions options) {
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
