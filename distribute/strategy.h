// tf.distribute.Strategy in C++: a training program written once runs
// unchanged on one device or many, real or simulated.
//
//   auto strategy = *MirroredStrategy::Create(platform, {"/gpu:0", "/gpu:1"});
//   {
//     ScopeGuard scope = *strategy->Scope();
//     w = *strategy->CreateVariable(init, {.name = "w"});
//   }
//   absl::StatusOr<std::vector<PerReplica>> out = strategy->Run(
//       [&](ReplicaContext& ctx, const std::vector<devices::Tensor>& args)
//           -> absl::StatusOr<std::vector<devices::Tensor>> {
//         ... compute grads on ctx.device() ...
//         return ctx.AllReduce(ReduceOp::kSum, grads);
//       },
//       {per_replica_batch});
//   devices::Tensor loss = *strategy->Reduce(ReduceOp::kSum, (*out)[0]);
//
// Run calls the function once per replica, each on its own host thread bound
// to the replica's device (threads kept in a pool between calls; one replica
// runs on the caller's thread). Inside, GetReplicaContext() is the replica's
// context; outside, in the strategy's scope, the thread is in the
// cross-replica context (context.h).
#ifndef DISTRIBUTE_STRATEGY_H_
#define DISTRIBUTE_STRATEGY_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "devices/device.h"
#include "devices/kernel_costs.h"
#include "devices/platform.h"
#include "devices/tensor.h"
#include "distribute/collective/communication_options.h"
#include "distribute/context.h"
#include "distribute/cross_device_ops.h"
#include "distribute/input/input_context.h"
#include "distribute/reduce_op.h"
#include "distribute/values.h"
#include "distribute/variables.h"

namespace distribute {

namespace cluster {
class ClusterResolver;
}  // namespace cluster

class ReplicaContext;
class Strategy;
struct RunState;

// An argument of Run: a distributed value (each replica gets its component)
// or a plain tensor (every replica gets it).
using RunArg = std::variant<devices::Tensor, DistributedValues>;

using ReplicaFn = std::function<absl::StatusOr<std::vector<devices::Tensor>>(
    ReplicaContext&, const std::vector<devices::Tensor>& args)>;

// The function of MergeCall: runs once, in the cross-replica context, with
// each argument gathered into a PerReplica; returns values for the replicas
// (a DistributedValues gives each replica its component).
using MergeFn = std::function<absl::StatusOr<std::vector<RunArg>>(
    Strategy&, const std::vector<PerReplica>& args)>;

class ReplicaContext {
 public:
  ReplicaContext(const ReplicaContext&) = delete;
  ReplicaContext& operator=(const ReplicaContext&) = delete;

  Strategy& strategy() const { return *strategy_; }
  // The replica's id among all replicas in sync (on every worker of a
  // multi-worker strategy: worker_index * local replicas + local index).
  int ReplicaIdInSyncGroup() const;
  // The replica's index among this process's replicas (its device in
  // StrategyExtended::WorkerDevices()); equal to ReplicaIdInSyncGroup() for
  // single-worker strategies.
  int LocalReplicaId() const { return replica_id_; }
  int NumReplicasInSync() const;
  // The replica's device (name and object).
  const std::string& device_name() const;
  devices::Device& device() const;

  // Runs fn once in the cross-replica context with every replica's args;
  // all replicas must call it (in the same order). FAILED_PRECONDITION if a
  // replica returns from Run's function without the call the others wait
  // in; DEADLINE_EXCEEDED past options' timeout.
  absl::StatusOr<std::vector<devices::Tensor>> MergeCall(
      const MergeFn& fn, const std::vector<devices::Tensor>& args);

  // The reduction of every replica's `values` (same dtypes and shapes on all
  // replicas), packed per the options (and the strategy's defaults).
  absl::StatusOr<std::vector<devices::Tensor>> AllReduce(
      ReduceOp op, const std::vector<devices::Tensor>& values,
      const CommunicationOptions& options = {});
  // Every replica's tensor concatenated along `axis` in replica order, as
  // tf.distribute's all_gather: shapes must match in every dimension but
  // `axis`, which counts from the end when negative (in [-rank, rank)).
  // INVALID_ARGUMENT for an axis out of range or (on functional devices)
  // replicas whose ranks or other dimensions differ. A scalar gathered
  // along axis 0 counts as [1]. Off axis 0 the value is staged through host
  // memory to move the axis to the front and back.
  absl::StatusOr<devices::Tensor> AllGather(
      const devices::Tensor& value, int axis = 0,
      const CommunicationOptions& options = {});

  // Runs `fn` on the replica's device queue, charging `cost` (a simulated
  // device advances its clock by the roofline time of the cost), and waits.
  absl::Status Execute(const devices::KernelCost& cost,
                       absl::AnyInvocable<absl::Status()> fn);

 private:
  friend class Strategy;
  friend ReplicaContext* DefaultReplicaContext();
  ReplicaContext(Strategy* strategy, int replica_id, RunState* run)
      : strategy_(strategy), replica_id_(replica_id), run_(run) {}

  Strategy* strategy_;
  int replica_id_;
  RunState* run_;  // null for the default replica context
};

class StrategyExtended {
 public:
  // The strategy's devices on `platform` (which must outlive it).
  // parameter_device set: variables live there only (CentralStorage).
  StrategyExtended(devices::Platform* platform,
                   std::vector<std::string> worker_devices,
                   std::optional<std::string> parameter_device,
                   std::shared_ptr<CrossDeviceOps> cross_device_ops);
  virtual ~StrategyExtended() = default;
  StrategyExtended(const StrategyExtended&) = delete;
  StrategyExtended& operator=(const StrategyExtended&) = delete;

  // Canonical names of this process's compute (replica) devices, in replica
  // order.
  const std::vector<std::string>& WorkerDevices() const {
    return worker_devices_;
  }

  // Replicas in sync across every worker (WorkerDevices().size() for
  // single-worker strategies).
  int NumReplicasInSync() const;
  // The global replica id of this process's first replica.
  int ReplicaIdOffset() const { return replica_id_offset_; }
  // Workers of the cluster and this one's index (1 and 0 for single-worker
  // strategies).
  int NumWorkers() const { return num_workers_; }
  int WorkerIndex() const { return worker_index_; }
  // Multi-worker strategies call this once, before the strategy is used:
  // this process's replicas are global replicas worker_index * local ..
  // (worker_index + 1) * local - 1 of num_workers * local, where local is
  // WorkerDevices().size() (the same on every worker). INVALID_ARGUMENT for
  // num_workers < 1 or a worker index outside 0..num_workers - 1.
  absl::Status SetWorkers(int num_workers, int worker_index);
  // Where variables live: the parameter device, or the worker devices.
  std::vector<std::string> ParameterDevices() const;

  // Cross-replica context: reduces `value` onto `destinations`
  // (default: the worker devices).
  absl::StatusOr<Mirrored> ReduceTo(ReduceOp op, const DistributedValues& value,
                                    const Destinations& destinations = {},
                                    const CommunicationOptions& options = {});
  absl::StatusOr<std::vector<Mirrored>> BatchReduceTo(
      ReduceOp op,
      const std::vector<std::pair<DistributedValues, Destinations>>& values,
      const CommunicationOptions& options = {});
  // Copies `tensor` to every destination (default: the worker devices).
  absl::StatusOr<Mirrored> BroadcastTo(const devices::Tensor& tensor,
                                       const Destinations& destinations = {});

  // Applies fn to the variable's components: to each of them in the
  // cross-replica context (args resolved per component), to the replica's
  // own in a replica context (then the caller guarantees that every replica
  // passes the same args, as when they are the result of an AllReduce; a
  // central variable is updated once, by replica 0, and every replica waits
  // for it). A kRemote variable is updated as a central one: fn gets a host
  // copy of the value read from the storage, and the difference fn made is
  // added to the stored value (so that updates of other workers made in
  // between are kept, as a parameter server applies each update to its
  // current value); a bool variable gets fn's value assigned instead.
  using UpdateFn = std::function<absl::Status(
      devices::Tensor& component, const std::vector<devices::Tensor>& args)>;
  absl::Status Update(Variable& var, const UpdateFn& fn,
                      const std::vector<RunArg>& args = {});

  // Variables created while the returned guard lives are placed with `var`;
  // guards nest (leaving one restores the placement of the one outside).
  // INVALID_ARGUMENT for a variable of another strategy.
  class ColocationGuard {
   public:
    ~ColocationGuard();
    ColocationGuard(const ColocationGuard&) = delete;
    ColocationGuard& operator=(const ColocationGuard&) = delete;
    ColocationGuard(ColocationGuard&& other) noexcept;
    ColocationGuard& operator=(ColocationGuard&&) = delete;

   private:
    friend class StrategyExtended;
    ColocationGuard(StrategyExtended* owner,
                    std::optional<std::vector<std::string>> previous)
        : owner_(owner), previous_(std::move(previous)) {}
    StrategyExtended* owner_;
    std::optional<std::vector<std::string>> previous_;
  };
  absl::StatusOr<ColocationGuard> ColocateVarsWith(const Variable& var);
  // Whether `var` was created by this strategy (in its scope).
  bool VariableCreatedInScope(const Variable& var) const;

  devices::Platform& platform() const { return *platform_; }
  CrossDeviceOps& cross_device_ops() const { return *cross_device_ops_; }
  bool has_parameter_device() const { return parameter_device_.has_value(); }

 protected:
  // Strategy::CreateVariable's work (the scope and context already
  // checked): places the variable and makes its components. Strategies
  // that keep variables elsewhere override it.
  virtual absl::StatusOr<std::shared_ptr<Variable>> CreateVariable(
      Strategy* owner, const devices::Tensor& initial_value,
      VariableOptions options);
  // A kRemote variable of `owner` kept in `storage`.
  static std::shared_ptr<Variable> NewRemoteVariable(
      Strategy* owner, VariableOptions options, devices::DType dtype,
      devices::Shape shape, std::shared_ptr<RemoteVariableStorage> storage);
  // The devices ColocateVarsWith asked for, if a guard is alive.
  const std::optional<std::vector<std::string>>& colocation() const {
    return colocate_with_;
  }

 private:
  friend class Strategy;
  friend class Variable;
  // StrategyExtended::Update of a kRemote variable, read onto and sent
  // from `at` (a replica's device; nullptr: the host).
  absl::Status UpdateRemote(Variable& var, const UpdateFn& fn,
                            std::vector<devices::Tensor> args,
                            devices::Device* at);
  absl::StatusOr<devices::Tensor> CopyToDevice(const devices::Tensor& t,
                                               const std::string& device) const;

  devices::Platform* platform_;
  std::vector<std::string> worker_devices_;
  std::optional<std::string> parameter_device_;
  std::shared_ptr<CrossDeviceOps> cross_device_ops_;
  std::optional<std::vector<std::string>> colocate_with_;  // device list
  int num_workers_ = 1;
  int worker_index_ = 0;
  int replica_id_offset_ = 0;
};

class Strategy {
 public:
  virtual ~Strategy();
  Strategy(const Strategy&) = delete;
  Strategy& operator=(const Strategy&) = delete;

  virtual std::string name() const = 0;

  // Enters the strategy's scope for this thread (rules in context.h).
  absl::StatusOr<ScopeGuard> Scope();

  StrategyExtended& extended() const { return *extended_; }
  // Replicas in sync on all workers; Run runs this process's replicas
  // (extended().WorkerDevices()).
  int NumReplicasInSync() const { return extended_->NumReplicasInSync(); }
  // Workers of a multi-worker strategy and this process's index among them;
  // 1 and 0 for local strategies.
  int NumWorkers() const { return extended_->NumWorkers(); }
  int WorkerIndex() const { return extended_->WorkerIndex(); }
  // The resolver of multi-worker strategies; nullptr for local ones.
  virtual cluster::ClusterResolver* ClusterResolver() const { return nullptr; }

  // Runs fn on every replica (see the file comment). Must be called in the
  // cross-replica context or outside any scope (it enters this strategy's
  // scope). INVALID_ARGUMENT if a DistributedValues argument has the wrong
  // number of components.
  absl::StatusOr<std::vector<PerReplica>> Run(
      const ReplicaFn& fn, const std::vector<RunArg>& args = {});

  // Reduces `value` across replicas into one tensor on the host (for a
  // multi-worker strategy: across every worker's replicas, a collective
  // that every worker must make; `value` holds this process's replicas). With
  // `axis`, first reduces along that axis within each replica; MEAN then
  // divides by the total length of the axis over all replicas (TF's rule
  // for uneven batches). INVALID_ARGUMENT for mismatched components or a bad
  // axis.
  absl::StatusOr<devices::Tensor> Reduce(
      ReduceOp op, const DistributedValues& value,
      std::optional<int> axis = std::nullopt);
  // Every replica's component concatenated along `axis` (in replica order;
  // components may differ along `axis` only), on the host. For a
  // multi-worker strategy every worker's replicas, a collective that every
  // worker must make (`value` holds this process's replicas), and each
  // worker gets the whole result. INVALID_ARGUMENT for a bad axis or
  // mismatched components.
  absl::StatusOr<devices::Tensor> Gather(const DistributedValues& value,
                                         int axis = 0);
  std::vector<devices::Tensor> ExperimentalLocalResults(
      const DistributedValues& value) const {
    return value.values();
  }
  // Calls fn once per replica with its ValueContext; each result is placed
  // on the replica's device.
  absl::StatusOr<PerReplica> ExperimentalDistributeValuesFromFunction(
      const std::function<absl::StatusOr<devices::Tensor>(const ValueContext&)>&
          fn);

  // Creates a variable placed and synchronised by this strategy (must be
  // in its scope, cross-replica context, or it's FAILED_PRECONDITION).
  absl::StatusOr<std::shared_ptr<Variable>> CreateVariable(
      const devices::Tensor& initial_value, VariableOptions options = {});

 protected:
  explicit Strategy(std::unique_ptr<StrategyExtended> extended);

 private:
  // Reduce of a multi-worker strategy: a collective over every worker.
  absl::StatusOr<devices::Tensor> ReduceAcrossWorkers(
      ReduceOp op, const DistributedValues& value, std::optional<int> axis);
  // Gather of a multi-worker strategy: an all-gather over every worker.
  absl::StatusOr<devices::Tensor> GatherAcrossWorkers(
      const DistributedValues& value, int axis);

  std::unique_ptr<StrategyExtended> extended_;
};

// The strategy current outside every scope: one replica, no placement, Run
// calls the function directly, reductions return their input.
Strategy& DefaultStrategy();

}  // namespace distribute

#endif  // DISTRIBUTE_STRATEGY_H_
