// Batching: Batch, Rebatch (tf.data's RebatchDatasetV2) and LegacyRebatch
// (tf.distribute's _LegacyRebatchDataset, RebatchDataset in TF's kernels).

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/status_macros.h"
#include "distribute/input/dataset_node.h"
#include "distribute/input/element.h"

namespace distribute {
namespace data {
namespace internal {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// --- Batch ------------------------------------------------------------------

class BatchNode : public UnaryNode {
 public:
  BatchNode(Dataset input, int64_t batch_size, bool drop_remainder)
      : UnaryNode(std::move(input)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder) {}
  std::string op() const override { return "Batch"; }
  // A new dim 0: batch_size when no partial batch can come out (TF).
  absl::StatusOr<ElementSpec> ComputeSpec() const override {
    ASSIGN_OR_RETURN(ElementSpec in, input().element_spec());
    ElementSpec out = in;
    for (TensorSpec& t : out) {
      std::vector<int64_t> dims = {drop_remainder_ ? batch_size_ : kUnknownDim};
      dims.insert(dims.end(), t.dims().begin(), t.dims().end());
      t = TensorSpec(t.dtype(), dims);
    }
    return out;
  }
  std::string Describe() const override {
    return absl::StrCat("Batch(", batch_size_,
                        ", drop_remainder=", drop_remainder_ ? "true" : "false",
                        ")");
  }
  int64_t Cardinality() const override {
    const int64_t n = input().Cardinality();
    if (n < 0) return n;
    return drop_remainder_ ? n / batch_size_ : CeilDiv(n, batch_size_);
  }
  int64_t StaticBatchSize() const override { return batch_size_; }
  NodePtr WithInputs(std::vector<Dataset> inputs) const override {
    return std::make_shared<BatchNode>(std::move(inputs[0]), batch_size_,
                                       drop_remainder_);
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t key) const override {
    class It : public Iterator {
     public:
      It(std::shared_ptr<const BatchNode> node, uint64_t key)
          : node_(std::move(node)),
            input_(node_->input().MakeIterator(static_cast<int64_t>(key))) {}
      absl::StatusOr<std::optional<Element>> GetNext() override {
        if (done_) return std::nullopt;
        std::vector<Element> elements;
        elements.reserve(
            static_cast<size_t>(std::min<int64_t>(node_->batch_size_, 1024)));
        while (static_cast<int64_t>(elements.size()) < node_->batch_size_) {
          absl::StatusOr<std::optional<Element>> next = input_->GetNext();
          // As in tf.data, an input error is returned and the elements
          // collected for this batch are dropped.
          RETURN_IF_ERROR(next.status());
          if (!next->has_value()) {
            done_ = true;
            break;
          }
          elements.push_back(std::move(**next));
        }
        if (elements.empty()) return std::nullopt;
        if (node_->drop_remainder_ &&
            static_cast<int64_t>(elements.size()) < node_->batch_size_) {
          return std::nullopt;
        }
        ASSIGN_OR_RETURN(Element stacked, StackElements(elements));
        return std::optional<Element>(std::move(stacked));
      }

     private:
      const std::shared_ptr<const BatchNode> node_;
      const std::unique_ptr<Iterator> input_;
      bool done_ = false;
    };
    return std::make_unique<It>(SharedAs<BatchNode>(), key);
  }

 private:
  const int64_t batch_size_;
  const bool drop_remainder_;
};

// --- RebatchV2 (Dataset::Rebatch) -------------------------------------------

class RebatchV2Node : public UnaryNode {
 public:
  RebatchV2Node(Dataset input, std::vector<int64_t> batch_sizes,
                bool drop_remainder)
      : UnaryNode(std::move(input)),
        batch_sizes_(std::move(batch_sizes)),
        drop_remainder_(drop_remainder) {}
  std::string op() const override { return "RebatchV2"; }
  absl::StatusOr<ElementSpec> ComputeSpec() const override {
    ASSIGN_OR_RETURN(ElementSpec in, input().element_spec());
    const bool same =
        std::all_of(batch_sizes_.begin(), batch_sizes_.end(),
                    [&](int64_t b) { return b == batch_sizes_.front(); });
    // TF's static batch dim (_RebatchDataset): the sizes are equal, and
    // either the remainder is dropped or they split the input's known
    // batch dim whole.
    ElementSpec out = in;
    for (TensorSpec& t : out) {
      if (t.dims().empty()) continue;
      std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
      const int64_t b = batch_sizes_.front();
      const bool whole =
          same && b > 0 &&
          (drop_remainder_ || (dims[0] != kUnknownDim && dims[0] % b == 0));
      dims[0] = whole ? b : kUnknownDim;
      t = TensorSpec(t.dtype(), dims);
    }
    return out;
  }
  std::string Describe() const override {
    return absl::StrCat(
        "Rebatch([", absl::StrJoin(batch_sizes_, ", "),
        "], drop_remainder=", drop_remainder_ ? "true" : "false", ")");
  }
  int64_t Cardinality() const override {
    // The number of output batches depends on the input batches' sizes.
    const int64_t n = input().Cardinality();
    if (n == 0 || n == kInfiniteCardinality) return n;
    return kUnknownCardinality;
  }
  NodePtr WithInputs(std::vector<Dataset> inputs) const override {
    return std::make_shared<RebatchV2Node>(std::move(inputs[0]), batch_sizes_,
                                           drop_remainder_);
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t key) const override;

 private:
  friend class RebatchV2Iterator;
  const std::vector<int64_t> batch_sizes_;
  const bool drop_remainder_;
};

// TF's RebatchDatasetV2 iterator: each output batch takes the next
// batch_sizes[i] rows of the input stream, across input batch boundaries.
class RebatchV2Iterator : public Iterator {
 public:
  RebatchV2Iterator(std::shared_ptr<const RebatchV2Node> node, uint64_t key)
      : node_(std::move(node)),
        input_(node_->input().MakeIterator(static_cast<int64_t>(key))) {}

  absl::StatusOr<std::optional<Element>> GetNext() override {
    if (end_of_input_) return std::nullopt;
    const int64_t desired = node_->batch_sizes_[index_];
    std::vector<Element> parts;
    int64_t rows = 0;
    while (rows < desired) {
      if (offset_ < 0) {
        RETURN_IF_ERROR(FetchInput());
        if (end_of_input_) break;
        if (offset_ < 0) continue;  // A batch with zero rows.
      }
      const int64_t take = std::min(desired - rows, current_rows_ - offset_);
      ASSIGN_OR_RETURN(Element part,
                       SliceElement(current_, offset_, offset_ + take));
      parts.push_back(std::move(part));
      rows += take;
      offset_ += take;
      if (offset_ == current_rows_) offset_ = -1;
    }
    index_ = (index_ + 1) % node_->batch_sizes_.size();
    // The end: no rows where some were wanted, or a short batch that
    // drop_remainder discards (only possible at the end of the input).
    if ((rows == 0 && desired > 0) ||
        (node_->drop_remainder_ && rows < desired)) {
      end_of_input_ = true;
      return std::nullopt;
    }
    if (desired == 0) {
      // A replica that is meant to get nothing this step gets an empty
      // batch, shaped like the input's batches. TF takes the shape from
      // the static element spec; without one we look at the next input
      // batch (kept, not consumed), and end if there is none at all.
      if (!have_shape_) {
        RETURN_IF_ERROR(FetchInput());
        if (end_of_input_) return std::nullopt;
      }
      ASSIGN_OR_RETURN(Element empty, EmptyBatchLike(shape_));
      return std::optional<Element>(std::move(empty));
    }
    if (parts.size() == 1) return std::optional<Element>(std::move(parts[0]));
    ASSIGN_OR_RETURN(Element joined, ConcatElements(parts));
    return std::optional<Element>(std::move(joined));
  }

 private:
  // Reads the next input batch into current_ (offset_ 0), or sets
  // end_of_input_. Input batches must have rank >= 1 and one dim 0.
  absl::Status FetchInput() {
    ASSIGN_OR_RETURN(std::optional<Element> next, input_->GetNext());
    if (!next.has_value()) {
      end_of_input_ = true;
      return absl::OkStatus();
    }
    for (size_t c = 0; c < next->size(); ++c) {
      const devices::Tensor& t = (*next)[c];
      if (t.shape().rank() == 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Input element must have a non-scalar value in each component "
            "(component ",
            c, " is a scalar); Rebatch needs a batched dataset."));
      }
      if (t.shape().dim(0) != (*next)[0].shape().dim(0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "Input element must have the same batch size in each component. "
            "Component 0 had size ",
            (*next)[0].shape().dim(0), " but component ", c, " had size ",
            t.shape().dim(0), "."));
      }
    }
    if (next->empty()) {
      return absl::InvalidArgumentError(
          "Rebatch needs elements with at least one component");
    }
    current_ = std::move(*next);
    current_rows_ = current_[0].shape().dim(0);
    shape_ = current_;
    have_shape_ = true;
    offset_ = current_rows_ == 0 ? -1 : 0;
    return absl::OkStatus();
  }

  const std::shared_ptr<const RebatchV2Node> node_;
  const std::unique_ptr<Iterator> input_;
  bool end_of_input_ = false;
  size_t index_ = 0;
  Element current_;
  int64_t current_rows_ = 0;
  int64_t offset_ = -1;  // -1: no rows left in current_.
  Element shape_;        // The last input batch seen, for empty batches.
  bool have_shape_ = false;
};

std::unique_ptr<Iterator> RebatchV2Node::MakeIterator(uint64_t key) const {
  return std::make_unique<RebatchV2Iterator>(SharedAs<RebatchV2Node>(), key);
}

// --- LegacyRebatch ----------------------------------------------------------

class LegacyRebatchNode : public UnaryNode {
 public:
  LegacyRebatchNode(Dataset input, int64_t num_replicas)
      : UnaryNode(std::move(input)), num_replicas_(num_replicas) {}
  std::string op() const override { return "Rebatch"; }
  absl::StatusOr<ElementSpec> ComputeSpec() const override {
    ASSIGN_OR_RETURN(ElementSpec in, input().element_spec());
    // TF's _LegacyRebatchDataset: a known batch dim that the replicas
    // split evenly is divided among them; any other is unknown.
    ElementSpec out = in;
    for (TensorSpec& t : out) {
      if (t.dims().empty()) continue;
      std::vector<int64_t> dims(t.dims().begin(), t.dims().end());
      const bool even = dims[0] != kUnknownDim && dims[0] % num_replicas_ == 0;
      dims[0] = even ? dims[0] / num_replicas_ : kUnknownDim;
      t = TensorSpec(t.dtype(), dims);
    }
    return out;
  }
  std::string Describe() const override {
    return absl::StrCat("LegacyRebatch(", num_replicas_, ")");
  }
  int64_t Cardinality() const override {
    // Every input batch becomes exactly num_replicas batches.
    const int64_t n = input().Cardinality();
    if (n < 0) return n;
    return n * num_replicas_;
  }
  NodePtr WithInputs(std::vector<Dataset> inputs) const override {
    return std::make_shared<LegacyRebatchNode>(std::move(inputs[0]),
                                               num_replicas_);
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t key) const override {
    class It : public Iterator {
     public:
      It(std::shared_ptr<const LegacyRebatchNode> node, uint64_t key)
          : node_(std::move(node)),
            input_(node_->input().MakeIterator(static_cast<int64_t>(key))) {}
      absl::StatusOr<std::optional<Element>> GetNext() override {
        const int64_t n = node_->num_replicas_;
        if (slice_ == 0) {
          absl::StatusOr<std::optional<Element>> next = input_->GetNext();
          if (!next.ok() || !next->has_value()) return next;
          for (size_t c = 0; c < (*next)->size(); ++c) {
            if ((**next)[c].shape().rank() == 0) {
              return absl::InvalidArgumentError(absl::StrCat(
                  "Cannot rebatch dataset: All components must have at "
                  "least one dimension. Perhaps your input dataset is not "
                  "batched? Component ",
                  c, " is scalar."));
            }
          }
          batch_ = std::move(**next);
        }
        // Components are sliced independently (they may differ in dim 0):
        // slice k is rows [k * ceil(B / n), (k + 1) * ceil(B / n)) cut at
        // B, and empty once the rows run out.
        Element out;
        out.reserve(batch_.size());
        for (const devices::Tensor& t : batch_) {
          const int64_t rows = t.shape().dim(0);
          const int64_t interval = CeilDiv(rows, n);
          const int64_t end = std::min(interval * (slice_ + 1), rows);
          const int64_t start = std::min(interval * slice_, end);
          ASSIGN_OR_RETURN(Element part, SliceElement({t}, start, end));
          out.push_back(std::move(part[0]));
        }
        slice_ = (slice_ + 1) % n;
        return std::optional<Element>(std::move(out));
      }

     private:
      const std::shared_ptr<const LegacyRebatchNode> node_;
      const std::unique_ptr<Iterator> input_;
      int64_t slice_ = 0;
      Element batch_;
    };
    return std::make_unique<It>(SharedAs<LegacyRebatchNode>(), key);
  }

 private:
  const int64_t num_replicas_;
};

}  // namespace

NodePtr MakeBatchNode(Dataset input, int64_t batch_size, bool drop_remainder) {
  return std::make_shared<BatchNode>(std::move(input), batch_size,
                                     drop_remainder);
}
NodePtr MakeRebatchV2Node(Dataset input, std::vector<int64_t> batch_sizes,
                          bool drop_remainder) {
  return std::make_shared<RebatchV2Node>(
      std::move(input), std::move(batch_sizes), drop_remainder);
}
NodePtr MakeLegacyRebatchNode(Dataset input, int64_t num_replicas) {
  return std::make_shared<LegacyRebatchNode>(std::move(input), num_replicas);
}

}  // namespace internal
}  // namespace data
}  // namespace distribute
