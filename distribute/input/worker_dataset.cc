#include "distribute/input/worker_dataset.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/input/batch_split.h"

namespace distribute {

absl::StatusOr<data::Dataset> MakeWorkerDataset(
    const data::Dataset& dataset, const WorkerDatasetOptions& options) {
  const int64_t num_workers = options.num_workers;
  const int64_t worker = options.worker_index;
  const int64_t num_replicas = options.num_replicas_in_sync;
  if (num_workers < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_workers must be >= 1, got ", num_workers));
  }
  if (worker < 0 || worker >= num_workers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker_index must be in [0, ", num_workers, "), got ", worker));
  }
  if (num_replicas < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_replicas_in_sync must be >= 1, got ", num_replicas));
  }
  data::Dataset rebatched = dataset;
  if (num_replicas > 1) {
    if (num_replicas % num_workers != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tf.distribute expects every worker to have the same number of "
          "replicas. However, encountered `num_replicas_in_sync` (",
          num_replicas, ") that cannot be divided by `num_workers` (",
          num_workers, ")"));
    }
    const int64_t per_worker = num_replicas / num_workers;
    const int64_t batch_size = dataset.StaticBatchSize();
    ASSIGN_OR_RETURN(
        data::Dataset split, [&]() -> absl::StatusOr<data::Dataset> {
          if (batch_size == -1) return dataset.LegacyRebatch(num_replicas);
          ASSIGN_OR_RETURN(
              std::vector<int64_t> sizes,
              BatchSizesForWorker(batch_size, num_workers, per_worker, worker));
          return dataset.Rebatch(std::move(sizes));
        }());
    ASSIGN_OR_RETURN(data::Dataset prefetched, split.Prefetch(per_worker));
    rebatched = std::move(prefetched);
  }
  return data::AutoShard(rebatched, num_workers, worker,
                         options.auto_shard_policy, num_replicas);
}

absl::StatusOr<std::optional<std::vector<data::Element>>> NextPerReplicaBatches(
    data::Iterator& worker_iterator, int64_t num_replicas_per_worker) {
  if (num_replicas_per_worker < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_replicas_per_worker must be >= 1, got ", num_replicas_per_worker));
  }
  std::vector<data::Element> batches;
  batches.reserve(static_cast<size_t>(num_replicas_per_worker));
  while (static_cast<int64_t>(batches.size()) < num_replicas_per_worker) {
    ASSIGN_OR_RETURN(std::optional<data::Element> next,
                     worker_iterator.GetNext());
    if (!next.has_value()) break;
    batches.push_back(std::move(*next));
  }
  if (batches.empty()) return std::nullopt;
  while (static_cast<int64_t>(batches.size()) < num_replicas_per_worker) {
    ASSIGN_OR_RETURN(data::Element empty, data::EmptyBatchLike(batches[0]));
    batches.push_back(std::move(empty));
  }
  return std::optional<std::vector<data::Element>>(std::move(batches));
}

}  // namespace distribute
