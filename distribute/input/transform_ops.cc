// Element-wise and counting transformations: Map, Take, Skip, Repeat, Shard,
// Zip.

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/input/dataset_node.h"
#include "distribute/input/random.h"

namespace distribute {
namespace data {
namespace internal {
namespace {

// --- Map --------------------------------------------------------------------

class MapNode : public UnaryNode {
 public:
  MapNode(Dataset input, Dataset::MapFn fn)
      : UnaryNode(std::move(input)), fn_(std::move(fn)) {}
  std::string op() const override { return "Map"; }
  std::string Describe() const override { return "Map"; }
  int64_t Cardinality() const override { return input().Cardinality(); }
  // compute_batch_size stops at Map: the function may change dim 0.
  NodePtr WithInputs(std::vector<Dataset> inputs) const override {
    return std::make_shared<MapNode>(std::move(inputs[0]), fn_);
  }
  absl::StatusOr<ElementSpec> ComputeSpec() const override {
    return MapSpec(input(), fn_, Describe());
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t key) const override {
    class It : public Iterator {
     public:
      It(std::shared_ptr<const MapNode> node, uint64_t key)
          : node_(std::move(node)),
            input_(node_->input().MakeIterator(static_cast<int64_t>(key))) {}
      absl::StatusOr<std::optional<Element>> GetNext() override {
        absl::StatusOr<std::optional<Element>> next = input_->GetNext();
        if (!next.ok() || !next->has_value()) return next;
        ASSIGN_OR_RETURN(Element mapped, node_->fn_(std::move(**next)));
        return std::optional<Element>(std::move(mapped));
      }

     private:
      const std::shared_ptr<const MapNode> node_;
      const std::unique_ptr<Iterator> input_;
    };
    return std::make_unique<It>(SharedAs<MapNode>(), key);
  }

 private:
  const Dataset::MapFn fn_;
};

// --- Take -------------------------------------------------------------------

class TakeNode : public UnaryNode {
 public:
  TakeNode(Dataset input, int64_t count)
      : UnaryNode(std::move(input)), count_(count) {}
  std::string op() const override { return "Take"; }
  std::string Describe() const override {
    return absl::StrCat("Take(", count_, ")");
  }
  int64_t Cardinality() const override {
    const int64_t n = input().Cardinality();
    if (count_ < 0) return n;
    if (n == kInfiniteCardinality) return count_;
    if (n == kUnknownCardinality) return kUnknownCardinality;
    return std::min(n, count_);
  }
  int64_t StaticBatchSize() const override { return input().StaticBatchSize(); }
  NodePtr WithInputs(std::vector<Dataset> inputs) const override {
    return std::make_shared<TakeNode>(std::move(inputs[0]), count_);
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t key) const override {
    class It : public Iterator {
     public:
      It(int64_t count, std::unique_ptr<Iterator> input)
          : count_(count), input_(std::move(input)) {}
      absl::StatusOr<std::optional<Element>> GetNext() override {
        if (count_ >= 0 && taken_ >= count_) return std::nullopt;
        absl::StatusOr<std::optional<Element>> next = input_->GetNext();
        if (!next.ok() || next->has_value()) ++taken_;
        return next;
      }

     private:
      const int64_t count_;
      const std::unique_ptr<Iterator> input_;
      int64_t taken_ = 0;
    };
    return std::make_unique<It>(
        count_, input().MakeIterator(static_cast<int64_t>(key)));
  }

 private:
  const int64_t count_;
};

// --- Skip -------------------------------------------------------------------

class SkipNode : public UnaryNode {
 public:
  SkipNode(Dataset input, int64_t count)
      : UnaryNode(std::move(input)), count_(count) {}
  std::string op() const override { return "Skip"; }
  std::string Describe() const override {
    return absl::StrCat("Skip(", count_, ")");
  }
  int64_t Cardinality() const override {
    const int64_t n = input().Cardinality();
    if (n == kInfiniteCardinality || n == kUnknownCardinality) return n;
    if (count_ < 0) return 0;
    return std::max<int64_t>(0, n - count_);
  }
  int64_t StaticBatchSize() const override { return input().StaticBatchSize(); }
  NodePtr WithInputs(std::vector<Dataset> inputs) const override {
    return std::make_shared<SkipNode>(std::move(inputs[0]), count_);
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t key) const override {
    class It : public Iterator {
     public:
      It(int64_t count, std::unique_ptr<Iterator> input)
          : count_(count), input_(std::move(input)) {}
      absl::StatusOr<std::optional<Element>> GetNext() override {
        // Skipped elements are pulled (and their errors reported) first.
        while (count_ < 0 || skipped_ < count_) {
          absl::StatusOr<std::optional<Element>> next = input_->GetNext();
          if (next.ok() && !next->has_value()) return next;
          ++skipped_;
          RETURN_IF_ERROR(next.status());
        }
        return input_->GetNext();
      }

     private:
      const int64_t count_;
      const std::unique_ptr<Iterator> input_;
      int64_t skipped_ = 0;
    };
    return std::make_unique<It>(
        count_, input().MakeIterator(static_cast<int64_t>(key)));
  }

 private:
  const int64_t count_;
};

// --- Repeat -----------------------------------------------------------------

class RepeatNode : public UnaryNode {
 public:
  RepeatNode(Dataset input, int64_t count)
      : UnaryNode(std::move(input)), count_(count) {}
  std::string op() const override { return "Repeat"; }
  std::string Describe() const override {
    return absl::StrCat("Repeat(", count_, ")");
  }
  int64_t Cardinality() const override {
    const int64_t n = input().Cardinality();
    if (count_ == 0 || n == 0) return 0;
    if (n == kInfiniteCardinality) return kInfiniteCardinality;
    if (n == kUnknownCardinality) return kUnknownCardinality;
    if (count_ < 0) return kInfiniteCardinality;
    if (n > std::numeric_limits<int64_t>::max() / count_) {
      return std::numeric_limits<int64_t>::max();
    }
    return n * count_;
  }
  int64_t StaticBatchSize() const override { return input().StaticBatchSize(); }
  NodePtr WithInputs(std::vector<Dataset> inputs) const override {
    return std::make_shared<RepeatNode>(std::move(inputs[0]), count_);
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t key) const override {
    class It : public Iterator {
     public:
      It(std::shared_ptr<const RepeatNode> node, uint64_t key)
          : node_(std::move(node)), key_(key) {}
      absl::StatusOr<std::optional<Element>> GetNext() override {
        while (true) {
          if (done_ || (node_->count_ >= 0 && pass_ >= node_->count_)) {
            return std::nullopt;
          }
          if (current_ == nullptr) {
            // Pass 0 reads the iteration itself, so Take(n) of a repeated
            // dataset sees the same first pass as the dataset alone.
            const uint64_t pass_key =
                pass_ == 0 ? key_
                           : DeriveKey(key_, static_cast<uint64_t>(pass_));
            current_ =
                node_->input().MakeIterator(static_cast<int64_t>(pass_key));
            pass_produced_ = false;
          }
          absl::StatusOr<std::optional<Element>> next = current_->GetNext();
          if (!next.ok() || next->has_value()) {
            pass_produced_ = true;
            return next;
          }
          current_.reset();
          ++pass_;
          // A pass without elements ends the sequence (tf.data does the
          // same rather than looping forever over an empty input).
          if (!pass_produced_) {
            done_ = true;
            return std::nullopt;
          }
        }
      }

     private:
      const std::shared_ptr<const RepeatNode> node_;
      const uint64_t key_;
      int64_t pass_ = 0;
      bool pass_produced_ = false;
      bool done_ = false;
      std::unique_ptr<Iterator> current_;
    };
    return std::make_unique<It>(SharedAs<RepeatNode>(), key);
  }

 private:
  const int64_t count_;
};

// --- Shard ------------------------------------------------------------------

class ShardNode : public UnaryNode {
 public:
  ShardNode(Dataset input, int64_t num_shards, int64_t index,
            bool require_non_empty)
      : UnaryNode(std::move(input)),
        num_shards_(num_shards),
        index_(index),
        require_non_empty_(require_non_empty) {}
  std::string op() const override { return "Shard"; }
  std::string Describe() const override {
    return absl::StrCat("Shard(", num_shards_, ", ", index_, ")");
  }
  int64_t Cardinality() const override {
    const int64_t n = input().Cardinality();
    if (n < 0) return n;
    return n / num_shards_ + (index_ < n % num_shards_ ? 1 : 0);
  }
  int64_t StaticBatchSize() const override { return input().StaticBatchSize(); }
  NodePtr WithInputs(std::vector<Dataset> inputs) const override {
    return std::make_shared<ShardNode>(std::move(inputs[0]), num_shards_,
                                       index_, require_non_empty_);
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t key) const override {
    class It : public Iterator {
     public:
      It(std::shared_ptr<const ShardNode> node, uint64_t key)
          : node_(std::move(node)),
            input_(node_->input().MakeIterator(static_cast<int64_t>(key))) {}
      absl::StatusOr<std::optional<Element>> GetNext() override {
        if (done_) return std::nullopt;
        while (true) {
          absl::StatusOr<std::optional<Element>> next = input_->GetNext();
          if (next.ok() && !next->has_value()) {
            done_ = true;
            if (node_->require_non_empty_ && position_ < node_->num_shards_) {
              return absl::InvalidArgumentError(
                  NotEnoughElementsForShardsMessage(position_,
                                                    node_->num_shards_));
            }
            return next;
          }
          const int64_t position = position_++;
          // Errors of elements that belong to other shards are reported too
          // (tf.data pulls them the same way).
          RETURN_IF_ERROR(next.status());
          if (position % node_->num_shards_ == node_->index_) return next;
        }
      }

     private:
      const std::shared_ptr<const ShardNode> node_;
      const std::unique_ptr<Iterator> input_;
      int64_t position_ = 0;
      bool done_ = false;
    };
    return std::make_unique<It>(SharedAs<ShardNode>(), key);
  }

 private:
  const int64_t num_shards_;
  const int64_t index_;
  const bool require_non_empty_;
};

// --- Zip --------------------------------------------------------------------

class ZipNode : public DatasetNode {
 public:
  explicit ZipNode(std::vector<Dataset> inputs) : inputs_(std::move(inputs)) {}
  std::string op() const override { return "Zip"; }
  absl::StatusOr<ElementSpec> ComputeSpec() const override {
    ElementSpec out;
    for (const Dataset& in : inputs_) {
      ASSIGN_OR_RETURN(ElementSpec spec, in.element_spec());
      out.insert(out.end(), spec.begin(), spec.end());
    }
    return out;
  }
  std::string Describe() const override {
    return absl::StrCat("Zip(", inputs_.size(), " datasets)");
  }
  // tf.data's: the shortest input's, unknown if any input's is.
  int64_t Cardinality() const override {
    int64_t result = kInfiniteCardinality;
    for (const Dataset& input : inputs_) {
      const int64_t n = input.Cardinality();
      if (n == kUnknownCardinality) return kUnknownCardinality;
      if (n == kInfiniteCardinality) continue;
      result = result == kInfiniteCardinality ? n : std::min(result, n);
    }
    return result;
  }
  // The inputs' batch size where they all have the same one.
  int64_t StaticBatchSize() const override {
    const int64_t first = inputs_[0].StaticBatchSize();
    for (const Dataset& input : inputs_) {
      if (input.StaticBatchSize() != first) return -1;
    }
    return first;
  }
  std::vector<Dataset> inputs() const override { return inputs_; }
  NodePtr WithInputs(std::vector<Dataset> inputs) const override {
    return std::make_shared<ZipNode>(std::move(inputs));
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t key) const override {
    class It : public Iterator {
     public:
      explicit It(std::vector<std::unique_ptr<Iterator>> inputs)
          : inputs_(std::move(inputs)) {}
      absl::StatusOr<std::optional<Element>> GetNext() override {
        if (ended_) return std::nullopt;
        Element out;
        for (const std::unique_ptr<Iterator>& input : inputs_) {
          ASSIGN_OR_RETURN(std::optional<Element> next, input->GetNext());
          if (!next.has_value()) {
            ended_ = true;
            return std::nullopt;
          }
          for (devices::Tensor& t : *next) out.push_back(std::move(t));
        }
        return std::optional<Element>(std::move(out));
      }

     private:
      const std::vector<std::unique_ptr<Iterator>> inputs_;
      bool ended_ = false;
    };
    std::vector<std::unique_ptr<Iterator>> its;
    for (const Dataset& input : inputs_) {
      its.push_back(input.MakeIterator(static_cast<int64_t>(key)));
    }
    return std::make_unique<It>(std::move(its));
  }

 private:
  const std::vector<Dataset> inputs_;
};

}  // namespace

NodePtr MakeZipNode(std::vector<Dataset> inputs) {
  return std::make_shared<ZipNode>(std::move(inputs));
}

NodePtr MakeMapNode(Dataset input, Dataset::MapFn fn) {
  return std::make_shared<MapNode>(std::move(input), std::move(fn));
}
NodePtr MakeTakeNode(Dataset input, int64_t count) {
  return std::make_shared<TakeNode>(std::move(input), count);
}
NodePtr MakeSkipNode(Dataset input, int64_t count) {
  return std::make_shared<SkipNode>(std::move(input), count);
}
NodePtr MakeRepeatNode(Dataset input, int64_t count) {
  return std::make_shared<RepeatNode>(std::move(input), count);
}
NodePtr MakeShardNode(Dataset input, int64_t num_shards, int64_t index,
                      bool require_non_empty) {
  return std::make_shared<ShardNode>(std::move(input), num_shards, index,
                                     require_non_empty);
}

}  // namespace internal
}  // namespace data
}  // namespace distribute
