// Shuffle: tf.data's buffered shuffle with a counter-based generator.

#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/input/dataset_node.h"
#include "distribute/input/random.h"

namespace distribute {
namespace data {
namespace internal {
namespace {

class ShuffleNode : public UnaryNode {
 public:
  ShuffleNode(Dataset input, int64_t buffer_size, uint64_t seed,
              bool reshuffle_each_iteration)
      : UnaryNode(std::move(input)),
        buffer_size_(buffer_size),
        seed_(seed),
        reshuffle_each_iteration_(reshuffle_each_iteration) {}
  std::string op() const override { return "Shuffle"; }
  std::string Describe() const override {
    return absl::StrCat("Shuffle(", buffer_size_, ", seed=", seed_,
                        ", reshuffle_each_iteration=",
                        reshuffle_each_iteration_ ? "true" : "false", ")");
  }
  int64_t Cardinality() const override { return input().Cardinality(); }
  int64_t StaticBatchSize() const override { return input().StaticBatchSize(); }
  NodePtr WithInputs(std::vector<Dataset> inputs) const override {
    return std::make_shared<ShuffleNode>(std::move(inputs[0]), buffer_size_,
                                         seed_, reshuffle_each_iteration_);
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t key) const override {
    class It : public Iterator {
     public:
      It(std::shared_ptr<const ShuffleNode> node, uint64_t key)
          : node_(std::move(node)),
            // Iteration 0 draws the same order either way; later
            // iterations get their own stream only when reshuffling.
            rng_(DeriveKey(node_->seed_,
                           node_->reshuffle_each_iteration_ ? key : 0)),
            input_(node_->input().MakeIterator(static_cast<int64_t>(key))) {}

      absl::StatusOr<std::optional<Element>> GetNext() override {
        // Top the buffer up, then hand out a uniformly chosen element; its
        // slot takes the last buffered element, so the buffer stays dense.
        while (!input_done_ &&
               static_cast<int64_t>(buffer_.size()) < node_->buffer_size_) {
          ASSIGN_OR_RETURN(std::optional<Element> next, input_->GetNext());
          if (!next.has_value()) {
            input_done_ = true;
            break;
          }
          buffer_.push_back(std::move(*next));
        }
        if (buffer_.empty()) return std::nullopt;
        const size_t pick = static_cast<size_t>(rng_.Uniform(buffer_.size()));
        Element out = std::move(buffer_[pick]);
        if (pick + 1 != buffer_.size())
          buffer_[pick] = std::move(buffer_.back());
        buffer_.pop_back();
        return std::optional<Element>(std::move(out));
      }

     private:
      const std::shared_ptr<const ShuffleNode> node_;
      CounterRng rng_;
      const std::unique_ptr<Iterator> input_;
      std::vector<Element> buffer_;
      bool input_done_ = false;
    };
    return std::make_unique<It>(SharedAs<ShuffleNode>(), key);
  }

 private:
  const int64_t buffer_size_;
  const uint64_t seed_;
  const bool reshuffle_each_iteration_;
};

}  // namespace

NodePtr MakeShuffleNode(Dataset input, int64_t buffer_size, uint64_t seed,
                        bool reshuffle_each_iteration) {
  return std::make_shared<ShuffleNode>(std::move(input), buffer_size, seed,
                                       reshuffle_each_iteration);
}

}  // namespace internal
}  // namespace data
}  // namespace distribute
