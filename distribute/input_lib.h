// Distributed input: a dataset's global batches split across a strategy's
// replicas and placed on their devices, as tf.distribute does it.
//
//   data::Dataset ds = *data::Dataset::FromTensorSlices({x, y})->Batch(64);
//   absl::StatusOr<DistributedDataset> dist =
//       ExperimentalDistributeDataset(*strategy, ds);
//   std::unique_ptr<DistributedIterator> it = dist->MakeIterator();
//   while (true) {
//     auto step = it->GetNextAsOptional();   // one PerReplica per component
//     if (!step.ok()) return step.status();
//     if (!step->has_value()) break;         // end of the data
//     strategy->Run(train_step, {(**step)[0], (**step)[1]});
//   }
//
// ExperimentalDistributeDataset rebatches each global batch into per-replica
// batches with TF's rules (input/batch_split.h: a batch of 7 over 2 replicas
// is 4 + 3; a final partial batch fills the first replicas and gives the
// others an empty batch). DistributeDatasetsFromFunction calls the function
// once per input pipeline with its InputContext (PER_WORKER: one pipeline
// whose successive elements go to the replicas in order; PER_REPLICA: one
// pipeline per replica, the steps going on while any of them has data, the
// others' replicas getting empty batches). Options are checked with TF's
// rules (ValidateInputOptions).
//
// Under a multi-worker strategy (Strategy::NumWorkers() > 1) each worker
// iterates its share of the data (MakeWorkerDataset with the worker count
// and index, sharded by `auto_shard_policy`: AUTO and DATA give each worker
// its pieces of every global batch, OFF gives every worker all the data)
// and places it on its own replicas. Every step, the workers' iterators
// all-reduce whether each still has data (as TF does): all of them go on
// while any has some, a worker without data giving its replicas empty
// batches shaped like its first (FAILED_PRECONDITION for a worker that never
// had any), so their collectives keep meeting; the sequence ends on every
// worker at the same step. DistributeDatasetsFromFunction gives the function
// the worker's InputContext (num_input_pipelines = workers, input_pipeline_id =
// the worker's index).
#ifndef DISTRIBUTE_INPUT_LIB_H_
#define DISTRIBUTE_INPUT_LIB_H_

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "distribute/input/auto_shard.h"
#include "distribute/input/dataset.h"
#include "distribute/input/input_context.h"
#include "distribute/strategy.h"
#include "distribute/values.h"

namespace distribute {

class DistributedIterator {
 public:
  virtual ~DistributedIterator() = default;
  // The next step's values, one PerReplica per element component, each
  // component on its replica's device; std::nullopt at the end.
  virtual absl::StatusOr<std::optional<std::vector<PerReplica>>>
  GetNextAsOptional() = 0;
  // As GetNextAsOptional, with OUT_OF_RANGE at the end (TF's
  // StopIteration).
  absl::StatusOr<std::vector<PerReplica>> GetNext();
};

class DistributedDataset {
 public:
  using Factory =
      std::function<absl::StatusOr<std::unique_ptr<DistributedIterator>>()>;
  explicit DistributedDataset(Factory factory) : factory_(std::move(factory)) {}
  // `replica_elements`: a dataset whose elements are shaped as one
  // replica's values (for element_spec).
  DistributedDataset(Factory factory, data::Dataset replica_elements)
      : factory_(std::move(factory)),
        replica_elements_(std::move(replica_elements)) {}
  // A fresh pass over the data (each call starts again from the beginning).
  absl::StatusOr<std::unique_ptr<DistributedIterator>> MakeIterator() const {
    return factory_();
  }

  // The spec of one replica's value of each component (every replica's is
  // the same; TF's element_spec is a PerReplicaSpec of these when there are
  // several replicas, the spec itself with one): the per-replica batch dim
  // is known when every batch is whole. Errors as data::Dataset's
  // element_spec; UNIMPLEMENTED for a dataset made from a factory alone.
  absl::StatusOr<data::ElementSpec> element_spec() const;

 private:
  Factory factory_;
  std::optional<data::Dataset> replica_elements_;
};

absl::StatusOr<DistributedDataset> ExperimentalDistributeDataset(
    Strategy& strategy, const data::Dataset& dataset,
    const InputOptions& options = {},
    data::AutoShardPolicy auto_shard_policy = data::AutoShardPolicy::kAuto);

using DatasetFn =
    std::function<absl::StatusOr<data::Dataset>(const InputContext&)>;
absl::StatusOr<DistributedDataset> DistributeDatasetsFromFunction(
    Strategy& strategy, const DatasetFn& fn, const InputOptions& options = {});

}  // namespace distribute

#endif  // DISTRIBUTE_INPUT_LIB_H_
