// A worker's share of a dataset given to experimental_distribute_dataset,
// built as TF builds it (input_lib.py, DistributedDataset's
// _create_cloned_datasets_from_dataset), and the per-step gathering of its
// replicas' batches with TF's partial-batch handling.
//
// With N replicas in sync over W workers (R = N / W per worker):
//  1. Rebatch so that one step of all replicas consumes one global batch:
//     if the dataset's batch size G is known (Dataset::StaticBatchSize),
//     Rebatch(BatchSizesForWorker(G, W, R, w)); otherwise LegacyRebatch(N).
//     Then Prefetch(R). (Skipped when N == 1.)
//  2. AutoShard(W, w, policy, N): FILE gives each worker its own files,
//     DATA deals the legacy pieces round-robin to the workers (see
//     auto_shard.h).
// Each step, replica k of the worker takes the worker dataset's next
// element, k = 0 .. R-1, in order.
//
// Example (MirroredStrategy on one machine with 2 replicas):
//   WorkerDatasetOptions options;
//   options.num_replicas_in_sync = 2;
//   absl::StatusOr<data::Dataset> ds =
//       MakeWorkerDataset(*data::Dataset::Range(10).Batch(4), options);
//   std::unique_ptr<data::Iterator> it = ds->MakeIterator();
//   auto step = NextPerReplicaBatches(*it, 2);  // [0,1] and [2,3]
//   // ... [4,5] [6,7], then [8,9] and an empty batch, then std::nullopt.
#ifndef DISTRIBUTE_INPUT_WORKER_DATASET_H_
#define DISTRIBUTE_INPUT_WORKER_DATASET_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "distribute/input/auto_shard.h"
#include "distribute/input/dataset.h"
#include "distribute/input/element.h"

namespace distribute {

struct WorkerDatasetOptions {
  int64_t num_workers = 1;
  int64_t worker_index = 0;
  // Across all workers; a multiple of num_workers.
  int64_t num_replicas_in_sync = 1;
  data::AutoShardPolicy auto_shard_policy = data::AutoShardPolicy::kAuto;
};

// The dataset worker `worker_index` iterates (see the file comment).
// INVALID_ARGUMENT, with TF's message, when num_replicas_in_sync is not a
// multiple of num_workers; INVALID_ARGUMENT for num_workers < 1, a worker
// index out of range or num_replicas_in_sync < 1; the errors of AutoShard
// (NOT_FOUND for kFile without a file reader).
absl::StatusOr<data::Dataset> MakeWorkerDataset(
    const data::Dataset& dataset, const WorkerDatasetOptions& options);

// One step's batches for the worker's num_replicas_per_worker replicas:
// GetNext once per replica, in replica order. std::nullopt when the first
// call ends the sequence (the worker has no data for this step). When the
// data runs out part way, the remaining replicas get an empty batch shaped
// like the first replica's (dim 0 = 0), as TF's distributed iterator gives
// them. Across workers, the distributed iterator (input_lib.h) continues
// while any worker has data (TF all-reduces that flag) and gives a worker
// without data empty batches of its own (EmptyBatchLike of a batch it has
// seen). Errors from GetNext
// are returned; INVALID_ARGUMENT for num_replicas_per_worker < 1.
absl::StatusOr<std::optional<std::vector<data::Element>>> NextPerReplicaBatches(
    data::Iterator& worker_iterator, int64_t num_replicas_per_worker);

}  // namespace distribute

#endif  // DISTRIBUTE_INPUT_WORKER_DATASET_H_
