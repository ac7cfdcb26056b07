#include "distribute/variables.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "devices/device.h"
#include "devices/elementwise_kernels.h"
#include "devices/kernel_library.h"
#include "devices/platform.h"
#include "devices/reduce_kernels.h"
#include "devices/status_macros.h"
#include "distribute/context.h"
#include "distribute/strategy.h"

namespace distribute {
namespace {

absl::Status CheckCompatible(const Variable& var,
                             const devices::Tensor& value) {
  if (value.dtype() != var.dtype() || !(value.shape() == var.shape())) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot update variable '", var.name(), "' of ",
                     devices::DTypeName(var.dtype()), var.shape().DebugString(),
                     " with ", value.DebugString()));
  }
  return absl::OkStatus();
}

// dst (op)= src, where op is 0 (assign), 1 (add) or 2 (subtract). Host
// buffers are updated in place on the host; otherwise src is copied to dst's
// device and dst's kernels do the update there.
absl::Status Apply(const StrategyExtended& extended, devices::Tensor& dst,
                   const devices::Tensor& src, int kind) {
  if (!dst.has_data() || !src.has_data()) return absl::OkStatus();
  if (!dst.host_accessible() || !src.host_accessible()) {
    if (kind == 0) return devices::CopyTensor(extended.platform(), src, dst);
    ASSIGN_OR_RETURN(devices::Device * device,
                     extended.platform().FindDevice(dst.device()));
    // src where dst's kernels can read it.
    ASSIGN_OR_RETURN(devices::Tensor local,
                     devices::ReadableOn(extended.platform(), src, *device));
    const devices::KernelLibrary& kernels = device->kernels();
    if (kind == 1) {
      return kernels.Accumulate(devices::ReduceOp::kSum, local, dst).status();
    }
    // a - b is a + (-b) exactly, as the host path computes it.
    return kernels.Binary(devices::BinaryOp::kSub, dst, local, dst).status();
  }
  if (kind == 0) {
    std::memcpy(dst.raw_data(), src.raw_data(), dst.bytes());
    return absl::OkStatus();
  }
  if (kind == 1) {
    return devices::Accumulate(devices::ReduceOp::kSum, src.raw_data(),
                               dst.raw_data(), dst.num_elements(), dst.dtype())
        .status();
  }
  // dst -= src: negate into a scratch copy, then add.
  ASSIGN_OR_RETURN(devices::Tensor neg,
                   devices::Tensor::Host(src.dtype(), src.shape()));
  ASSIGN_OR_RETURN(devices::Tensor zero,
                   devices::Tensor::Host(src.dtype(), src.shape()));
  std::memset(zero.raw_data(), 0, zero.bytes());
  ASSIGN_OR_RETURN(auto cost, devices::Sub(zero, src, neg));
  return devices::Accumulate(devices::ReduceOp::kSum, neg.raw_data(),
                             dst.raw_data(), dst.num_elements(), dst.dtype())
      .status();
}

// The rows of the host tensor `value` that `ids` (checked) names.
absl::StatusOr<devices::Tensor> GatherRows(const devices::Tensor& value,
                                           const devices::Tensor& ids) {
  std::vector<int64_t> dims(ids.shape().dims().begin(),
                            ids.shape().dims().end());
  dims.insert(dims.end(), value.shape().dims().begin() + 1,
              value.shape().dims().end());
  ASSIGN_OR_RETURN(devices::Shape shape, devices::Shape::Make(dims));
  if (!value.has_data()) {
    return devices::Tensor::ShapeOnly(value.dtype(), shape, "");
  }
  ASSIGN_OR_RETURN(devices::Tensor out,
                   devices::Tensor::Host(value.dtype(), shape));
  const int64_t rows = value.shape().dim(0);
  const size_t row_bytes =
      rows > 0 ? static_cast<size_t>(value.bytes() / rows) : 0;
  for (int64_t i = 0; i < ids.num_elements(); ++i) {
    const int64_t id = ids.dtype() == devices::DType::kInt32
                           ? ids.data<int32_t>()[i]
                           : ids.data<int64_t>()[i];
    if (row_bytes > 0) {
      std::memcpy(static_cast<char*>(out.raw_data()) + i * row_bytes,
                  static_cast<const char*>(value.raw_data()) + id * row_bytes,
                  row_bytes);
    }
  }
  return out;
}

}  // namespace

absl::string_view VariableSynchronizationName(VariableSynchronization s) {
  switch (s) {
    case VariableSynchronization::kAuto:
      return "AUTO";
    case VariableSynchronization::kOnWrite:
      return "ON_WRITE";
    case VariableSynchronization::kOnRead:
      return "ON_READ";
    case VariableSynchronization::kNone:
      return "NONE";
  }
  return "AUTO";
}

absl::string_view VariableAggregationName(VariableAggregation a) {
  switch (a) {
    case VariableAggregation::kNone:
      return "NONE";
    case VariableAggregation::kSum:
      return "SUM";
    case VariableAggregation::kMean:
      return "MEAN";
    case VariableAggregation::kOnlyFirstReplica:
      return "ONLY_FIRST_REPLICA";
  }
  return "NONE";
}

std::vector<std::string> Variable::devices() const {
  if (remote_ != nullptr) return remote_->Locations();
  std::vector<std::string> out;
  for (const devices::Tensor& t : components_) out.push_back(t.device());
  return out;
}

devices::Tensor& Variable::component_for_replica(int replica) {
  if (components_.empty()) {
    // A kRemote variable: a caller broke the contract; fail where it did.
    std::fprintf(stderr,
                 "Variable::component_for_replica on variable '%s', which "
                 "has no local component (it lives on parameter servers)\n",
                 name().c_str());
    std::abort();
  }
  if (components_.size() == 1) return components_[0];
  // `replica` is a global id; this process holds its own replicas only.
  return components_[replica - strategy_->extended().ReplicaIdOffset()];
}

// The replica context of this thread if it belongs to the variable's
// strategy; nullptr in the cross-replica context.
static ReplicaContext* ReplicaOf(const Variable& var) {
  if (InCrossReplicaContext()) return nullptr;
  ReplicaContext* ctx = GetReplicaContext();
  if (ctx == nullptr || &ctx->strategy() != &var.strategy()) return nullptr;
  return ctx;
}

// `t` where replica `ctx` computes (devices::ReadableOn its device).
static absl::StatusOr<devices::Tensor> ForReplica(ReplicaContext& ctx,
                                                  const devices::Tensor& t) {
  return devices::ReadableOn(ctx.strategy().extended().platform(), t,
                             ctx.device());
}

absl::StatusOr<devices::Tensor> Variable::ReadRemote(
    devices::Device* reader) const {
  ASSIGN_OR_RETURN(devices::Tensor value, remote_->Read(reader));
  if (value.dtype() != dtype_ || !(value.shape() == shape_)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "variable '", name(), "' is ", value.DebugString(), " where it is ",
        "kept, but ", devices::DTypeName(dtype_), shape_.DebugString(),
        " here: create it from an initial value of the same dtype and shape "
        "on every task"));
  }
  return value;
}

absl::Status Variable::UpdateRemote(UpdateKind kind,
                                    const devices::Tensor& value) {
  const RemoteVariableStorage::UpdateKind remote_kind =
      kind == UpdateKind::kAssign ? RemoteVariableStorage::UpdateKind::kAssign
      : kind == UpdateKind::kAdd  ? RemoteVariableStorage::UpdateKind::kAdd
                                  : RemoteVariableStorage::UpdateKind::kSub;
  ReplicaContext* ctx = ReplicaOf(*this);
  if (ctx == nullptr || strategy_->NumReplicasInSync() == 1) {
    return remote_->Update(remote_kind, value,
                           ctx == nullptr ? nullptr : &ctx->device());
  }
  // Several replicas: their values are combined once, in a merge call.
  if (options_.aggregation == VariableAggregation::kNone) {
    return absl::FailedPreconditionError(absl::StrCat(
        "You must specify an aggregation method to update a variable on "
        "parameter servers in Replica Context. You can do so by passing an "
        "explicit value for argument `aggregation` to tf.Variable(..).e.g. "
        "`tf.Variable(..., aggregation=tf.VariableAggregation.SUM)`. "
        "(variable '",
        name(), "')"));
  }
  const VariableAggregation aggregation = options_.aggregation;
  RemoteVariableStorage* remote = remote_.get();
  absl::StatusOr<std::vector<devices::Tensor>> merged = ctx->MergeCall(
      [&](Strategy& strategy, const std::vector<PerReplica>& args)
          -> absl::StatusOr<std::vector<RunArg>> {
        ASSIGN_OR_RETURN(
            devices::Tensor combined,
            aggregation == VariableAggregation::kOnlyFirstReplica
                ? absl::StatusOr<devices::Tensor>(args[0].value(0))
                : strategy.Reduce(aggregation == VariableAggregation::kSum
                                      ? ReduceOp::kSum
                                      : ReduceOp::kMean,
                                  args[0]));
        // Sent once, by the first local replica's device.
        ASSIGN_OR_RETURN(devices::Device * sender,
                         strategy.extended().platform().FindDevice(
                             strategy.extended().WorkerDevices()[0]));
        RETURN_IF_ERROR(remote->Update(remote_kind, combined, sender));
        return std::vector<RunArg>{};
      },
      {value});
  return merged.status();
}

absl::StatusOr<devices::Tensor> Variable::Read() const {
  ReplicaContext* ctx = ReplicaOf(*this);
  if (kind_ == Kind::kRemote) {
    absl::StatusOr<devices::Tensor> value =
        ReadRemote(ctx == nullptr ? nullptr : &ctx->device());
    if (!value.ok() || ctx == nullptr) return value;
    return ForReplica(*ctx, *value);
  }
  if (kind_ != Kind::kSyncOnRead) {
    if (ctx != nullptr && components_.size() > 1) {
      return components_[ctx->LocalReplicaId()];
    }
    // A central variable is read where the replica computes.
    if (ctx != nullptr) return ForReplica(*ctx, components_[0]);
    absl::MutexLock lock(&mu_);
    return components_[0];
  }
  if (ctx != nullptr) return components_[ctx->LocalReplicaId()];
  // Cross-replica read of a sync-on-read variable: aggregate.
  switch (options_.aggregation) {
    case VariableAggregation::kOnlyFirstReplica:
      return components_[0];
    case VariableAggregation::kNone:
      return absl::FailedPreconditionError(absl::StrCat(
          "Could not convert from `tf.VariableAggregation` NONE to "
          "`tf.distribute.ReduceOp` type to read sync-on-read variable '",
          name(), "' in the cross-replica context; give it an aggregation"));
    case VariableAggregation::kSum:
    case VariableAggregation::kMean:
      return strategy_->Reduce(options_.aggregation == VariableAggregation::kSum
                                   ? ReduceOp::kSum
                                   : ReduceOp::kMean,
                               PerReplica(components_));
  }
  return components_[0];
}

absl::Status Variable::CopyOnWrite(devices::Tensor& component) const {
  if (!component.has_data() || component.buffer_use_count() <= 1) {
    return absl::OkStatus();
  }
  // A fresh buffer on the component's own device, holding its value.
  ASSIGN_OR_RETURN(devices::Tensor own, strategy_->extended().CopyToDevice(
                                            component, component.device()));
  component = std::move(own);
  return absl::OkStatus();
}

absl::Status Variable::Assign(const devices::Tensor& value) {
  return Update(UpdateKind::kAssign, value);
}
absl::Status Variable::AssignAdd(const devices::Tensor& delta) {
  return Update(UpdateKind::kAdd, delta);
}
absl::Status Variable::AssignSub(const devices::Tensor& delta) {
  return Update(UpdateKind::kSub, delta);
}

absl::Status Variable::Update(UpdateKind kind, const devices::Tensor& value) {
  RETURN_IF_ERROR(CheckCompatible(*this, value));
  // As TF's enter_or_assert_strategy: a strategy's variable is updated in
  // its own strategy's scope or outside every scope, not in another's (where
  // the other strategy's replicas would all write its components at once).
  if (HasStrategy() && &GetStrategy() != strategy_ &&
      &GetStrategy() != &DefaultStrategy() && strategy_ != &DefaultStrategy()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Mixing different tf.distribute.Strategy objects: ",
        GetStrategy().name(), " is not ", strategy_->name(), "; variable '",
        name(), "' must be updated in its own strategy's scope or run"));
  }
  if (kind_ == Kind::kRemote) return UpdateRemote(kind, value);
  if (ReplicaOf(*this) != nullptr && strategy_->NumReplicasInSync() > 1) {
    return UpdateInReplicaContext(kind, value);
  }
  return UpdateInCrossReplicaContext(kind, value);
}

absl::Status Variable::UpdateInCrossReplicaContext(
    UpdateKind kind, const devices::Tensor& value) {
  // Replica threads of another strategy may update a plain variable at
  // once: one at a time, none lost.
  absl::MutexLock lock(&mu_);
  devices::Tensor v = value;
  if (kind_ == Kind::kSyncOnRead &&
      options_.aggregation == VariableAggregation::kSum) {
    if (kind != UpdateKind::kAssign) {
      return absl::FailedPreconditionError(
          absl::StrCat("SyncOnReadVariable does not support `assign_",
                       kind == UpdateKind::kAdd ? "add" : "sub",
                       "` in cross-replica context when aggregation is set to "
                       "`tf.VariableAggregation.SUM`."));
    }
    // Each component gets value / num_replicas_in_sync (every worker's
    // replicas: the SUM read adds them all up), so the SUM read gives value.
    ASSIGN_OR_RETURN(
        devices::Tensor host_v,
        devices::ToHostTensor(strategy_->extended().platform(), v));
    ASSIGN_OR_RETURN(devices::Tensor scaled,
                     devices::Tensor::Host(v.dtype(), v.shape()));
    if (v.has_data()) {
      std::memcpy(scaled.raw_data(), host_v.raw_data(), v.bytes());
      ASSIGN_OR_RETURN(
          auto c, devices::FinalizeMean(scaled.raw_data(),
                                        scaled.num_elements(), scaled.dtype(),
                                        strategy_->NumReplicasInSync()));
    }
    v = std::move(scaled);
  }
  const int op = kind == UpdateKind::kAssign ? 0
                 : kind == UpdateKind::kAdd  ? 1
                                             : 2;
  for (devices::Tensor& c : components_) {
    absl::Status st = CopyOnWrite(c);
    if (st.ok()) st = Apply(strategy_->extended(), c, v, op);
    RETURN_IF_ERROR(st);
  }
  return absl::OkStatus();
}

absl::Status Variable::UpdateInReplicaContext(UpdateKind kind,
                                              const devices::Tensor& value) {
  ReplicaContext& ctx = *ReplicaOf(*this);
  const int r = ctx.LocalReplicaId();
  const int op = kind == UpdateKind::kAssign ? 0
                 : kind == UpdateKind::kAdd  ? 1
                                             : 2;
  if (kind_ == Kind::kSyncOnRead) {
    RETURN_IF_ERROR(CopyOnWrite(components_[r]));
    return Apply(strategy_->extended(), components_[r], value, op);
  }
  // A mirrored variable without aggregation: each replica updates its own
  // copy, and the copies may then differ (TF >= 2.4).
  if (kind_ == Kind::kMirrored &&
      options_.aggregation == VariableAggregation::kNone) {
    RETURN_IF_ERROR(CopyOnWrite(components_[r]));
    return Apply(strategy_->extended(), components_[r], value, op);
  }
  // Otherwise every replica's update must agree.
  devices::Tensor agreed = value;
  switch (options_.aggregation) {
    case VariableAggregation::kNone:
      return absl::FailedPreconditionError(absl::StrCat(
          "You must specify an aggregation method to update a ",
          kind_ == Kind::kMirrored ? "MirroredVariable" : "variable",
          " in Replica Context. You can do so by passing an explicit value "
          "for argument `aggregation` to tf.Variable(..).e.g. "
          "`tf.Variable(..., aggregation=tf.VariableAggregation.SUM)`. "
          "(variable '",
          name(), "')"));
    case VariableAggregation::kSum:
    case VariableAggregation::kMean: {
      ASSIGN_OR_RETURN(
          auto reduced,
          ctx.AllReduce(options_.aggregation == VariableAggregation::kSum
                            ? ReduceOp::kSum
                            : ReduceOp::kMean,
                        {value}));
      agreed = reduced[0];
      break;
    }
    case VariableAggregation::kOnlyFirstReplica: {
      std::vector<devices::Tensor> mine;
      ASSIGN_OR_RETURN(
          devices::Tensor host_value,
          devices::ToHostTensor(strategy_->extended().platform(), value));
      ASSIGN_OR_RETURN(devices::Tensor copy,
                       devices::Tensor::Host(value.dtype(), value.shape()));
      if (value.has_data())
        std::memcpy(copy.raw_data(), host_value.raw_data(), value.bytes());
      mine.push_back(std::move(copy));
      RETURN_IF_ERROR(strategy_->extended().cross_device_ops().ReplicaBroadcast(
          r, 0, mine));
      agreed = mine[0];
      break;
    }
  }
  return strategy_->extended().Update(
      *this,
      [&](devices::Tensor& component, const std::vector<devices::Tensor>&) {
        return Apply(strategy_->extended(), component, agreed, op);
      });
}

absl::StatusOr<devices::Tensor> Variable::SparseRead(
    const devices::Tensor& ids) const {
  if (shape_.rank() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "variable '", name(), "' is a scalar; it has no rows to look up"));
  }
  if (ids.dtype() != devices::DType::kInt32 &&
      ids.dtype() != devices::DType::kInt64) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the ids to look up in variable '", name(), "' are ",
        devices::DTypeName(ids.dtype()), "; give int32 or int64 ids"));
  }
  if (ids.num_elements() > 0 && (!ids.has_data() || !ids.host_accessible())) {
    return absl::InvalidArgumentError(
        absl::StrCat("the ids to look up in variable '", name(),
                     "' are not in host memory: copy them to the host first"));
  }
  const int64_t rows = shape_.dim(0);
  for (int64_t i = 0; i < ids.num_elements(); ++i) {
    const int64_t id = ids.dtype() == devices::DType::kInt32
                           ? ids.data<int32_t>()[i]
                           : ids.data<int64_t>()[i];
    if (id < 0 || id >= rows) {
      return absl::InvalidArgumentError(
          absl::StrCat("id ", id, " (at ", i, ") is not a row of variable '",
                       name(), "', which has ", rows, " rows"));
    }
  }
  if (kind_ == Kind::kRemote) {
    ReplicaContext* ctx = ReplicaOf(*this);
    ASSIGN_OR_RETURN(
        devices::Tensor out,
        remote_->Gather(ids, ctx == nullptr ? nullptr : &ctx->device()));
    return devices::ToHostTensor(strategy_->extended().platform(), out);
  }
  ASSIGN_OR_RETURN(devices::Tensor value, Read());
  ASSIGN_OR_RETURN(
      devices::Tensor host,
      devices::ToHostTensor(strategy_->extended().platform(), value));
  return GatherRows(host, ids);
}

}  // namespace distribute
