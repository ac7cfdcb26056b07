#include "distribute/ps/parameter_server_strategy.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "devices/dtype.h"
#include "devices/host_platform.h"
#include "devices/platform.h"
#include "devices/shape.h"
#include "devices/status_macros.h"
#include "distribute/cross_device_ops.h"
#include "distribute/ps/in_process_ps.h"
#include "distribute/strategy_devices.h"
#include "distribute/variables.h"

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
  ASSIGN_OR_RETURN(std::vector<int64_t> indices, cluster.task_indices(job));
  std::vector<std::string> targets;
  for (int64_t i : indices) {
    ASSIGN_OR_RETURN(std::string address, cluster.task_address(job, i));
    targets.push_back(std::move(address));
  }
  if (targets.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the \"", job, "\" job has no tasks"));
  }
  return targets;
}

// The name of ps task `ps` as a variable's location.
std::string PsTaskName(int ps) {
  return absl::StrCat("/job:ps/replica:0/task:", ps);
}

// A kRemote variable's value, kept on the ps tasks.
class PsVariableStorage : public RemoteVariableStorage {
 public:
  PsVariableStorage(devices::Platform* platform,
                    std::shared_ptr<PsClient> client, std::string name,
                    std::vector<std::string> locations)
      : platform_(platform),
        client_(std::move(client)),
        name_(std::move(name)),
        locations_(std::move(locations)) {}

  absl::StatusOr<devices::Tensor> Read(devices::Device*) override {
    return client_->Read(name_);
  }
  absl::Status Update(UpdateKind kind, const devices::Tensor& value,
                      devices::Device*) override {
    ASSIGN_OR_RETURN(devices::Tensor host,
                     devices::ToHostTensor(*platform_, value));
    switch (kind) {
      case UpdateKind::kAssign:
        return client_->Assign(name_, host);
      case UpdateKind::kAdd:
        return client_->AssignAdd(name_, host);
      case UpdateKind::kSub:
        return client_->AssignSub(name_, host);
    }
    return absl::InternalError("unknown update kind");
  }
  std::vector<std::string> Locations() const override { return locations_; }
  // Only the shards that hold the rows are asked, for just those rows.
  absl::StatusOr<devices::Tensor> Gather(const devices::Tensor& ids,
                                         devices::Device*) override {
    return client_->Gather(name_, ids);
  }

 private:
  devices::Platform* const platform_;
  const std::shared_ptr<PsClient> client_;
  const std::string name_;
  const std::vector<std::string> locations_;
};

}  // namespace

// Variables made in the scope go to the ps tasks (coordinator) or are bound
// to them (worker).
class ParameterServerStrategyExtended : public StrategyExtended {
 public:
  using StrategyExtended::StrategyExtended;

 protected:
  absl::StatusOr<std::shared_ptr<distribute::Variable>> CreateVariable(
      Strategy* owner, const devices::Tensor& initial_value,
      VariableOptions options) override {
    auto& strategy = static_cast<ParameterServerStrategy&>(*owner);
    // ON_READ variables are kept on the ps tasks too (TF wraps every
    // variable of the strategy in an AggregatingVariable): replica updates
    // combine by the aggregation, reads give the one value.
    //
    // A ColocateVarsWith guard names the ps task of another variable.
    std::optional<int> first;
    if (colocation().has_value() && !colocation()->empty()) {
      const std::string& where = colocation()->front();
      for (int i = 0; i < strategy.num_ps() && !first.has_value(); ++i) {
        if (where == strategy.PsLocation(i)) first = i;
      }
      if (!first.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "variable '", options.name, "' is to be colocated with ", where,
            ", which is not a ps task of this strategy"));
      }
    }
    ASSIGN_OR_RETURN(devices::Tensor host,
                     devices::ToHostTensor(platform(), initial_value));
    // An unnamed variable takes the next default name; a creation that
    // fails gives it back, so that a retry makes the same name.
    std::optional<int> unnamed;
    if (options.name.empty()) {
      absl::MutexLock lock(&strategy.mu_);
      unnamed = strategy.unnamed_++;
      options.name = *unnamed == 0 ? std::string("Variable")
                                   : absl::StrCat("Variable_", *unnamed);
    }
    absl::StatusOr<Variable> layout =
        strategy.MakeOrBind(options.name, host, first);
    if (!layout.ok()) {
      absl::MutexLock lock(&strategy.mu_);
      if (unnamed.has_value() && strategy.unnamed_ == *unnamed + 1) {
        strategy.unnamed_ = *unnamed;
      }
      return layout.status();
    }
    std::vector<std::string> locations;
    for (const ShardInfo& shard : layout->shards) {
      locations.push_back(strategy.PsLocation(shard.ps));
    }
    std::shared_ptr<RemoteVariableStorage> storage;
    if (strategy.in_process()) {
      storage =
          strategy.in_process_->Storage(layout->name, std::move(locations));
    } else {
      storage = std::make_shared<PsVariableStorage>(
          &platform(), strategy.client_, layout->name, std::move(locations));
    }
    return NewRemoteVariable(owner, std::move(options), host.dtype(),
                             host.shape(), std::move(storage));
  }
};

absl::StatusOr<std::unique_ptr<ParameterServerStrategy>>
ParameterServerStrategy::Create(const cluster::ClusterSpec& cluster,
                                ParameterServerStrategyOptions options) {
  ASSIGN_OR_RETURN(std::vector<std::string> workers,
                   Targets(cluster, "worker"));
  ASSIGN_OR_RETURN(std::vector<std::string> ps, Targets(cluster, "ps"));
  return Make(std::move(workers), std::move(ps), std::move(options),
              /*coordinator=*/true, nullptr);
}

absl::StatusOr<std::unique_ptr<ParameterServerStrategy>>
ParameterServerStrategy::CreateForWorker(
    const Server& server, ParameterServerStrategyOptions options) {
  ASSIGN_OR_RETURN(std::vector<std::string> workers,
                   Targets(server.cluster_spec(), "worker"));
  ASSIGN_OR_RETURN(std::vector<std::string> ps,
                   Targets(server.cluster_spec(), "ps"));
  options.channel = server.channel_options();
  return Make(std::move(workers), std::move(ps), std::move(options),
              /*coordinator=*/false, nullptr);
}

absl::StatusOr<std::unique_ptr<ParameterServerStrategy>>
ParameterServerStrategy::CreateInProcess(
    std::shared_ptr<InProcessParameterServers> servers, bool coordinator,
    ParameterServerStrategyOptions options) {
  if (servers == nullptr) {
    return absl::InvalidArgumentError(
        "CreateInProcess needs the in-process parameter servers");
  }
  if (options.devices.empty()) {
    return absl::InvalidArgumentError(
        "an in-process ParameterServerStrategy needs the devices of its "
        "replicas (ParameterServerStrategyOptions.devices): the task's own "
        "devices of the shared platform");
  }
  if (options.platform == nullptr) options.platform = &servers->platform();
  std::vector<std::string> ps = servers->ps_devices();
  return Make({}, std::move(ps), std::move(options), coordinator,
              std::move(servers));
}

absl::StatusOr<std::unique_ptr<ParameterServerStrategy>>
ParameterServerStrategy::Make(
    std::vector<std::string> workers, std::vector<std::string> ps,
    ParameterServerStrategyOptions options, bool coordinator,
    std::shared_ptr<InProcessParameterServers> in_process) {
  if (options.ps_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "ParameterServerStrategyOptions.ps_timeout must be positive");
  }
  // The devices of Run.
  std::unique_ptr<devices::Platform> owned;
  devices::Platform* platform = options.platform;
  if (platform == nullptr) {
    devices::HostPlatformOptions host;
    ASSIGN_OR_RETURN(std::unique_ptr<devices::HostPlatform> made,
                     devices::HostPlatform::Create(host));
    owned = std::move(made);
    platform = owned.get();
  }
  std::vector<std::string> wanted = options.devices;
  if (wanted.empty()) wanted = platform->DeviceNames();
  ASSIGN_OR_RETURN(std::vector<std::string> resolved,
                   ResolveDevices(*platform, wanted));
  // TF's strategy reduces its replicas on the local CPU.
  std::shared_ptr<CrossDeviceOps> ops = std::make_shared<ReductionToOneDevice>(
      resolved.size() == 1 ? std::string()
                           : LocalCpu(*platform, resolved[0]).value_or(""));
  RETURN_IF_ERROR(ops->Bind(*platform, resolved));
  auto extended = std::make_unique<ParameterServerStrategyExtended>(
      platform, resolved, std::nullopt, std::move(ops));
  return std::unique_ptr<ParameterServerStrategy>(new ParameterServerStrategy(
      std::move(owned), std::move(extended), coordinator, std::move(workers),
      std::move(ps), std::move(options), std::move(in_process)));
}

ParameterServerStrategy::ParameterServerStrategy(
    std::unique_ptr<devices::Platform> owned_platform,
    std::unique_ptr<StrategyExtended> extended, bool coordinator,
    std::vector<std::string> workers, std::vector<std::string> ps,
    ParameterServerStrategyOptions options,
    std::shared_ptr<InProcessParameterServers> in_process)
    : ps_internal::OwnedPlatform{std::move(owned_platform)},
      Strategy(std::move(extended)),
      coordinator_(coordinator),
      workers_(std::move(workers)),
      ps_(std::move(ps)),
      options_(std::move(options)),
      client_(std::make_shared<PsClient>(ps_, options_.channel,
                                         options_.ps_timeout)),
      in_process_(std::move(in_process)) {}

std::string ParameterServerStrategy::PsLocation(int ps) const {
  return in_process() ? ps_[static_cast<size_t>(ps)] : PsTaskName(ps);
}

absl::StatusOr<Variable> ParameterServerStrategy::MakeOrBind(
    const std::string& name, const devices::Tensor& initial,
    std::optional<int> first) {
  const devices::Shape& shape = initial.shape();
  auto place = [&]() -> absl::StatusOr<Variable> {
    absl::MutexLock lock(&mu_);
    return Place(name, initial.dtype(), shape, first);
  };
  absl::StatusOr<Variable> made;
  if (!coordinator_) return place();  // a worker binds by name
  // The coordinator makes it, or binds to the one the ps tasks hold already
  // (a restarted coordinator rebuilding its model) when it has as many
  // rows; either way the round-robin moves on as the workers' does.
  if (in_process()) {
    ASSIGN_OR_RETURN(Variable placed, place());
    absl::Status s = in_process_->CreateVariable(placed, initial);
    made = s.ok() ? absl::StatusOr<Variable>(std::move(placed))
           : absl::IsAlreadyExists(s) ? in_process_->Layout(name)
                                      : absl::StatusOr<Variable>(s);
  } else {
    made = CreateOnPs(name, initial, first);
    if (absl::IsAlreadyExists(made.status())) {
      ASSIGN_OR_RETURN(std::vector<ShardInfo> shards, client_->Lookup(name));
      ASSIGN_OR_RETURN(Variable placed, place());
      made = Variable{name, initial.dtype(), shape, std::move(shards)};
    }
  }
  RETURN_IF_ERROR(made.status());
  int64_t rows = 0;
  for (const ShardInfo& s : made->shards) rows += s.rows;
  const int64_t want = shape.rank() == 0 ? 1 : shape.dim(0);
  if (rows != want) {
    return absl::AlreadyExistsError(absl::StrCat(
        "a variable \"", name, "\" of ", rows,
        " rows exists on the ps tasks already; this one has ", want));
  }
  return made;
}

absl::StatusOr<Variable> ParameterServerStrategy::Place(
    absl::string_view name, devices::DType dtype, const devices::Shape& shape,
    std::optional<int> first) {
  if (first.has_value() && (*first < 0 || *first >= num_ps())) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable \"", name, "\" is to be placed on ps task ",
                     *first, " of ", num_ps()));
  }
  std::vector<VariableShard> pieces = {VariableShard{shape, 0}};
  // A variable colocated with another is whole (TF shards only variables
  // it places itself).
  if (options_.variable_partitioner != nullptr && shape.rank() >= 1 &&
      !first.has_value()) {
    ASSIGN_OR_RETURN(std::vector<int64_t> parts,
                     (*options_.variable_partitioner)(shape, dtype, 0));
    for (size_t i = 1; i < parts.size(); ++i) {
      if (parts[i] != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "the variable partitioner splits variable \"", name,
            "\" along axis ", i,
            ": ParameterServerStrategy shards along the first axis only (as "
            "TF)"));
      }
    }
    ASSIGN_OR_RETURN(std::vector<VariableShard> split,
                     ShardVariableShape(shape, parts));
    pieces = std::move(split);
  }
  Variable variable{std::string(name), dtype, shape, {}};
  int ps = first.value_or(next_ps_);
  for (size_t k = 0; k < pieces.size(); ++k) {
    variable.shards.push_back(ShardInfo{
        ps, static_cast<int64_t>(k), static_cast<int64_t>(pieces.size()),
        pieces[k].offset, shape.rank() == 0 ? 1 : pieces[k].shape.dim(0)});
    if (!first.has_value()) ps = (ps + 1) % num_ps();
  }
  if (!first.has_value()) next_ps_ = ps;
  return variable;
}

absl::StatusOr<Variable> ParameterServerStrategy::CreateVariable(
    absl::string_view name, const devices::Tensor& initial) {
  return CreateOnPs(name, initial, std::nullopt);
}

absl::StatusOr<Variable> ParameterServerStrategy::CreateOnPs(
    absl::string_view name, const devices::Tensor& initial,
    std::optional<int> first) {
  if (in_process()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "variable \"", name,
        "\": an in-process ParameterServerStrategy makes variables when they "
        "are created in its scope"));
  }
  if (!coordinator_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "variable \"", name,
        "\" can only be made on the ps tasks by the coordinator's strategy; "
        "a worker's strategy binds to it when created in its scope"));
  }
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
  // Placement continues the round-robin, and is kept only once every shard
  // is created: a creation that failed part way gets the same places when
  // it is tried again.
  const int next = next_ps_;
  ASSIGN_OR_RETURN(Variable placed,
                   Place(name, initial.dtype(), initial.shape(), first));
  Variable variable = std::move(placed);
  const size_t pieces = variable.shards.size();
  for (size_t k = 0; k < pieces; ++k) {
    devices::Tensor piece = initial;
    if (pieces > 1) {
      absl::StatusOr<devices::Tensor> rows =
          RowsOf(initial, variable.shards[k].offset, variable.shards[k].rows);
      if (!rows.ok()) {
        next_ps_ = next;
        return rows.status();
      }
      piece = *std::move(rows);
    }
    absl::Status created =
        client_->CreateShard(name, variable.shards[k], piece);
    if (!created.ok()) {
      next_ps_ = next;
      return absl::Status(
          created.code(),
          absl::StrCat("creating shard ", k, " of ", pieces, " of variable \"",
                       name, "\" failed (create it again to complete it): ",
                       created.message()));
    }
  }
  return variable;
}

absl::Status RegisterWorkerFunction(Server& server, absl::string_view name,
                                    WorkerFunction fn,
                                    absl::Duration ps_timeout) {
  if (name.empty() || !fn) {
    return absl::InvalidArgumentError(
        "a worker function needs a non-empty name and a function");
  }
  ASSIGN_OR_RETURN(std::vector<std::string> ps,
                   Targets(server.cluster_spec(), "ps"));
  auto client = std::make_shared<PsClient>(
      std::move(ps), server.channel_options(), ps_timeout);
  auto one_at_a_time = std::make_shared<absl::Mutex>();
  return server.function_registry().Register(
      absl::StrCat(kWorkerPrefix, name),
      [client, one_at_a_time,
       fn = std::move(fn)](std::vector<devices::Tensor> args)
          -> absl::StatusOr<std::vector<devices::Tensor>> {
        absl::StatusOr<std::vector<devices::Tensor>> out;
        {
          absl::MutexLock lock(one_at_a_time.get());
          out = fn(*client, std::move(args));
        }
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
