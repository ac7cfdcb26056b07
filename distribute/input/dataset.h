// data::Dataset: tf.data in small. An immutable, shareable description of an
// input pipeline (sources and transformations over host tensors) that makes
// iterators; every op mirrors the tf.data op of the same name and its
// semantics, including cardinality (known, infinite, unknown).
//
// Example:
//   Element all = {features /*[100,8]*/, labels /*[100]*/};
//   absl::StatusOr<Dataset> ds = Dataset::FromTensorSlices(all);
//   ds = ds->Shuffle(/*buffer_size=*/100, /*seed=*/7);
//   ds = ds->Batch(/*batch_size=*/32);                  // 32, 32, 32, 4 rows
//   ds = ds->Prefetch(/*buffer_size=*/2);               // a producer thread
//   std::unique_ptr<Iterator> it = ds->MakeIterator();
//   while (true) {
//     absl::StatusOr<std::optional<Element>> batch = it->GetNext();
//     if (!batch.ok()) return batch.status();
//     if (!batch->has_value()) break;                   // end of sequence
//     Train(**batch);
//   }
//
// Ops that can reject their arguments return absl::StatusOr<Dataset>; the
// others (Map, Repeat, Take, Skip) accept every value as tf.data does.
// Element-level errors (a Map function failing, mismatched shapes in Batch)
// surface from GetNext, in order.
//
// Randomness is deterministic: Shuffle draws from a counter-based generator
// keyed by its seed and, with reshuffle_each_iteration, by the iteration
// (see MakeIterator), never from the wall clock or std:: distributions.
#ifndef DISTRIBUTE_INPUT_DATASET_H_
#define DISTRIBUTE_INPUT_DATASET_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distribute/input/element.h"

namespace distribute {
namespace data {

// Cardinality() values besides a count, as tf.data.INFINITE_CARDINALITY and
// tf.data.UNKNOWN_CARDINALITY.
inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;

namespace internal {
class DatasetNode;
}  // namespace internal

// Produces a dataset's elements in order. Not thread-safe: one thread at a
// time calls GetNext (Prefetch runs its producer on its own thread, behind
// this interface). Destroying an iterator stops and joins any threads it
// started.
class Iterator {
 public:
  Iterator() = default;
  virtual ~Iterator() = default;
  Iterator(const Iterator&) = delete;
  Iterator& operator=(const Iterator&) = delete;

  // The next element; std::nullopt at the end of the sequence (and on every
  // call after it). An error takes the place of the element it concerns;
  // as in tf.data, a later call goes on with the following elements.
  virtual absl::StatusOr<std::optional<Element>> GetNext() = 0;
};

class Dataset {
 public:
  // Called with 0, 1, 2, ... for each iterator; returns the element with
  // that index, std::nullopt to end the sequence, or an error for that
  // element. Calls come from one thread at a time (maybe a Prefetch
  // producer thread).
  using GeneratorFn =
      std::function<absl::StatusOr<std::optional<Element>>(int64_t index)>;
  // Transforms one element. Called from one thread at a time (by Map; from
  // several at once by a parallel Map).
  using MapFn = std::function<absl::StatusOr<Element>(Element)>;
  // Opens one file (any named source) as a dataset of records.
  using ReaderFn = std::function<absl::StatusOr<Dataset>(const std::string&)>;

  // --- Sources -------------------------------------------------------------

  // One element: `element` itself (tf.data.Dataset.from_tensors).
  static Dataset FromTensors(Element element);

  // One element per row of the components (tf.data from_tensor_slices):
  // element i is {components[0][i], components[1][i], ...}. INVALID_ARGUMENT
  // when there are no components, a component is a scalar or not a host
  // tensor, or the components disagree on dim 0 (naming them).
  static absl::StatusOr<Dataset> FromTensorSlices(Element components);

  // Elements from `fn` (tf.data from_generator). `cardinality` is what
  // Cardinality() reports: a count, kInfiniteCardinality or
  // kUnknownCardinality (the default); it is not enforced.
  static Dataset FromGenerator(GeneratorFn fn,
                               int64_t cardinality = kUnknownCardinality);

  // The int64 scalars 0, 1, ..., stop - 1 (empty for stop <= 0).
  static Dataset Range(int64_t stop);
  // start, start + step, ... up to but excluding stop (tf.data range).
  // INVALID_ARGUMENT for step == 0.
  static absl::StatusOr<Dataset> Range(int64_t start, int64_t stop,
                                       int64_t step);

  // The records of each file in turn: reader(files[0])'s elements, then
  // reader(files[1])'s, ... (tf.data's reader datasets, TFRecordDataset over
  // a list of files). This is the source that AutoShardPolicy::kFile shards
  // by file. An error opening a file is returned once, then the next file
  // is read. INVALID_ARGUMENT for an empty reader.
  static absl::StatusOr<Dataset> FromFiles(std::vector<std::string> files,
                                           ReaderFn reader);

  // Elements of `datasets` side by side (tf.data.Dataset.zip): element i
  // holds the components of every dataset's element i, in order (tf.data's
  // tuple, flattened); it ends with the shortest dataset. An input's error
  // takes the place of that element. FILE auto-sharding shards every input.
  // INVALID_ARGUMENT for no datasets.
  static absl::StatusOr<Dataset> Zip(std::vector<Dataset> datasets);

  // --- Transformations -----------------------------------------------------

  // fn(element) for every element; an error from fn is returned by GetNext
  // in place of that element.
  Dataset Map(MapFn fn) const;
  // The same on `num_parallel_calls` threads (tf.data's map with
  // num_parallel_calls and deterministic=True): up to that many elements
  // are read ahead and mapped at once, on threads started by the first
  // GetNext and joined when the iterator is destroyed; elements and errors
  // come out in input order, so the output equals Map's. fn must be
  // thread-safe. kAutotune uses one thread per hardware thread; counts
  // past max(64, 4 per hardware thread) use that many threads.
  // INVALID_ARGUMENT for 0 or a negative count other than kAutotune.
  static constexpr int64_t kAutotune = -1;
  absl::StatusOr<Dataset> Map(MapFn fn, int64_t num_parallel_calls) const;

  // Stacks `batch_size` consecutive elements along a new dim 0. The last
  // batch is partial unless drop_remainder. INVALID_ARGUMENT for
  // batch_size <= 0 ("Batch size must be greater than zero."); elements
  // whose components differ in dtype or shape give INVALID_ARGUMENT from
  // GetNext naming the component.
  absl::StatusOr<Dataset> Batch(int64_t batch_size,
                                bool drop_remainder = false) const;

  // Element i goes to shard i % num_shards; this dataset is shard `index`.
  // INVALID_ARGUMENT for num_shards <= 0 or index outside [0, num_shards),
  // with tf.data's messages.
  absl::StatusOr<Dataset> Shard(int64_t num_shards, int64_t index) const;

  // The elements `count` times over; count < 0 repeats forever. As in
  // tf.data, a pass that yields nothing ends the sequence (no endless loop
  // over an empty input).
  Dataset Repeat(int64_t count = -1) const;

  // Randomly shuffles with tf.data's algorithm: a buffer holds up to
  // buffer_size elements; each GetNext tops it up from the input and
  // returns a uniformly chosen buffered element (so output i is one of the
  // first i + buffer_size inputs). Deterministic for a seed. With
  // reshuffle_each_iteration, each iteration (see MakeIterator, and each pass
  // of a Repeat above it) gets its own order; without it every iteration
  // repeats the first one's order. INVALID_ARGUMENT for buffer_size <= 0.
  absl::StatusOr<Dataset> Shuffle(int64_t buffer_size, uint64_t seed,
                                  bool reshuffle_each_iteration = true) const;

  // The first `count` elements (all of them when count < 0).
  Dataset Take(int64_t count) const;
  // All but the first `count` elements (none when count < 0, as tf.data's
  // skip(-1)).
  Dataset Skip(int64_t count) const;

  // Produces up to `buffer_size` elements ahead on a background thread
  // (started by the first GetNext, joined when the iterator is destroyed).
  // Order and errors are those of the input. buffer_size 0 prefetches
  // nothing (no thread). INVALID_ARGUMENT for buffer_size < 0.
  absl::StatusOr<Dataset> Prefetch(int64_t buffer_size) const;

  // tf.data.Dataset.rebatch: re-slices the stream of rows of this batched
  // dataset into batches of batch_sizes[0], batch_sizes[1], ... (cycling),
  // taking rows across input batch boundaries. At the end of the input a
  // partial batch is returned unless drop_remainder. A size of 0 yields an
  // empty batch (dim 0 = 0). INVALID_ARGUMENT unless batch_sizes is
  // non-empty, every size >= 0 and one is > 0.
  absl::StatusOr<Dataset> Rebatch(std::vector<int64_t> batch_sizes,
                                  bool drop_remainder = false) const;

  // TF's legacy _RebatchDataset: splits every input batch of B rows into
  // num_replicas batches of ceil(B / num_replicas) rows, the last ones
  // smaller or empty (range(8).batch(4) over 3 gives [0,1] [2,3] [] [4,5]
  // [6,7] []). Used by tf.distribute when the batch size is not known
  // statically and with DATA auto-sharding. INVALID_ARGUMENT for
  // num_replicas <= 0.
  absl::StatusOr<Dataset> LegacyRebatch(int64_t num_replicas) const;

  // --- Inspection ----------------------------------------------------------

  // The number of elements, or kInfiniteCardinality / kUnknownCardinality,
  // computed as tf.data does without running the pipeline.
  int64_t Cardinality() const;

  // The batch size of the last Batch() in the pipeline, found by walking up
  // through ops that keep dim 0 (Prefetch, Repeat, Shard, Shuffle, Skip,
  // Take), or -1 when another op is met first: TF's compute_batch_size,
  // which tf.distribute uses to choose how to rebatch.
  int64_t StaticBatchSize() const;

  // The dtype and shape of each component of the elements (tf.data's
  // element_spec), without running the pipeline where the ops fix them:
  // sources of tensors and ranges, and Batch, Rebatch, Zip and the ops that
  // keep their input's elements (Take, Skip, Repeat, Shard, Shuffle,
  // Prefetch) from their inputs; a Batch that may end with a partial batch
  // has an unknown (kUnknownDim) batch dim, as TF's None. A Map, generator
  // or reader runs a function C++ cannot trace: a Map's spec is its
  // function applied once to the input's first element, with the dims it
  // keeps from dims the input leaves unknown unknown; a generator's or
  // reader's is that of its first element (FAILED_PRECONDITION when there
  // is none; the function's error otherwise). A spec is kept once made;
  // an error is not.
  absl::StatusOr<ElementSpec> element_spec() const;

  // The pipeline from source to this op, e.g.
  // "Range(0, 10, 1) -> Batch(4, drop_remainder=false)".
  std::string DebugString() const;

  // A new iterator. Iterators made with the same `iteration` produce the
  // same elements; MakeIterator() numbers iterations 0, 1, 2, ... in the
  // order this dataset (or any copy of it) makes them.
  std::unique_ptr<Iterator> MakeIterator() const;
  std::unique_ptr<Iterator> MakeIterator(int64_t iteration) const;

  // --- For op implementations and pipeline rewrites (auto-sharding) --------

  explicit Dataset(std::shared_ptr<const internal::DatasetNode> node);
  const internal::DatasetNode& node() const { return *node_; }

 private:
  std::shared_ptr<const internal::DatasetNode> node_;
};

}  // namespace data
}  // namespace distribute

#endif  // DISTRIBUTE_INPUT_DATASET_H_
