// Variables of a strategy: created in its scope, placed on its devices, and
// kept in sync by tf.distribute's rules.
//
//   VariableOptions options;
//   options.name = "w";
//   options.aggregation = VariableAggregation::kMean;
//   absl::StatusOr<std::shared_ptr<Variable>> w =
//       strategy->CreateVariable(initial_value, options);
//
// Kinds (VariableSynchronization, with AUTO = ON_WRITE):
//   Variable            one component (the default and OneDevice
//                       strategies, and CentralStorage's parameter device).
//   MirroredVariable    ON_WRITE on several devices: one component per
//                       replica, updated together. In a replica context
//                       the replicas' values are reduced (SUM, MEAN) or
//                       replica 0's is taken (ONLY_FIRST_REPLICA) and every
//                       component gets the result; with NONE each replica
//                       updates its own component only (TF >= 2.4), so the
//                       components may differ. In the cross-replica
//                       context, the value goes to every component. Reads
//                       give the replica's own component (the first one in
//                       the cross-replica context).
//   SyncOnReadVariable  ON_READ: each replica updates its own component;
//                       a cross-replica read aggregates them (SUM, MEAN,
//                       ONLY_FIRST_REPLICA; NONE is an error). A
//                       cross-replica assign of a SUM variable gives each
//                       component value / num_replicas; assign_add/sub of a
//                       SUM variable there is an error, as in TF. Under
//                       CentralStorageStrategy an ON_READ variable is
//                       central instead (TF's AggregatingVariable): one
//                       value on the parameter device, replica updates
//                       combined by the aggregation and applied once.
//   RemoteVariable      kRemote: kept elsewhere (on a ParameterServerStrategy's
//                       ps tasks, behind a RemoteVariableStorage), with no
//                       local component (values() is empty). Read fetches
//                       the value (onto the replica's device in a replica
//                       context); Assign/AssignAdd/AssignSub go to the
//                       storage. With several replicas in sync, a replica
//                       context update is a merge call: the replicas' values
//                       are combined by the aggregation (SUM, MEAN,
//                       ONLY_FIRST_REPLICA; NONE is an error) and applied
//                       once (TF's AggregatingVariable).
// Errors are FAILED_PRECONDITION (TF's ValueError/RuntimeError) with TF's
// wording; shape or dtype mismatches are INVALID_ARGUMENT.
#ifndef DISTRIBUTE_VARIABLES_H_
#define DISTRIBUTE_VARIABLES_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "devices/device.h"
#include "devices/tensor.h"

namespace distribute {

class Strategy;
class StrategyExtended;

// Where a kRemote variable's value lives (parameter servers). The variable
// checks dtype and shape before it calls Update, and Read's result after.
class RemoteVariableStorage {
 public:
  enum class UpdateKind { kAssign, kAdd, kSub };
  virtual ~RemoteVariableStorage() = default;
  // The whole value, for `reader` (a device of the variable's strategy's
  // platform; nullptr: the host): on that device or in host memory.
  virtual absl::StatusOr<devices::Tensor> Read(devices::Device* reader) = 0;
  // Replaces, adds to or subtracts from the value with `value` (the
  // variable's dtype and shape), sent by `writer` (a device of the
  // platform, whose value it is; nullptr: the host); `value` is in host
  // memory or on a device of the platform.
  virtual absl::Status Update(UpdateKind kind, const devices::Tensor& value,
                              devices::Device* writer) = 0;
  // Where the value lives, a device (or task) name per piece.
  virtual std::vector<std::string> Locations() const = 0;
  // The rows `ids` names (Variable::SparseRead's contract; the caller has
  // checked that ids are int32/int64 host ids within the rows), for
  // `reader`, fetching only those rows where they are kept.
  virtual absl::StatusOr<devices::Tensor> Gather(const devices::Tensor& ids,
                                                 devices::Device* reader) = 0;
};

enum class VariableSynchronization { kAuto, kOnWrite, kOnRead, kNone };
enum class VariableAggregation { kNone, kSum, kMean, kOnlyFirstReplica };

absl::string_view VariableSynchronizationName(VariableSynchronization s);
absl::string_view VariableAggregationName(VariableAggregation a);

struct VariableOptions {
  std::string name;
  bool trainable = true;
  VariableSynchronization synchronization = VariableSynchronization::kAuto;
  VariableAggregation aggregation = VariableAggregation::kNone;
};

class Variable {
 public:
  enum class Kind { kPlain, kMirrored, kSyncOnRead, kRemote };

  virtual ~Variable() = default;
  Variable(const Variable&) = delete;
  Variable& operator=(const Variable&) = delete;

  Kind kind() const { return kind_; }
  const std::string& name() const { return options_.name; }
  bool trainable() const { return options_.trainable; }
  VariableSynchronization synchronization() const {
    return options_.synchronization;
  }
  VariableAggregation aggregation() const { return options_.aggregation; }
  // Fixed at creation: every component keeps them through every update.
  devices::DType dtype() const { return dtype_; }
  const devices::Shape& shape() const { return shape_; }
  // The strategy that created it (never null: the default strategy for
  // variables made outside scopes).
  Strategy& strategy() const { return *strategy_; }

  // One component per device the variable lives on (none for kRemote).
  const std::vector<devices::Tensor>& values() const { return components_; }
  // The components' devices, or the storage's locations for kRemote.
  std::vector<std::string> devices() const;

  // The value in this thread's context (see the kinds above). A replica
  // that reads a central variable on another device whose memory either
  // device cannot read (a GPU's) gets a copy on its own device. A value
  // read (here, from values(), or returned by a run) keeps what it read:
  // updates write in place only where no one else holds the component's
  // buffer, and otherwise into a fresh copy (TF's copy-on-write of
  // variables' buffers).
  absl::StatusOr<devices::Tensor> Read() const;
  // The rows `ids` names (TF's sparse_read and embedding_lookup): int32 or
  // int64 ids of any shape, each in [0, rows), give a tensor of shape
  // ids.shape + the variable's row shape, in host memory, read as Read
  // reads (a kRemote variable asks its storage, which on parameter servers
  // fetches only the shards that hold the rows). INVALID_ARGUMENT for a
  // scalar variable, ids of another dtype or not in host memory, or an id
  // out of range (naming it).
  absl::StatusOr<devices::Tensor> SparseRead(const devices::Tensor& ids) const;
  absl::Status Assign(const devices::Tensor& value);
  absl::Status AssignAdd(const devices::Tensor& delta);
  absl::Status AssignSub(const devices::Tensor& delta);

  // The component of replica `replica` (its ReplicaIdInSyncGroup; the only
  // component for a plain variable): what StrategyExtended::Update hands to
  // update functions. Not for kRemote variables, which have none (the
  // process aborts naming the variable).
  devices::Tensor& component_for_replica(int replica);

 private:
  friend class StrategyExtended;
  Variable(Kind kind, Strategy* strategy, VariableOptions options,
           std::vector<devices::Tensor> components)
      : kind_(kind),
        strategy_(strategy),
        options_(std::move(options)),
        dtype_(components.front().dtype()),
        shape_(components.front().shape()),
        components_(std::move(components)) {}
  Variable(Strategy* strategy, VariableOptions options, devices::DType dtype,
           devices::Shape shape, std::shared_ptr<RemoteVariableStorage> remote)
      : kind_(Kind::kRemote),
        strategy_(strategy),
        options_(std::move(options)),
        dtype_(dtype),
        shape_(std::move(shape)),
        remote_(std::move(remote)) {}

  // Before `component` (one of components_) is written: where another
  // tensor shares its buffer, it becomes a copy of its own, so that values
  // read earlier do not change.
  absl::Status CopyOnWrite(devices::Tensor& component) const;

  enum class UpdateKind { kAssign, kAdd, kSub };
  absl::Status Update(UpdateKind kind, const devices::Tensor& value);
  absl::Status UpdateInReplicaContext(UpdateKind kind,
                                      const devices::Tensor& value);
  absl::Status UpdateInCrossReplicaContext(UpdateKind kind,
                                           const devices::Tensor& value);
  // kRemote: the storage's value for `reader`, checked against dtype and
  // shape.
  absl::StatusOr<devices::Tensor> ReadRemote(devices::Device* reader) const;
  absl::Status UpdateRemote(UpdateKind kind, const devices::Tensor& value);

  const Kind kind_;
  Strategy* const strategy_;
  const VariableOptions options_;
  // Read without mu_ by replicas that check an update's operand while
  // another replica replaces a component (copy-on-write): so not read from
  // components_.
  const devices::DType dtype_;
  const devices::Shape shape_;
  std::vector<devices::Tensor> components_;
  const std::shared_ptr<RemoteVariableStorage> remote_;  // kRemote only
  // Serialises cross-replica-context updates and reads of the first
  // component: replicas of a strategy that update a variable it does not
  // own (one made outside every scope) all take that path at once.
  mutable absl::Mutex mu_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_VARIABLES_H_
