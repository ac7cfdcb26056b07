// Internal: the node behind a data::Dataset, one subclass per op, and the
// factories the Dataset methods call after validating their arguments. The
// node graph is what pipeline rewrites (auto-sharding) walk and rebuild:
// op(), inputs() and WithInputs() are enough to copy a pipeline with one
// node replaced.
//
// Example (a rewrite replacing every RebatchV2 by a LegacyRebatch):
//   const DatasetNode& n = dataset.node();
//   std::vector<Dataset> in = n.inputs();        // rewrite these first
//   Dataset copy(n.WithInputs(std::move(in)));
#ifndef DISTRIBUTE_INPUT_DATASET_NODE_H_
#define DISTRIBUTE_INPUT_DATASET_NODE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "distribute/input/dataset.h"
#include "distribute/input/element.h"

namespace distribute {
namespace data {
namespace internal {

class DatasetNode;
using NodePtr = std::shared_ptr<const DatasetNode>;

// How TF's auto-shard rewrite (grappler auto_shard.cc) treats an op.
enum class ShardRole {
  kPassThrough,        // Walked through toward the source (Map, Batch, ...).
  kReader,             // A file reader: FILE sharding shards its files.
  kUnshardableSource,  // Generator, Range, Tensor, TensorSlice.
};

// Nodes are always owned by std::shared_ptr (the factories below make
// them); iterators keep their node alive through SharedAs().
class DatasetNode : public std::enable_shared_from_this<DatasetNode> {
 public:
  DatasetNode() = default;
  virtual ~DatasetNode() = default;
  DatasetNode(const DatasetNode&) = delete;
  DatasetNode& operator=(const DatasetNode&) = delete;

  // TF's op name without "Dataset": "Range", "Batch", "RebatchV2", ...
  virtual std::string op() const = 0;
  // The op with its arguments, e.g. "Batch(4, drop_remainder=false)".
  virtual std::string Describe() const = 0;
  virtual int64_t Cardinality() const = 0;
  // TF's compute_batch_size for this node (see Dataset::StaticBatchSize).
  virtual int64_t StaticBatchSize() const { return -1; }
  // The structure of this node's elements (Dataset::element_spec), from
  // ComputeSpec: once, or again after an error.
  absl::StatusOr<ElementSpec> Spec() const;
  virtual ShardRole shard_role() const { return ShardRole::kPassThrough; }

  // The datasets this op reads (none for sources, several for Zip, one
  // otherwise).
  virtual std::vector<Dataset> inputs() const = 0;
  // The same op with the same arguments reading `inputs` instead
  // (inputs.size() == inputs().size()). Sources return a copy of
  // themselves.
  virtual NodePtr WithInputs(std::vector<Dataset> inputs) const = 0;

  // Readers only: the reader over the files i with i % num_shards == index.
  // INVALID_ARGUMENT (TF's message) when a shard would get no file.
  virtual absl::StatusOr<NodePtr> ShardFiles(int64_t num_shards,
                                             int64_t index) const;

  // An iterator for the iteration keyed by `key` (see Dataset::MakeIterator;
  // Repeat derives one key per pass, Shuffle mixes it into its seed).
  virtual std::unique_ptr<Iterator> MakeIterator(uint64_t key) const = 0;

  // From the inputs' specs as tf.data does. By default, for sources whose
  // function C++ cannot trace (generators, readers): the spec of this
  // node's first element; FAILED_PRECONDITION when it has none.
  virtual absl::StatusOr<ElementSpec> ComputeSpec() const;

  // This node as its concrete type, shared.
  template <typename T>
  std::shared_ptr<const T> SharedAs() const {
    return std::static_pointer_cast<const T>(shared_from_this());
  }

  // 0, 1, 2, ...: the iteration numbers of Dataset::MakeIterator().
  int64_t NextIteration() const {
    return iterations_.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  mutable std::atomic<int64_t> iterations_{0};
  mutable absl::Mutex spec_mu_;
  mutable std::optional<ElementSpec> spec_ ABSL_GUARDED_BY(spec_mu_);
};

// Base for ops with one input.
class UnaryNode : public DatasetNode {
 public:
  explicit UnaryNode(Dataset input) : input_(std::move(input)) {}
  std::vector<Dataset> inputs() const override { return {input_}; }
  const Dataset& input() const { return input_; }
  // The input's spec: ops that change their elements override it.
  absl::StatusOr<ElementSpec> ComputeSpec() const override {
    return input_.element_spec();
  }

 private:
  const Dataset input_;
};

// The spec of Map's `fn` over `input`: C++ cannot trace it, so it runs on
// the input's first element (FAILED_PRECONDITION when there is none, the
// function's error otherwise); a dim of the result that keeps a dim the
// input's spec leaves unknown (the same position and size in that first
// element, as a batch dim passed through) is unknown.
absl::StatusOr<ElementSpec> MapSpec(const Dataset& input,
                                    const Dataset::MapFn& fn,
                                    absl::string_view op);

// Factories; arguments are validated by the Dataset methods.
NodePtr MakeTensorsNode(Element element);
NodePtr MakeTensorSlicesNode(Element components, int64_t rows);
NodePtr MakeGeneratorNode(Dataset::GeneratorFn fn, int64_t cardinality);
NodePtr MakeRangeNode(int64_t start, int64_t stop, int64_t step);
NodePtr MakeReaderNode(std::vector<std::string> files,
                       Dataset::ReaderFn reader);
NodePtr MakeMapNode(Dataset input, Dataset::MapFn fn);
// parallelism >= 1 threads.
NodePtr MakeParallelMapNode(Dataset input, Dataset::MapFn fn, int parallelism);
NodePtr MakeTakeNode(Dataset input, int64_t count);
NodePtr MakeSkipNode(Dataset input, int64_t count);
NodePtr MakeRepeatNode(Dataset input, int64_t count);
// require_non_empty: TF's ShardDataset attribute set by auto-sharding; at
// the end of an input with fewer elements than shards, GetNext returns
// INVALID_ARGUMENT instead of ending.
NodePtr MakeShardNode(Dataset input, int64_t num_shards, int64_t index,
                      bool require_non_empty);
NodePtr MakeBatchNode(Dataset input, int64_t batch_size, bool drop_remainder);
NodePtr MakeRebatchV2Node(Dataset input, std::vector<int64_t> batch_sizes,
                          bool drop_remainder);
NodePtr MakeLegacyRebatchNode(Dataset input, int64_t num_replicas);
NodePtr MakeShuffleNode(Dataset input, int64_t buffer_size, uint64_t seed,
                        bool reshuffle_each_iteration);
NodePtr MakePrefetchNode(Dataset input, int64_t buffer_size);
NodePtr MakeZipNode(std::vector<Dataset> inputs);

// The message of ShardDataset's require_non_empty check (TF's).
std::string NotEnoughElementsForShardsMessage(int64_t num_elements,
                                              int64_t num_shards);

}  // namespace internal
}  // namespace data
}  // namespace distribute

#endif  // DISTRIBUTE_INPUT_DATASET_NODE_H_
