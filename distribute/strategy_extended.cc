// StrategyExtended: placement, reductions, broadcasts, updates, variables.
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/device.h"
#include "devices/elementwise_kernels.h"
#include "devices/platform.h"
#include "devices/status_macros.h"
#include "distribute/strategy.h"

namespace distribute {

StrategyExtended::StrategyExtended(
    devices::Platform* platform, std::vector<std::string> worker_devices,
    std::optional<std::string> parameter_device,
    std::shared_ptr<CrossDeviceOps> cross_device_ops)
    : platform_(platform),
      worker_devices_(std::move(worker_devices)),
      parameter_device_(std::move(parameter_device)),
      cross_device_ops_(std::move(cross_device_ops)) {}

int StrategyExtended::NumReplicasInSync() const {
  return num_workers_ * static_cast<int>(worker_devices_.size());
}

absl::Status StrategyExtended::SetWorkers(int num_workers, int worker_index) {
  if (num_workers < 1 || worker_index < 0 || worker_index >= num_workers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker index ", worker_index, " of ", num_workers,
        " workers: need num_workers >= 1 and 0 <= worker_index < num_workers"));
  }
  num_workers_ = num_workers;
  worker_index_ = worker_index;
  replica_id_offset_ = worker_index * static_cast<int>(worker_devices_.size());
  return absl::OkStatus();
}

std::vector<std::string> StrategyExtended::ParameterDevices() const {
  if (parameter_device_.has_value()) return {*parameter_device_};
  return worker_devices_;
}

absl::StatusOr<devices::Tensor> StrategyExtended::CopyToDevice(
    const devices::Tensor& t, const std::string& device_name) const {
  ASSIGN_OR_RETURN(devices::Device * device,
                   platform_->FindDevice(device_name));
  return devices::CopyTensorTo(*platform_, t, *device);
}

absl::StatusOr<Mirrored> StrategyExtended::ReduceTo(
    ReduceOp op, const DistributedValues& value,
    const Destinations& destinations, const CommunicationOptions& options) {
  ASSIGN_OR_RETURN(auto r, BatchReduceTo(op, {{value, destinations}}, options));
  return std::move(r[0]);
}

absl::StatusOr<std::vector<Mirrored>> StrategyExtended::BatchReduceTo(
    ReduceOp op,
    const std::vector<std::pair<DistributedValues, Destinations>>& values,
    const CommunicationOptions& options) {
  if (!InCrossReplicaContext() && HasStrategy()) {
    return absl::FailedPreconditionError(
        "Method requires being in cross-replica context, use "
        "get_replica_context().merge_call()");
  }
  std::vector<std::pair<PerReplica, Destinations>> batch;
  for (const auto& [value, dest] : values) {
    batch.emplace_back(PerReplica(value.values()),
                       dest.empty() ? worker_devices_ : dest);
  }
  if (NumReplicasInSync() == 1) {
    // One replica: the reduction is the value itself, placed as asked.
    std::vector<Mirrored> out;
    for (const auto& [value, dest] : batch) {
      if (value.num_replicas() != 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "a value of ", value.num_replicas(),
            " components cannot be reduced by a one-replica strategy"));
      }
      std::vector<devices::Tensor> placed;
      for (const std::string& d : dest) {
        ASSIGN_OR_RETURN(devices::Device * device, platform_->FindDevice(d));
        if (device->name() == value.value(0).device()) {
          placed.push_back(value.value(0));
          continue;
        }
        ASSIGN_OR_RETURN(devices::Tensor copy, CopyToDevice(value.value(0), d));
        placed.push_back(std::move(copy));
      }
      out.emplace_back(std::move(placed));
    }
    return out;
  }
  return cross_device_ops_->BatchReduce(op, batch, options);
}

absl::StatusOr<Mirrored> StrategyExtended::BroadcastTo(
    const devices::Tensor& tensor, const Destinations& destinations) {
  std::vector<devices::Tensor> out;
  for (const std::string& d :
       destinations.empty() ? worker_devices_ : destinations) {
    ASSIGN_OR_RETURN(devices::Tensor copy, CopyToDevice(tensor, d));
    out.push_back(std::move(copy));
  }
  return Mirrored(std::move(out));
}

namespace {

// After an update function wrote `component` of `var`: the dtype and shape
// are still the variable's.
absl::Status CheckUpdated(const Variable& var,
                          const devices::Tensor& component) {
  if (component.dtype() != var.dtype() || !(component.shape() == var.shape())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the update function of variable '", var.name(), "' replaced its ",
        devices::DTypeName(var.dtype()), var.shape().DebugString(),
        " value with ", component.DebugString(),
        "; a variable keeps the dtype and shape it was created with: "
        "write into the tensor it is given"));
  }
  return absl::OkStatus();
}

}  // namespace

std::shared_ptr<Variable> StrategyExtended::NewRemoteVariable(
    Strategy* owner, VariableOptions options, devices::DType dtype,
    devices::Shape shape, std::shared_ptr<RemoteVariableStorage> storage) {
  return std::shared_ptr<Variable>(new Variable(
      owner, std::move(options), dtype, std::move(shape), std::move(storage)));
}

absl::Status StrategyExtended::UpdateRemote(Variable& var, const UpdateFn& fn,
                                            std::vector<devices::Tensor> args,
                                            devices::Device* at) {
  ASSIGN_OR_RETURN(devices::Tensor read, var.ReadRemote(at));
  ASSIGN_OR_RETURN(devices::Tensor before,
                   devices::ToHostTensor(*platform_, read));
  // fn writes a copy of its own; `before` stays what was read.
  ASSIGN_OR_RETURN(devices::Tensor value,
                   devices::Tensor::Host(before.dtype(), before.shape()));
  if (before.bytes() > 0) {
    std::memcpy(value.raw_data(), before.raw_data(), before.bytes());
  }
  RETURN_IF_ERROR(fn(value, args));
  RETURN_IF_ERROR(CheckUpdated(var, value));
  if (var.dtype() == devices::DType::kBool) {
    return var.remote_->Update(RemoteVariableStorage::UpdateKind::kAssign,
                               value, at);
  }
  ASSIGN_OR_RETURN(devices::Tensor delta,
                   devices::Tensor::Host(var.dtype(), var.shape()));
  ASSIGN_OR_RETURN(auto cost, devices::Sub(value, before, delta));
  return var.remote_->Update(RemoteVariableStorage::UpdateKind::kAdd, delta,
                             at);
}

absl::Status StrategyExtended::Update(Variable& var, const UpdateFn& fn,
                                      const std::vector<RunArg>& args) {
  ReplicaContext* replica = GetReplicaContext();
  const bool in_replica =
      InCrossReplicaContext() == false && HasStrategy() && replica != nullptr;
  auto resolve = [&](int component) {
    std::vector<devices::Tensor> out;
    for (const RunArg& a : args) {
      if (const auto* t = std::get_if<devices::Tensor>(&a)) {
        out.push_back(*t);
      } else {
        const DistributedValues& d = std::get<DistributedValues>(a);
        out.push_back(d.value(std::min(component, d.num_replicas() - 1)));
      }
    }
    return out;
  };
  const bool remote = var.kind() == Variable::Kind::kRemote;
  // fn writes the component: values read from it earlier keep theirs.
  auto write = [&](int c) {
    if (remote) {
      return UpdateRemote(var, fn, resolve(0),
                          in_replica ? &replica->device() : nullptr);
    }
    RETURN_IF_ERROR(var.CopyOnWrite(var.components_[c]));
    devices::Tensor& component = var.components_[c];
    RETURN_IF_ERROR(fn(component, resolve(c)));
    return CheckUpdated(var, component);
  };
  if (!in_replica) {
    if (remote) return write(0);
    for (size_t c = 0; c < var.components_.size(); ++c) {
      RETURN_IF_ERROR(write(static_cast<int>(c)));
    }
    return absl::OkStatus();
  }
  const int r = replica->LocalReplicaId();
  if (var.components_.size() == 1 || remote) {
    // A central (or one-device, or remote) variable: replica 0 updates it,
    // and every replica waits for the update before reading it again.
    absl::Status s;
    if (r == 0) s = write(0);
    if (replica->NumReplicasInSync() > 1) {
      ASSIGN_OR_RETURN(
          devices::Tensor flag,
          devices::Tensor::Host(devices::DType::kInt32, devices::Shape({1})));
      flag.data<int32_t>()[0] = s.ok() ? 0 : 1;
      ASSIGN_OR_RETURN(auto failed, replica->AllReduce(ReduceOp::kSum, {flag}));
      // A timing-only simulation carries no values: each replica goes by
      // its own word.
      if (s.ok() && failed[0].has_data() && failed[0].data<int32_t>()[0] != 0) {
        return absl::AbortedError("the update of replica 0 failed");
      }
    }
    return s;
  }
  return write(r);
}

StrategyExtended::ColocationGuard::~ColocationGuard() {
  if (owner_ != nullptr) owner_->colocate_with_ = std::move(previous_);
}

StrategyExtended::ColocationGuard::ColocationGuard(
    ColocationGuard&& other) noexcept
    : owner_(other.owner_), previous_(std::move(other.previous_)) {
  other.owner_ = nullptr;
}

absl::StatusOr<StrategyExtended::ColocationGuard>
StrategyExtended::ColocateVarsWith(const Variable& var) {
  if (!VariableCreatedInScope(var)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "`colocate_vars_with` must only be passed a variable created in this "
        "tf.distribute.Strategy.scope(), not variable '",
        var.name(), "' of ", var.strategy().name()));
  }
  ColocationGuard guard(this, colocate_with_);
  colocate_with_ = var.devices();
  return guard;
}

bool StrategyExtended::VariableCreatedInScope(const Variable& var) const {
  return &var.strategy().extended() == this;
}

absl::StatusOr<std::shared_ptr<Variable>> StrategyExtended::CreateVariable(
    Strategy* owner, const devices::Tensor& initial_value,
    VariableOptions options) {
  if (options.synchronization == VariableSynchronization::kAuto) {
    options.synchronization = VariableSynchronization::kOnWrite;
  }
  const bool many = NumReplicasInSync() > 1;
  if (options.synchronization == VariableSynchronization::kNone && many) {
    return absl::InvalidArgumentError(absl::StrCat(
        "`NONE` variable synchronization mode is not supported with "
        "tf.distribute strategy. Please change the `synchronization` for "
        "variable: ",
        options.name));
  }
  std::vector<std::string> placement =
      colocate_with_.has_value() ? *colocate_with_ : ParameterDevices();
  Variable::Kind kind = Variable::Kind::kPlain;
  if (options.synchronization == VariableSynchronization::kOnRead && many &&
      !parameter_device_.has_value()) {
    // Sync-on-read variables live on every replica. Under CentralStorage
    // they are central like the others (TF wraps every variable of its
    // CentralStorageStrategy in an AggregatingVariable on the parameter
    // device: replica updates are combined by the aggregation and applied
    // once; reads give the one value).
    kind = Variable::Kind::kSyncOnRead;
    placement = worker_devices_;
  } else if (placement.size() > 1) {
    kind = Variable::Kind::kMirrored;
  }
  std::vector<devices::Tensor> components;
  for (const std::string& d : placement) {
    ASSIGN_OR_RETURN(devices::Tensor copy, CopyToDevice(initial_value, d));
    components.push_back(std::move(copy));
  }
  if (num_workers_ > 1) {
    // Every worker starts from the chief's value (global replica 0).
    if (components.size() != worker_devices_.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "variable '", options.name, "' would live on ", components.size(),
          " device(s), but a multi-worker variable needs one component per "
          "local replica (",
          worker_devices_.size(), ")"));
    }
    RETURN_IF_ERROR(cross_device_ops_->BroadcastFromRank(0, components));
  }
  if (components.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("variable '", options.name, "' would live on no device"));
  }
  return std::shared_ptr<Variable>(
      new Variable(kind, owner, std::move(options), std::move(components)));
}

}  // namespace distribute
