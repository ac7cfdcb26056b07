// The parameter-server side of ParameterServerStrategy and the client that
// reaches it. A ps task keeps variables (whole, or shards of one split
// along its first axis) in a VariableStore served through its Server's
// function registry; a PsClient, on the coordinator or inside a worker's
// function, finds a variable's shards by asking the ps tasks, then reads
// and updates them (reads concatenate the shards, updates split by rows).
//
// Example (a ps task):
//   auto store = distribute::ps::VariableStore::Install(
//       server->function_registry());
// Example (anywhere):
//   distribute::ps::PsClient ps({"127.0.0.1:2300", "127.0.0.1:2301"},
//                               channel_options, absl::Seconds(30));
//   absl::StatusOr<devices::Tensor> w = ps.Read("w");
//   absl::Status s = ps.AssignAdd("w", delta);
#ifndef DISTRIBUTE_PS_PS_CLIENT_H_
#define DISTRIBUTE_PS_PS_CLIENT_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "devices/tensor.h"
#include "distribute/server/channel.h"
#include "distribute/server/function_registry.h"
#include "distribute/server/remote_function_client.h"

namespace distribute {
namespace ps {

// Where one shard of a variable lives: its ps task (an index into the ps
// targets), its index among the variable's shards, and its rows along the
// first axis ([offset, offset + rows)); an unsharded variable is one shard
// of all rows (offset 0, rows the first dimension, or 1 for a scalar).
struct ShardInfo {
  int ps = 0;
  int64_t shard = 0;
  int64_t num_shards = 1;
  int64_t offset = 0;
  int64_t rows = 0;
};

namespace ps_internal {
enum class UpdateKind { kAssign, kAdd, kSub };
}  // namespace ps_internal

// A ps task's variables. Thread-safe.
class VariableStore {
 public:
  // A store serving through `registry` its functions ("__ps.create",
  // "__ps.lookup", "__ps.read", "__ps.assign", "__ps.assign_add",
  // "__ps.assign_sub", "__ps.gather").
  // ALREADY_EXISTS when the registry has them already.
  static absl::StatusOr<std::shared_ptr<VariableStore>> Install(
      FunctionRegistry& registry);

  // How many shards (of all variables) the task holds.
  int64_t size() const;

 private:
  struct Entry {
    devices::Tensor value;
    int64_t num_shards = 1;
    int64_t offset = 0;
  };
  // Key: variable name and shard index.
  using Key = std::pair<std::string, int64_t>;

  absl::StatusOr<std::vector<devices::Tensor>> Create(
      std::vector<devices::Tensor> args);
  absl::StatusOr<std::vector<devices::Tensor>> Lookup(
      std::vector<devices::Tensor> args) const;
  absl::StatusOr<std::vector<devices::Tensor>> Read(
      std::vector<devices::Tensor> args) const;
  absl::StatusOr<std::vector<devices::Tensor>> Gather(
      std::vector<devices::Tensor> args) const;
  absl::StatusOr<std::vector<devices::Tensor>> Update(
      std::vector<devices::Tensor> args, ps_internal::UpdateKind kind);

  mutable absl::Mutex mu_;
  std::map<Key, Entry> vars_ ABSL_GUARDED_BY(mu_);
};

class PsClient {
 public:
  // Reaches the ps tasks at `ps_targets` (in the cluster's task order) with
  // `options`; every call is bounded by `timeout`.
  PsClient(std::vector<std::string> ps_targets, ChannelOptions options,
           absl::Duration timeout);
  PsClient(const PsClient&) = delete;
  PsClient& operator=(const PsClient&) = delete;

  // Creates shard `info` of variable `name` on its ps task with `initial`.
  // Creating the same shard again with a tensor of the same dtype and shape
  // is OK (and keeps the value); another is ALREADY_EXISTS.
  absl::Status CreateShard(absl::string_view name, const ShardInfo& info,
                           const devices::Tensor& initial);

  // The shards of `name`, in shard order, asked of every ps task once and
  // then remembered for the client's life (a variable's layout never
  // changes). NOT_FOUND when no task has it; FAILED_PRECONDITION when
  // the tasks hold an incomplete set of its shards; the errors of the calls
  // (UNAVAILABLE naming a ps task that cannot be reached).
  absl::StatusOr<std::vector<ShardInfo>> Lookup(absl::string_view name);

  // The shards of `name` the ps tasks hold now, sorted by shard, without
  // checking that they are all there (nothing remembered). Empty when no
  // task has it.
  absl::StatusOr<std::vector<ShardInfo>> HeldShards(absl::string_view name);
  // Replaces the value of one shard (`info` as HeldShards gives it).
  absl::Status AssignShard(absl::string_view name, const ShardInfo& info,
                           const devices::Tensor& value);

  // The whole variable (its shards concatenated along the first axis).
  absl::StatusOr<devices::Tensor> Read(absl::string_view name);
  // Adds `delta` (the variable's dtype and shape) to it, shard by shard;
  // each shard's update is atomic, the variable's is not (as TF's sharded
  // variables). INVALID_ARGUMENT for another dtype or shape, a tensor not in
  // host memory, or bool (which has no addition).
  absl::Status AssignAdd(absl::string_view name, const devices::Tensor& delta);
  // Subtracts `delta`, as AssignAdd adds it (TF's assign_sub).
  absl::Status AssignSub(absl::string_view name, const devices::Tensor& delta);
  // Replaces its value, shard by shard.
  absl::Status Assign(absl::string_view name, const devices::Tensor& value);

  // TF's embedding_lookup on the variable: the rows `ids` names (int32 or
  // int64 ids of any shape, each in [0, rows)), shaped ids.shape + the
  // variable's row shape. Each shard that holds some of the rows is asked
  // for just those rows, once; the others and the whole variable are not
  // read. INVALID_ARGUMENT for ids of another dtype, not on the host, or
  // outside the variable's rows (naming the first), or a scalar variable.
  absl::StatusOr<devices::Tensor> Gather(absl::string_view name,
                                         const devices::Tensor& ids);

  const std::vector<std::string>& ps_targets() const { return targets_; }

 private:
  absl::Status Update(absl::string_view name, const devices::Tensor& value,
                      ps_internal::UpdateKind kind);
  absl::StatusOr<std::vector<devices::Tensor>> Call(
      int ps, absl::string_view function,
      const std::vector<devices::Tensor>& args);

  const std::vector<std::string> targets_;
  const absl::Duration timeout_;
  RemoteFunctionClient client_;
  absl::Mutex mu_;
  std::map<std::string, std::vector<ShardInfo>, std::less<>> shards_
      ABSL_GUARDED_BY(mu_);
};

// Rows [offset, offset + rows) of the host tensor `whole` (rank >= 1) as a
// new host tensor: how a variable splits into its shards. INVALID_ARGUMENT
// for a scalar or rows outside `whole`.
absl::StatusOr<devices::Tensor> RowsOf(const devices::Tensor& whole,
                                       int64_t offset, int64_t rows);

// A name as a uint8 tensor (how names travel among tensors) and back.
devices::Tensor NameTensor(absl::string_view name);
absl::StatusOr<std::string> TensorName(const devices::Tensor& tensor);

}  // namespace ps
}  // namespace distribute

#endif  // DISTRIBUTE_PS_PS_CLIENT_H_
