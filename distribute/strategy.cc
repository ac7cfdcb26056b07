// Strategy: scopes, Run, Reduce, Gather, values from functions, variables.
#include "distribute/strategy.h"

#include <atomic>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/host_platform.h"
#include "devices/reduce_kernels.h"
#include "devices/status_macros.h"
#include "distribute/input/input_context.h"
#include "distribute/run_state.h"
#include "distribute/thread_group.h"

namespace distribute {
namespace {

// Sums `t` along `axis` (row-major), keeping the other dims.
absl::StatusOr<devices::Tensor> SumAlongAxis(const devices::Tensor& t,
                                             int axis) {
  const int rank = t.shape().rank();
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("axis ", axis, " is out of range for a value of shape ",
                     t.shape().DebugString()));
  }
  int64_t outer = 1, inner = 1;
  const int64_t len = t.shape().dim(axis);
  for (int i = 0; i < axis; ++i) outer *= t.shape().dim(i);
  for (int i = axis + 1; i < rank; ++i) inner *= t.shape().dim(i);
  std::vector<int64_t> dims;
  for (int i = 0; i < rank; ++i) {
    if (i != axis) dims.push_back(t.shape().dim(i));
  }
  ASSIGN_OR_RETURN(
      devices::Tensor out,
      devices::Tensor::Host(t.dtype(), *devices::Shape::Make(dims)));
  const size_t elem = devices::DTypeSize(t.dtype());
  std::memset(out.raw_data(), 0, out.bytes());
  const auto* in = static_cast<const std::byte*>(t.raw_data());
  auto* o = static_cast<std::byte*>(out.raw_data());
  for (int64_t a = 0; a < outer; ++a) {
    for (int64_t k = 0; k < len; ++k) {
      ASSIGN_OR_RETURN(
          auto cost,
          devices::Accumulate(devices::ReduceOp::kSum,
                              in + ((a * len + k) * inner) * elem,
                              o + (a * inner) * elem, inner, t.dtype()));
    }
  }
  return out;
}

}  // namespace

Strategy::Strategy(std::unique_ptr<StrategyExtended> extended)
    : extended_(std::move(extended)) {}

Strategy::~Strategy() = default;

absl::StatusOr<ScopeGuard> Strategy::Scope() {
  return internal::EnterScope(this);
}

absl::StatusOr<std::vector<PerReplica>> Strategy::Run(
    const ReplicaFn& fn, const std::vector<RunArg>& args) {
  const internal::ThreadMode& mode = internal::CurrentMode();
  if (mode.replica != nullptr) {
    return absl::FailedPreconditionError(
        "Strategy::Run was called from a replica context; call it from the "
        "cross-replica context (outside the replica function)");
  }
  if (mode.strategy != nullptr && mode.strategy != this) {
    return absl::FailedPreconditionError(
        "Mixing different tf.distribute.Strategy objects: " +
        mode.strategy->name() + " is not " + name());
  }
  // This process's replicas (all of them for a single-worker strategy).
  const int n = static_cast<int>(extended_->WorkerDevices().size());
  std::vector<std::vector<devices::Tensor>> replica_args(n);
  for (size_t k = 0; k < args.size(); ++k) {
    if (const auto* t = std::get_if<devices::Tensor>(&args[k])) {
      for (int r = 0; r < n; ++r) replica_args[r].push_back(*t);
      continue;
    }
    const DistributedValues& d = std::get<DistributedValues>(args[k]);
    if (d.num_replicas() != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", k, " of Run has ", d.num_replicas(),
                       " components but ", name(), " has ", n, " replicas"));
    }
    for (int r = 0; r < n; ++r) replica_args[r].push_back(d.value(r));
  }
  std::vector<devices::Device*> devices(n);
  for (int r = 0; r < n; ++r) {
    ASSIGN_OR_RETURN(devices::Device * d, extended_->platform().FindDevice(
                                              extended_->WorkerDevices()[r]));
    devices[r] = d;
  }

  RunState state(n);
  std::vector<absl::StatusOr<std::vector<devices::Tensor>>> results(
      n, absl::UnknownError("replica did not run"));
  // The replica whose failure aborted the collectives: the cause, whose
  // code Run returns (its peers fail as a consequence, with UNAVAILABLE).
  std::atomic<int> abort_origin{-1};
  internal::RunBoundThreads(devices, [&](int r) {
    {
      absl::MutexLock lock(&state.mu);
      state.bindings[r] = devices::ThreadBinding::Current();
    }
    ReplicaContext ctx(this, r, &state);
    {
      internal::ModeSwitch replica_mode({this, &ctx, 0, false});
      results[r] = fn(ctx, replica_args[r]);
    }
    if (!results[r].ok()) {
      int none = -1;
      abort_origin.compare_exchange_strong(none, r);
      // The other replicas may be waiting for this one in a collective it
      // will never join: abort the group so that they fail now, naming
      // this replica, rather than at their timeout (TF aborts the
      // collective executor the same way).
      const absl::Status& failed = results[r].status();
      extended_->cross_device_ops()
          .AbortCollectives(
              absl::Status(failed.code(),
                           absl::StrCat("replica ", r, " (", devices[r]->name(),
                                        ") failed: ", failed.message())))
          .IgnoreError();
    }
    state.ReplicaFinished(r);
    absl::MutexLock lock(&state.mu);
    state.bindings[r] = nullptr;
  });
  // A single-worker group aborted above is made anew, so the strategy can
  // run again; a group across workers stays aborted (every worker fails).
  absl::Status recovered = extended_->cross_device_ops().RecoverFromAbort();
  // The lowest failing replica's code, with every failing replica's error
  // in the message (deterministic): when one replica fails, the others
  // often fail only as a consequence (a peer that never arrives), and the
  // cause must not be lost.
  int first_failed = -1;
  std::string failures;
  for (int r = 0; r < n; ++r) {
    if (results[r].ok()) continue;
    if (first_failed < 0) first_failed = r;
    absl::StrAppend(&failures, failures.empty() ? "" : "; ", "replica ", r,
                    ": ", results[r].status().ToString());
  }
  if (first_failed >= 0) {
    if (!recovered.ok() && !absl::IsFailedPrecondition(recovered)) {
      absl::StrAppend(&failures,
                      "; and the collectives could not be made "
                      "anew after the failure: ",
                      recovered.ToString());
    }
    const int cause =
        abort_origin.load() >= 0 ? abort_origin.load() : first_failed;
    return absl::Status(results[cause].status().code(), failures);
  }
  const size_t outputs = results[0]->size();
  for (int r = 1; r < n; ++r) {
    if (results[r]->size() != outputs) {
      return absl::InvalidArgumentError(
          absl::StrCat("replica ", r, " returned ", results[r]->size(),
                       " values but replica 0 returned ", outputs,
                       "; every replica must return the same structure"));
    }
  }
  std::vector<PerReplica> out;
  for (size_t k = 0; k < outputs; ++k) {
    std::vector<devices::Tensor> comps;
    for (int r = 0; r < n; ++r) comps.push_back((*results[r])[k]);
    out.emplace_back(std::move(comps));
  }
  return out;
}

absl::StatusOr<devices::Tensor> Strategy::Reduce(ReduceOp op,
                                                 const DistributedValues& value,
                                                 std::optional<int> axis) {
  if (value.num_replicas() == 0) {
    return absl::InvalidArgumentError("Reduce of a value with no components");
  }
  if (NumWorkers() > 1) return ReduceAcrossWorkers(op, value, axis);
  std::vector<devices::Tensor> host;
  for (const devices::Tensor& t : value.values()) {
    ASSIGN_OR_RETURN(devices::Tensor h,
                     devices::ToHostTensor(extended_->platform(), t));
    host.push_back(std::move(h));
  }
  devices::Tensor denominator;
  if (axis.has_value()) {
    // Per replica: sum along the axis; MEAN divides by the total length of
    // the axis over every replica (uneven last batches count correctly).
    int64_t total_len = 0;
    for (devices::Tensor& t : host) {
      const int rank = t.shape().rank();
      const int a = *axis < 0 ? *axis + rank : *axis;
      if (a >= 0 && a < rank) total_len += t.shape().dim(a);
      ASSIGN_OR_RETURN(devices::Tensor s, SumAlongAxis(t, *axis));
      t = std::move(s);
    }
    ASSIGN_OR_RETURN(devices::Tensor sum,
                     devices::Tensor::Host(host[0].dtype(), host[0].shape()));
    PerReplica reduced(host);
    RETURN_IF_ERROR(reduced.CheckSameShapeAndType("Reduce"));
    ASSIGN_OR_RETURN(auto cost,
                     devices::ReduceInto(devices::ReduceOp::kSum, host, sum));
    if (op == ReduceOp::kMean) {
      if (total_len == 0) {
        return absl::InvalidArgumentError(
            "MEAN over an axis of total length 0 is undefined");
      }
      ASSIGN_OR_RETURN(auto c,
                       devices::FinalizeMean(sum.raw_data(), sum.num_elements(),
                                             sum.dtype(), total_len));
    }
    return sum;
  }
  PerReplica check(host);
  RETURN_IF_ERROR(check.CheckSameShapeAndType("Reduce"));
  ASSIGN_OR_RETURN(devices::Tensor out,
                   devices::Tensor::Host(host[0].dtype(), host[0].shape()));
  ASSIGN_OR_RETURN(auto cost,
                   devices::ReduceInto(ToDevicesReduceOp(op), host, out));
  return out;
}

absl::StatusOr<devices::Tensor> Strategy::ReduceAcrossWorkers(
    ReduceOp op, const DistributedValues& value, std::optional<int> axis) {
  const std::vector<std::string>& devices = extended_->WorkerDevices();
  if (value.num_replicas() != static_cast<int>(devices.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("Reduce: the value has ", value.num_replicas(),
                     " components but this worker has ", devices.size(),
                     " replicas; pass this worker's per-replica values"));
  }
  if (!axis.has_value()) {
    ASSIGN_OR_RETURN(Mirrored reduced,
                     extended_->ReduceTo(op, value, {devices[0]}));
    return devices::ToHostTensor(extended_->platform(), reduced.value(0));
  }
  // Per replica: the sum along the axis and the axis's length; then the
  // sums and lengths of every worker's replicas are added up.
  std::vector<devices::Tensor> sums, lengths;
  for (int r = 0; r < value.num_replicas(); ++r) {
    ASSIGN_OR_RETURN(
        devices::Tensor h,
        devices::ToHostTensor(extended_->platform(), value.value(r)));
    const int rank = h.shape().rank();
    const int a = *axis < 0 ? *axis + rank : *axis;
    ASSIGN_OR_RETURN(devices::Tensor sum, SumAlongAxis(h, *axis));
    ASSIGN_OR_RETURN(
        devices::Tensor len,
        devices::Tensor::Host(devices::DType::kInt64, devices::Shape({1})));
    len.data<int64_t>()[0] = h.shape().dim(a);
    for (auto* t : {&sum, &len}) {
      ASSIGN_OR_RETURN(devices::Tensor placed,
                       extended_->CopyToDevice(*t, devices[r]));
      *t = std::move(placed);
    }
    sums.push_back(std::move(sum));
    lengths.push_back(std::move(len));
  }
  ASSIGN_OR_RETURN(
      std::vector<Mirrored> reduced,
      extended_->BatchReduceTo(
          ReduceOp::kSum, {{PerReplica(std::move(sums)), {devices[0]}},
                           {PerReplica(std::move(lengths)), {devices[0]}}}));
  ASSIGN_OR_RETURN(
      devices::Tensor sum,
      devices::ToHostTensor(extended_->platform(), reduced[0].value(0)));
  ASSIGN_OR_RETURN(
      devices::Tensor total,
      devices::ToHostTensor(extended_->platform(), reduced[1].value(0)));
  if (op == ReduceOp::kMean) {
    const int64_t total_len = total.data<int64_t>()[0];
    if (total_len == 0) {
      return absl::InvalidArgumentError(
          "MEAN over an axis of total length 0 is undefined");
    }
    // The reduced sum may be shared with a device copy: divide a copy.
    ASSIGN_OR_RETURN(devices::Tensor mean,
                     devices::Tensor::Host(sum.dtype(), sum.shape()));
    std::memcpy(mean.raw_data(), sum.raw_data(), sum.bytes());
    ASSIGN_OR_RETURN(auto c,
                     devices::FinalizeMean(mean.raw_data(), mean.num_elements(),
                                           mean.dtype(), total_len));
    return mean;
  }
  return sum;
}

absl::StatusOr<devices::Tensor> Strategy::Gather(const DistributedValues& value,
                                                 int axis) {
  if (value.num_replicas() == 0) {
    return absl::InvalidArgumentError("Gather of a value with no components");
  }
  if (NumWorkers() > 1) return GatherAcrossWorkers(value, axis);
  std::vector<devices::Tensor> host;
  for (const devices::Tensor& t : value.values()) {
    ASSIGN_OR_RETURN(devices::Tensor h,
                     devices::ToHostTensor(extended_->platform(), t));
    host.push_back(std::move(h));
  }
  const devices::Tensor& first = host[0];
  const int rank = first.shape().rank();
  const int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gather axis ", axis, " is out of range for shape ",
                     first.shape().DebugString()));
  }
  std::vector<int64_t> dims(first.shape().dims().begin(),
                            first.shape().dims().end());
  dims[a] = 0;
  for (size_t r = 0; r < host.size(); ++r) {
    const devices::Tensor& t = host[r];
    bool compatible = t.dtype() == first.dtype() && t.shape().rank() == rank;
    for (int i = 0; compatible && i < rank; ++i) {
      if (i != a && t.shape().dim(i) != first.shape().dim(i))
        compatible = false;
    }
    if (!compatible) {
      return absl::InvalidArgumentError(
          absl::StrCat("Gather: replica ", r, " has ", t.DebugString(),
                       " but replica 0 has ", first.DebugString(),
                       "; only the gathered axis may differ"));
    }
    dims[a] += t.shape().dim(a);
  }
  ASSIGN_OR_RETURN(
      devices::Tensor out,
      devices::Tensor::Host(first.dtype(), *devices::Shape::Make(dims)));
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < a; ++i) outer *= dims[i];
  for (int i = a + 1; i < rank; ++i) inner *= dims[i];
  const size_t elem = devices::DTypeSize(first.dtype());
  auto* o = static_cast<std::byte*>(out.raw_data());
  for (int64_t x = 0; x < outer; ++x) {
    for (const devices::Tensor& t : host) {
      const size_t block = t.shape().dim(a) * inner * elem;
      std::memcpy(o, static_cast<const std::byte*>(t.raw_data()) + x * block,
                  block);
      o += block;
    }
  }
  return out;
}

absl::StatusOr<devices::Tensor> Strategy::GatherAcrossWorkers(
    const DistributedValues& value, int axis) {
  const int local = static_cast<int>(extended_->WorkerDevices().size());
  if (value.num_replicas() != local) {
    return absl::InvalidArgumentError(
        absl::StrCat("Gather: the value has ", value.num_replicas(),
                     " components but this worker has ", local,
                     " replicas; pass this worker's per-replica values"));
  }
  // As TF's CollectiveAllReduce gathers for strategy.gather: every replica
  // of every worker all-gathers its component (sizes along `axis` may
  // differ), so each worker ends with the whole concatenation, in global
  // replica order.
  ASSIGN_OR_RETURN(
      std::vector<PerReplica> gathered,
      Run(
          [axis](ReplicaContext& ctx, const std::vector<devices::Tensor>& in)
              -> absl::StatusOr<std::vector<devices::Tensor>> {
            ASSIGN_OR_RETURN(devices::Tensor all, ctx.AllGather(in[0], axis));
            return std::vector<devices::Tensor>{std::move(all)};
          },
          {value}));
  return devices::ToHostTensor(extended_->platform(), gathered[0].value(0));
}

absl::StatusOr<PerReplica> Strategy::ExperimentalDistributeValuesFromFunction(
    const std::function<absl::StatusOr<devices::Tensor>(const ValueContext&)>&
        fn) {
  const int n = static_cast<int>(extended_->WorkerDevices().size());
  std::vector<devices::Tensor> values;
  for (int r = 0; r < n; ++r) {
    ASSIGN_OR_RETURN(ValueContext ctx,
                     ValueContext::Create(extended_->ReplicaIdOffset() + r,
                                          NumReplicasInSync()));
    ASSIGN_OR_RETURN(devices::Tensor v, fn(ctx));
    ASSIGN_OR_RETURN(devices::Tensor placed,
                     extended_->CopyToDevice(v, extended_->WorkerDevices()[r]));
    values.push_back(std::move(placed));
  }
  return PerReplica(std::move(values));
}

absl::StatusOr<std::shared_ptr<Variable>> Strategy::CreateVariable(
    const devices::Tensor& initial_value, VariableOptions options) {
  const internal::ThreadMode& mode = internal::CurrentMode();
  if (this != &DefaultStrategy() && mode.strategy != this) {
    return absl::FailedPreconditionError(
        absl::StrCat("Need to be inside \"with strategy.scope()\" for ", name(),
                     " to create a variable it places"));
  }
  if (mode.replica != nullptr) {
    return absl::FailedPreconditionError(
        "variables must be created in the cross-replica context (in the "
        "strategy's scope, outside Run)");
  }
  return extended_->CreateVariable(this, initial_value, std::move(options));
}

// The default strategy ------------------------------------------------------

namespace {

class DefaultStrategyImpl : public Strategy {
 public:
  explicit DefaultStrategyImpl(std::unique_ptr<devices::Platform> platform,
                               std::unique_ptr<StrategyExtended> extended)
      : Strategy(std::move(extended)), platform_(std::move(platform)) {}
  std::string name() const override { return "DefaultDistributionStrategy"; }

 private:
  std::unique_ptr<devices::Platform> platform_;
};

}  // namespace

Strategy& DefaultStrategy() {
  static Strategy* const strategy = [] {
    devices::HostPlatformOptions options;
    std::unique_ptr<devices::Platform> platform =
        *devices::HostPlatform::Create(options);
    const std::string device = platform->DeviceNames()[0];
    auto ops = std::make_shared<ReductionToOneDevice>();
    // One replica never communicates (reductions of one value return it),
    // so the ops are bound only for completeness; should binding fail, every
    // call on them reports FAILED_PRECONDITION ("not bound") instead.
    ops->Bind(*platform, {device}).IgnoreError();
    auto extended = std::make_unique<StrategyExtended>(
        platform.get(), std::vector<std::string>{device}, std::nullopt, ops);
    return new DefaultStrategyImpl(std::move(platform), std::move(extended));
  }();
  return *strategy;
}

ReplicaContext* DefaultReplicaContext() {
  static ReplicaContext* const ctx =
      new ReplicaContext(&DefaultStrategy(), 0, nullptr);
  return ctx;
}

}  // namespace distribute
