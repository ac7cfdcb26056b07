// Prefetch: a producer thread fills a bounded queue ahead of the consumer.

#include <deque>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "distribute/input/dataset_node.h"

namespace distribute {
namespace data {
namespace internal {
namespace {

// The producer thread starts with the first GetNext and runs until the
// input ends or the iterator is destroyed; the destructor wakes it and
// joins it (waiting at most for the input's GetNext in progress). Results,
// errors included, are queued in input order.
class PrefetchIterator : public Iterator {
 public:
  PrefetchIterator(std::unique_ptr<Iterator> input, int64_t buffer_size)
      : input_(std::move(input)), buffer_size_(buffer_size) {}

  ~PrefetchIterator() override {
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
    }
    if (producer_.joinable()) producer_.join();
  }

  absl::StatusOr<std::optional<Element>> GetNext() override {
    if (!producer_.joinable()) {
      producer_ = std::thread([this] { Produce(); });
    }
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return !buffer_.empty() || input_done_;
    };
    mu_.Await(absl::Condition(&ready));
    if (buffer_.empty()) return std::nullopt;
    absl::StatusOr<Element> next = std::move(buffer_.front());
    buffer_.pop_front();
    RETURN_IF_ERROR(next.status());
    return std::optional<Element>(*std::move(next));
  }

 private:
  void Produce() {
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
          return cancelled_ ||
                 static_cast<int64_t>(buffer_.size()) < buffer_size_;
        };
        mu_.Await(absl::Condition(&room));
        if (cancelled_) return;
      }
      // The input is only touched by this thread once it has started.
      absl::StatusOr<std::optional<Element>> next = input_->GetNext();
      absl::MutexLock lock(&mu_);
      if (next.ok() && !next->has_value()) {
        input_done_ = true;
        return;
      }
      if (next.ok()) {
        buffer_.push_back(std::move(**next));
      } else {
        buffer_.push_back(next.status());
      }
    }
  }

  const std::unique_ptr<Iterator> input_;
  const int64_t buffer_size_;
  std::thread producer_;  // Started and joined by the consumer.
  absl::Mutex mu_;
  std::deque<absl::StatusOr<Element>> buffer_ ABSL_GUARDED_BY(mu_);
  bool input_done_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

class PrefetchNode : public UnaryNode {
 public:
  PrefetchNode(Dataset input, int64_t buffer_size)
      : UnaryNode(std::move(input)), buffer_size_(buffer_size) {}
  std::string op() const override { return "Prefetch"; }
  std::string Describe() const override {
    return absl::StrCat("Prefetch(", buffer_size_, ")");
  }
  int64_t Cardinality() const override { return input().Cardinality(); }
  int64_t StaticBatchSize() const override { return input().StaticBatchSize(); }
  NodePtr WithInputs(std::vector<Dataset> inputs) const override {
    return std::make_shared<PrefetchNode>(std::move(inputs[0]), buffer_size_);
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t key) const override {
    std::unique_ptr<Iterator> upstream =
        input().MakeIterator(static_cast<int64_t>(key));
    if (buffer_size_ == 0) return upstream;
    return std::make_unique<PrefetchIterator>(std::move(upstream),
                                              buffer_size_);
  }

 private:
  const int64_t buffer_size_;
};

}  // namespace

NodePtr MakePrefetchNode(Dataset input, int64_t buffer_size) {
  return std::make_shared<PrefetchNode>(std::move(input), buffer_size);
}

}  // namespace internal
}  // namespace data
}  // namespace distribute
