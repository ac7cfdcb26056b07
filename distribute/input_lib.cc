#include "distribute/input_lib.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devices/device.h"
#include "devices/status_macros.h"
#include "distribute/input/worker_dataset.h"

namespace distribute {
namespace {

// Places one step's per-replica elements on the replicas' devices and
// transposes them into one PerReplica per component.
absl::StatusOr<std::vector<PerReplica>> Place(
    Strategy& strategy, const std::vector<data::Element>& per_replica,
    bool fetch_to_device) {
  const auto& devices = strategy.extended().WorkerDevices();
  if (per_replica.size() != devices.size()) {
    return absl::InternalError(absl::StrCat("input gave ", per_replica.size(),
                                            " batches for ", devices.size(),
                                            " replicas"));
  }
  const size_t components = per_replica.empty() ? 0 : per_replica[0].size();
  std::vector<std::vector<devices::Tensor>> by_component(components);
  for (size_t r = 0; r < per_replica.size(); ++r) {
    if (per_replica[r].size() != components) {
      return absl::InvalidArgumentError(
          absl::StrCat("replica ", r, "'s element has ", per_replica[r].size(),
                       " components but replica 0's has ", components));
    }
    for (size_t c = 0; c < components; ++c) {
      const devices::Tensor& t = per_replica[r][c];
      if (!fetch_to_device) {
        by_component[c].push_back(t);
        continue;
      }
      ASSIGN_OR_RETURN(Mirrored placed,
                       strategy.extended().BroadcastTo(t, {devices[r]}));
      by_component[c].push_back(placed.value(0));
    }
  }
  std::vector<PerReplica> out;
  for (auto& comps : by_component) out.emplace_back(std::move(comps));
  return out;
}

class WorkerIterator : public DistributedIterator {
 public:
  WorkerIterator(Strategy& strategy, std::unique_ptr<data::Iterator> it,
                 bool fetch_to_device)
      : strategy_(strategy),
        it_(std::move(it)),
        fetch_to_device_(fetch_to_device) {}

  absl::StatusOr<std::optional<std::vector<PerReplica>>> GetNextAsOptional()
      override {
    const int64_t replicas =
        static_cast<int64_t>(strategy_.extended().WorkerDevices().size());
    ASSIGN_OR_RETURN(auto step, NextPerReplicaBatches(*it_, replicas));
    if (step.has_value() && !empty_batch_.has_value()) {
      empty_batch_ = data::EmptyBatchLike((*step)[0]);
    }
    if (strategy_.NumWorkers() > 1) {
      // As TF's _calculate_replicas_with_values: the workers go on while any
      // of them has data (one all-reduce per step), and a worker without
      // data gives its replicas empty batches, so that every worker runs the
      // same steps and their collectives meet.
      ASSIGN_OR_RETURN(bool any, AnyWorkerHasData(step.has_value()));
      if (!any) return std::nullopt;
      if (!step.has_value()) {
        if (!empty_batch_.has_value()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "worker ", strategy_.WorkerIndex(),
              " has no input at all while other workers still do, so it "
              "cannot shape the empty batches its replicas need; give every "
              "worker at least one batch (shard the input so that each "
              "worker gets some)"));
        }
        if (!empty_batch_->ok()) return empty_batch_->status();
        step = std::vector<data::Element>(static_cast<size_t>(replicas),
                                          **empty_batch_);
      }
    }
    if (!step.has_value()) return std::nullopt;
    ASSIGN_OR_RETURN(auto placed, Place(strategy_, *step, fetch_to_device_));
    return std::optional<std::vector<PerReplica>>(std::move(placed));
  }

 private:
  // Whether any worker has data this step: a SUM over every worker of
  // whether each has (every worker calls this once per step).
  absl::StatusOr<bool> AnyWorkerHasData(bool mine) {
    std::vector<devices::Tensor> flags;
    for (size_t r = 0; r < strategy_.extended().WorkerDevices().size(); ++r) {
      ASSIGN_OR_RETURN(
          devices::Tensor flag,
          devices::Tensor::Host(devices::DType::kInt32, devices::Shape({})));
      flag.data<int32_t>()[0] = r == 0 && mine ? 1 : 0;
      flags.push_back(std::move(flag));
    }
    ASSIGN_OR_RETURN(
        devices::Tensor total,
        strategy_.Reduce(ReduceOp::kSum, PerReplica(std::move(flags))));
    ASSIGN_OR_RETURN(
        devices::Tensor host,
        devices::ToHostTensor(strategy_.extended().platform(), total));
    // A timing-only simulation has no values to sum: this worker's own word.
    if (!host.has_data()) return mine;
    return host.data<int32_t>()[0] > 0;
  }

  Strategy& strategy_;
  std::unique_ptr<data::Iterator> it_;
  bool fetch_to_device_;
  // Shaped like the first batch this worker had (dim 0 = 0), made once; its
  // error (a scalar component) matters only if an empty batch is needed.
  std::optional<absl::StatusOr<data::Element>> empty_batch_;
};

// PER_REPLICA: one pipeline per replica, one element of each per step.
class PerReplicaIterator : public DistributedIterator {
 public:
  PerReplicaIterator(Strategy& strategy,
                     std::vector<std::unique_ptr<data::Iterator>> its,
                     bool fetch_to_device)
      : strategy_(strategy),
        its_(std::move(its)),
        fetch_to_device_(fetch_to_device) {}

  absl::StatusOr<std::optional<std::vector<PerReplica>>> GetNextAsOptional()
      override {
    // As TF's per-replica input: the step goes on while any replica's
    // pipeline has data, and a replica whose pipeline ran out gets an empty
    // batch shaped like the first one it had (else like another replica's).
    std::vector<std::optional<data::Element>> got(its_.size());
    bool any = false;
    for (size_t r = 0; r < its_.size(); ++r) {
      ASSIGN_OR_RETURN(auto next, its_[r]->GetNext());
      if (next.has_value()) {
        got[r] = *std::move(next);
        if (!empty_batch_[r].has_value()) {
          empty_batch_[r] = data::EmptyBatchLike(*got[r]);
        }
        any = true;
      }
    }
    if (!any) return std::nullopt;
    std::vector<data::Element> step;
    for (size_t r = 0; r < its_.size(); ++r) {
      if (got[r].has_value()) {
        step.push_back(*std::move(got[r]));
        continue;
      }
      const std::optional<absl::StatusOr<data::Element>>* empty =
          &empty_batch_[r];
      for (size_t o = 0; !empty->has_value() && o < its_.size(); ++o) {
        empty = &empty_batch_[o];
      }
      if (!(*empty)->ok()) return (*empty)->status();
      step.push_back(***empty);
    }
    ASSIGN_OR_RETURN(auto placed, Place(strategy_, step, fetch_to_device_));
    return std::optional<std::vector<PerReplica>>(std::move(placed));
  }

 private:
  Strategy& strategy_;
  std::vector<std::unique_ptr<data::Iterator>> its_;
  bool fetch_to_device_;
  // An empty batch shaped like each replica's first element (dim 0 = 0),
  // made once; its error matters only if it is needed.
  std::vector<std::optional<absl::StatusOr<data::Element>>> empty_batch_ =
      std::vector<std::optional<absl::StatusOr<data::Element>>>(its_.size());
};

}  // namespace

absl::StatusOr<std::vector<PerReplica>> DistributedIterator::GetNext() {
  ASSIGN_OR_RETURN(auto next, GetNextAsOptional());
  if (!next.has_value()) {
    return absl::OutOfRangeError(
        "End of sequence: the distributed dataset is exhausted");
  }
  return *std::move(next);
}

absl::StatusOr<data::ElementSpec> DistributedDataset::element_spec() const {
  if (!replica_elements_.has_value()) {
    return absl::UnimplementedError(
        "this distributed dataset was made from an iterator factory alone, "
        "which says nothing of its elements; make it with "
        "ExperimentalDistributeDataset or DistributeDatasetsFromFunction");
  }
  return replica_elements_->element_spec();
}

absl::StatusOr<DistributedDataset> ExperimentalDistributeDataset(
    Strategy& strategy, const data::Dataset& dataset,
    const InputOptions& options, data::AutoShardPolicy auto_shard_policy) {
  RETURN_IF_ERROR(
      ValidateInputOptions(options, InputApi::kExperimentalDistributeDataset));
  WorkerDatasetOptions worker;
  worker.num_replicas_in_sync = strategy.NumReplicasInSync();
  worker.num_workers = strategy.NumWorkers();
  worker.worker_index = strategy.WorkerIndex();
  worker.auto_shard_policy = auto_shard_policy;
  ASSIGN_OR_RETURN(data::Dataset per_worker,
                   MakeWorkerDataset(dataset, worker));
  Strategy* s = &strategy;
  const bool fetch = options.experimental_fetch_to_device;
  data::Dataset ds = std::move(per_worker);
  return DistributedDataset(
      [s, ds, fetch]() -> absl::StatusOr<std::unique_ptr<DistributedIterator>> {
        return std::unique_ptr<DistributedIterator>(
            new WorkerIterator(*s, ds.MakeIterator(), fetch));
      },
      ds);
}

absl::StatusOr<DistributedDataset> DistributeDatasetsFromFunction(
    Strategy& strategy, const DatasetFn& fn, const InputOptions& options) {
  RETURN_IF_ERROR(
      ValidateInputOptions(options, InputApi::kDistributeDatasetsFromFunction));
  const int n = strategy.NumReplicasInSync();
  const int local =
      static_cast<int>(strategy.extended().WorkerDevices().size());
  const int first = strategy.extended().ReplicaIdOffset();
  Strategy* s = &strategy;
  const bool fetch = options.experimental_fetch_to_device;
  if (options.experimental_replication_mode ==
      InputReplicationMode::kPerReplica) {
    // As TF's MultiWorkerMirroredStrategy: a worker's replicas' pipelines
    // would end by themselves, with no agreement across workers, and a
    // worker out of data would leave the others' collectives unmatched.
    if (strategy.NumWorkers() > 1) {
      return absl::UnimplementedError(absl::StrCat(
          "InputReplicationMode.PER_REPLICA is only supported in "
          "distribute_datasets_from_function of MirroredStrategy (one "
          "worker); ",
          strategy.name(), " spans ", strategy.NumWorkers(),
          " workers: use PER_WORKER"));
    }
    std::vector<data::Dataset> datasets;
    for (int r = 0; r < local; ++r) {
      ASSIGN_OR_RETURN(InputContext ctx, InputContext::Create(n, first + r, n));
      ASSIGN_OR_RETURN(data::Dataset ds, fn(ctx));
      datasets.push_back(std::move(ds));
    }
    if (datasets.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          strategy.name(), " has no replica on this worker to read from"));
    }
    return DistributedDataset(
        [s, datasets,
         fetch]() -> absl::StatusOr<std::unique_ptr<DistributedIterator>> {
          std::vector<std::unique_ptr<data::Iterator>> its;
          for (const data::Dataset& d : datasets)
            its.push_back(d.MakeIterator());
          return std::unique_ptr<DistributedIterator>(
              new PerReplicaIterator(*s, std::move(its), fetch));
        },
        datasets.front());
  }
  ASSIGN_OR_RETURN(
      InputContext ctx,
      InputContext::Create(strategy.NumWorkers(), strategy.WorkerIndex(), n));
  ASSIGN_OR_RETURN(data::Dataset ds, fn(ctx));
  data::Dataset dataset = std::move(ds);
  return DistributedDataset(
      [s, dataset,
       fetch]() -> absl::StatusOr<std::unique_ptr<DistributedIterator>> {
        return std::unique_ptr<DistributedIterator>(
            new WorkerIterator(*s, dataset.MakeIterator(), fetch));
      },
      dataset);
}

}  // namespace distribute
