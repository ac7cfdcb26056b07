#include "distribute/input/dataset.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/input/dataset_node.h"

namespace distribute {
namespace data {

using internal::NodePtr;

namespace internal {

absl::StatusOr<NodePtr> DatasetNode::ShardFiles(int64_t /*num_shards*/,
                                                int64_t /*index*/) const {
  return absl::UnimplementedError(
      absl::StrCat(op(), " is not a file reader; only readers shard files"));
}

std::string NotEnoughElementsForShardsMessage(int64_t num_elements,
                                              int64_t num_shards) {
  return absl::StrCat(
      "There aren't enough elements in this dataset for each shard to have "
      "at least one element (# elems = ",
      num_elements, ", # shards = ", num_shards,
      "). If you are using datasets with distribution strategy, consider "
      "setting the auto sharding policy to either DATA or OFF. Or, split "
      "your input files into a larger number of small files such that number "
      "of files is greater than number of shards/workers.");
}

}  // namespace internal

Dataset::Dataset(std::shared_ptr<const internal::DatasetNode> node)
    : node_(std::move(node)) {}

Dataset Dataset::FromTensors(Element element) {
  return Dataset(internal::MakeTensorsNode(std::move(element)));
}

absl::StatusOr<Dataset> Dataset::FromTensorSlices(Element components) {
  if (components.empty()) {
    return absl::InvalidArgumentError(
        "FromTensorSlices needs at least one component");
  }
  for (size_t c = 0; c < components.size(); ++c) {
    if (components[c].shape().rank() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("FromTensorSlices slices along dim 0, but component ", c,
                       " is a scalar; use FromTensors for a single element"));
    }
  }
  const int64_t rows = components[0].shape().dim(0);
  for (size_t c = 1; c < components.size(); ++c) {
    if (components[c].shape().dim(0) != rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FromTensorSlices needs the same dim 0 in every component: "
          "component 0 has shape ",
          components[0].shape().DebugString(), " and component ", c,
          " has shape ", components[c].shape().DebugString()));
    }
  }
  RETURN_IF_ERROR(CheckHostElement(components));
  return Dataset(internal::MakeTensorSlicesNode(std::move(components), rows));
}

Dataset Dataset::FromGenerator(GeneratorFn fn, int64_t cardinality) {
  if (cardinality < 0 && cardinality != kInfiniteCardinality) {
    cardinality = kUnknownCardinality;
  }
  return Dataset(internal::MakeGeneratorNode(std::move(fn), cardinality));
}

Dataset Dataset::Range(int64_t stop) {
  return Dataset(internal::MakeRangeNode(0, stop, 1));
}

absl::StatusOr<Dataset> Dataset::Range(int64_t start, int64_t stop,
                                       int64_t step) {
  if (step == 0) {
    return absl::InvalidArgumentError("step must be a non-zero integer.");
  }
  return Dataset(internal::MakeRangeNode(start, stop, step));
}

absl::StatusOr<Dataset> Dataset::FromFiles(std::vector<std::string> files,
                                           ReaderFn reader) {
  if (!reader) {
    return absl::InvalidArgumentError("FromFiles needs a reader function");
  }
  return Dataset(internal::MakeReaderNode(std::move(files), std::move(reader)));
}

absl::StatusOr<Dataset> Dataset::Zip(std::vector<Dataset> datasets) {
  if (datasets.empty()) {
    return absl::InvalidArgumentError("Zip needs at least one dataset");
  }
  return Dataset(internal::MakeZipNode(std::move(datasets)));
}

Dataset Dataset::Map(MapFn fn) const {
  return Dataset(internal::MakeMapNode(*this, std::move(fn)));
}

absl::StatusOr<Dataset> Dataset::Map(MapFn fn,
                                     int64_t num_parallel_calls) const {
  if (num_parallel_calls == kAutotune) {
    num_parallel_calls =
        std::max<int64_t>(1, std::thread::hardware_concurrency());
  }
  if (num_parallel_calls <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_parallel_calls must be positive or kAutotune (",
                     kAutotune, "), got ", num_parallel_calls));
  }
  // More threads than this would only contend: the bound is the machine's.
  const int64_t threads = std::min<int64_t>(
      num_parallel_calls,
      std::max<int64_t>(64, 4 * std::thread::hardware_concurrency()));
  return Dataset(internal::MakeParallelMapNode(*this, std::move(fn),
                                               static_cast<int>(threads)));
}

absl::StatusOr<Dataset> Dataset::Batch(int64_t batch_size,
                                       bool drop_remainder) const {
  if (batch_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Batch size must be greater than zero (got ", batch_size, ")."));
  }
  return Dataset(internal::MakeBatchNode(*this, batch_size, drop_remainder));
}

absl::StatusOr<Dataset> Dataset::Shard(int64_t num_shards,
                                       int64_t index) const {
  if (num_shards <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Number of shards must be greater than zero (currently "
                     "num_shards = ",
                     num_shards, ")."));
  }
  if (index < 0 || index >= num_shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("Index must be between 0 and ", num_shards - 1,
                     " (currently index = ", index, ")."));
  }
  return Dataset(internal::MakeShardNode(*this, num_shards, index,
                                         /*require_non_empty=*/false));
}

Dataset Dataset::Repeat(int64_t count) const {
  return Dataset(internal::MakeRepeatNode(*this, count));
}

absl::StatusOr<Dataset> Dataset::Shuffle(int64_t buffer_size, uint64_t seed,
                                         bool reshuffle_each_iteration) const {
  if (buffer_size <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "buffer_size must be greater than zero (got ", buffer_size, ")."));
  }
  return Dataset(internal::MakeShuffleNode(*this, buffer_size, seed,
                                           reshuffle_each_iteration));
}

Dataset Dataset::Take(int64_t count) const {
  return Dataset(internal::MakeTakeNode(*this, count));
}

Dataset Dataset::Skip(int64_t count) const {
  return Dataset(internal::MakeSkipNode(*this, count));
}

absl::StatusOr<Dataset> Dataset::Prefetch(int64_t buffer_size) const {
  if (buffer_size < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("buffer_size must be >= 0 (0 disables prefetching), got ",
                     buffer_size));
  }
  return Dataset(internal::MakePrefetchNode(*this, buffer_size));
}

absl::StatusOr<Dataset> Dataset::Rebatch(std::vector<int64_t> batch_sizes,
                                         bool drop_remainder) const {
  if (batch_sizes.empty()) {
    return absl::InvalidArgumentError("Rebatch needs at least one batch size");
  }
  bool any_positive = false;
  for (size_t i = 0; i < batch_sizes.size(); ++i) {
    if (batch_sizes[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("batch_sizes[", i, "] is ", batch_sizes[i],
                       "; every batch size must be >= 0"));
    }
    any_positive = any_positive || batch_sizes[i] > 0;
  }
  if (!any_positive) {
    return absl::InvalidArgumentError(
        "Rebatch needs at least one batch size > 0; with only zeros it "
        "would never consume its input");
  }
  return Dataset(internal::MakeRebatchV2Node(*this, std::move(batch_sizes),
                                             drop_remainder));
}

absl::StatusOr<Dataset> Dataset::LegacyRebatch(int64_t num_replicas) const {
  if (num_replicas <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_replicas must be greater than zero (got ", num_replicas, ")."));
  }
  return Dataset(internal::MakeLegacyRebatchNode(*this, num_replicas));
}

int64_t Dataset::Cardinality() const { return node_->Cardinality(); }

int64_t Dataset::StaticBatchSize() const { return node_->StaticBatchSize(); }

absl::StatusOr<ElementSpec> Dataset::element_spec() const {
  return node_->Spec();
}

namespace internal {

absl::StatusOr<ElementSpec> DatasetNode::Spec() const {
  absl::MutexLock lock(&spec_mu_);
  if (spec_.has_value()) return *spec_;
  absl::StatusOr<ElementSpec> spec = ComputeSpec();
  // An error (a reader that failed once) is not kept: asked again, the
  // spec is computed again.
  if (spec.ok()) spec_ = *spec;
  return spec;
}

absl::StatusOr<ElementSpec> MapSpec(const Dataset& input,
                                    const Dataset::MapFn& fn,
                                    absl::string_view op) {
  ASSIGN_OR_RETURN(ElementSpec in, input.element_spec());
  std::unique_ptr<Iterator> it = input.MakeIterator(/*iteration=*/0);
  ASSIGN_OR_RETURN(std::optional<Element> first, it->GetNext());
  if (!first.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the element spec of ", op,
        " comes from its function applied to the first element of its input "
        "(C++ cannot trace the function), and the input has none"));
  }
  const Element& element = *first;
  ASSIGN_OR_RETURN(Element mapped, fn(element));
  ElementSpec out = SpecOf(mapped);
  for (TensorSpec& t : out) {
    std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
    for (size_t d = 0; d < dims.size(); ++d) {
      for (size_t c = 0; c < in.size() && c < element.size(); ++c) {
        const absl::Span<const int64_t> in_dims = in[c].dims();
        if (d < in_dims.size() && in_dims[d] == kUnknownDim &&
            element[c].shape().dims()[d] == dims[d]) {
          dims[d] = kUnknownDim;
        }
      }
    }
    t = TensorSpec(t.dtype(), dims);
  }
  return out;
}

absl::StatusOr<ElementSpec> DatasetNode::ComputeSpec() const {
  std::unique_ptr<Iterator> it = MakeIterator(/*key=*/0);
  ASSIGN_OR_RETURN(std::optional<Element> first, it->GetNext());
  if (!first.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the element spec of ", Describe(),
        " comes from its first element (C++ cannot trace its function), and "
        "it has none"));
  }
  return SpecOf(*first);
}

}  // namespace internal

std::string Dataset::DebugString() const {
  std::vector<Dataset> inputs = node_->inputs();
  if (inputs.empty()) return node_->Describe();
  return absl::StrCat(inputs[0].DebugString(), " -> ", node_->Describe());
}

std::unique_ptr<Iterator> Dataset::MakeIterator() const {
  return MakeIterator(node_->NextIteration());
}

std::unique_ptr<Iterator> Dataset::MakeIterator(int64_t iteration) const {
  return node_->MakeIterator(static_cast<uint64_t>(iteration));
}

}  // namespace data
}  // namespace distribute
