#include "distribute/ps/parameter_server_strategy.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/dtype.h"
#include "devices/shape.h"

namespace distribute {
namespace ps {

namespace {

using ps_internal::kWorkerPrefix;

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

}  // namespace ps
}  // namespace distribute
