#include "distribute/input/auto_shard.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/input/dataset_node.h"

namespace distribute {
namespace data {
namespace {

using internal::DatasetNode;
using internal::NodePtr;
using internal::ShardRole;

// FILE: TF's RecursivelyHandleOp. Walks input 0 to the source and rebuilds
// the path with the reader's files sharded.
absl::StatusOr<Dataset> ShardByFile(const Dataset& dataset, int64_t num_workers,
                                    int64_t index) {
  const DatasetNode& node = dataset.node();
  switch (node.shard_role()) {
    case ShardRole::kReader: {
      ASSIGN_OR_RETURN(NodePtr sharded, node.ShardFiles(num_workers, index));
      return Dataset(std::move(sharded));
    }
    case ShardRole::kUnshardableSource:
      return absl::NotFoundError(absl::StrCat(
          "Found an unshardable source dataset: ", node.Describe(),
          ". FILE sharding needs a file reader (Dataset::FromFiles); use "
          "AutoShardPolicy::kData to shard by element, or kOff"));
    case ShardRole::kPassThrough:
      break;
  }
  std::vector<Dataset> inputs = node.inputs();
  if (inputs.empty()) {
    return absl::NotFoundError(
        absl::StrCat("Did not find a shardable source: ", node.Describe(),
                     " has no input and is not a file reader"));
  }
  // Every input (a Zip has several) reads its share of its files.
  for (Dataset& input : inputs) {
    ASSIGN_OR_RETURN(Dataset sharded, ShardByFile(input, num_workers, index));
    input = std::move(sharded);
  }
  return Dataset(node.WithInputs(std::move(inputs)));
}

// DATA: every RebatchV2 becomes LegacyRebatch(num_replicas).
Dataset RebatchV2ToLegacy(const Dataset& dataset, int64_t num_replicas) {
  const DatasetNode& node = dataset.node();
  std::vector<Dataset> inputs = node.inputs();
  if (inputs.empty()) return dataset;
  for (Dataset& input : inputs) input = RebatchV2ToLegacy(input, num_replicas);
  if (node.op() == "RebatchV2") {
    return Dataset(
        internal::MakeLegacyRebatchNode(std::move(inputs[0]), num_replicas));
  }
  return Dataset(node.WithInputs(std::move(inputs)));
}

// DATA: TF's ShardByData. Shard at the end, before a final Prefetch, with
// require_non_empty as TF's AddShardNode sets it.
Dataset ShardByData(const Dataset& dataset, int64_t num_workers, int64_t index,
                    int64_t num_replicas) {
  const Dataset rewritten = RebatchV2ToLegacy(dataset, num_replicas);
  const DatasetNode& node = rewritten.node();
  if (node.op() == "Prefetch") {
    std::vector<Dataset> inputs = node.inputs();
    inputs[0] = Dataset(internal::MakeShardNode(
        std::move(inputs[0]), num_workers, index, /*require_non_empty=*/true));
    return Dataset(node.WithInputs(std::move(inputs)));
  }
  return Dataset(internal::MakeShardNode(rewritten, num_workers, index,
                                         /*require_non_empty=*/true));
}

}  // namespace

absl::string_view AutoShardPolicyName(AutoShardPolicy policy) {
  switch (policy) {
    case AutoShardPolicy::kOff:
      return "OFF";
    case AutoShardPolicy::kAuto:
      return "AUTO";
    case AutoShardPolicy::kFile:
      return "FILE";
    case AutoShardPolicy::kData:
      return "DATA";
  }
  return "UNKNOWN";
}

absl::StatusOr<Dataset> AutoShard(const Dataset& dataset, int64_t num_workers,
                                  int64_t index, AutoShardPolicy policy,
                                  int64_t num_replicas_in_sync) {
  if (num_workers < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_workers should be >= 1, currently ", num_workers));
  }
  if (index < 0 || index >= num_workers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "index should be >= 0 and < ", num_workers, ", currently ", index));
  }
  if (num_replicas_in_sync < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_replicas_in_sync should be >= 1, currently ",
                     num_replicas_in_sync));
  }
  if (policy == AutoShardPolicy::kOff || num_workers == 1) return dataset;
  switch (policy) {
    case AutoShardPolicy::kFile:
      return ShardByFile(dataset, num_workers, index);
    case AutoShardPolicy::kData:
      return ShardByData(dataset, num_workers, index, num_replicas_in_sync);
    case AutoShardPolicy::kAuto: {
      absl::StatusOr<Dataset> by_file =
          ShardByFile(dataset, num_workers, index);
      if (by_file.ok() || !absl::IsNotFound(by_file.status())) return by_file;
      return ShardByData(dataset, num_workers, index, num_replicas_in_sync);
    }
    case AutoShardPolicy::kOff:
      break;
  }
  return dataset;
}

}  // namespace data
}  // namespace distribute
