// ParallelMap: tf.data's map(fn, num_parallel_calls=N, deterministic=True).
// Worker threads take input elements in order, apply the function
// concurrently and leave the results for the consumer, who takes them in
// input order.

#include <algorithm>
#include <map>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "distribute/input/dataset_node.h"

namespace distribute {
namespace data {
namespace internal {
namespace {

// Threads start with the first GetNext. At most `parallelism` elements are
// taken from the input and not yet returned (in the function or waiting
// for the consumer). The input is read by one worker at a time, in order:
// a worker claims the next position and reads the input under input_mu_.
// The destructor stops the workers and joins them, waiting at most for the
// input reads and function calls in progress.
class ParallelMapIterator : public Iterator {
 public:
  ParallelMapIterator(std::unique_ptr<Iterator> input, Dataset::MapFn fn,
                      int parallelism)
      : input_(std::move(input)),
        fn_(std::move(fn)),
        parallelism_(parallelism) {}

  ~ParallelMapIterator() override {
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
    }
    for (std::thread& t : workers_) t.join();
  }

  absl::StatusOr<std::optional<Element>> GetNext() override {
    if (workers_.empty()) {
      workers_.reserve(static_cast<size_t>(parallelism_));
      for (int i = 0; i < parallelism_; ++i) {
        workers_.emplace_back([this] { Work(); });
      }
    }
    absl::MutexLock lock(&mu_);
    auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return results_.count(next_out_) > 0 ||
             (end_.has_value() && next_out_ >= *end_);
    };
    mu_.Await(absl::Condition(&ready));
    auto it = results_.find(next_out_);
    if (it == results_.end()) return std::nullopt;
    absl::StatusOr<Element> next = std::move(it->second);
    results_.erase(it);
    ++next_out_;
    RETURN_IF_ERROR(next.status());
    return std::optional<Element>(*std::move(next));
  }

 private:
  void Work() {
    while (true) {
      int64_t position;
      absl::StatusOr<std::optional<Element>> next = std::nullopt;
      {
        absl::MutexLock in(&input_mu_);
        {
          absl::MutexLock lock(&mu_);
          auto room = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
            return cancelled_ || end_.has_value() ||
                   next_in_ - next_out_ < parallelism_;
          };
          mu_.Await(absl::Condition(&room));
          if (cancelled_ || end_.has_value()) return;
          position = next_in_++;
        }
        next = input_->GetNext();
      }
      if (next.ok() && !next->has_value()) {
        absl::MutexLock lock(&mu_);
        end_ = position;
        return;
      }
      absl::StatusOr<Element> result =
          next.ok() ? fn_(std::move(**next)) : next.status();
      absl::MutexLock lock(&mu_);
      results_.emplace(position, std::move(result));
    }
  }

  const std::unique_ptr<Iterator> input_;  // Read under input_mu_.
  const Dataset::MapFn fn_;
  const int parallelism_;
  std::vector<std::thread> workers_;  // Started and joined by the consumer.
  absl::Mutex input_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  int64_t next_in_ ABSL_GUARDED_BY(mu_) = 0;         // Next position to read.
  int64_t next_out_ ABSL_GUARDED_BY(mu_) = 0;        // Next position to return.
  std::optional<int64_t> end_ ABSL_GUARDED_BY(mu_);  // The input's length.
  std::map<int64_t, absl::StatusOr<Element>> results_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

class ParallelMapNode : public UnaryNode {
 public:
  ParallelMapNode(Dataset input, Dataset::MapFn fn, int parallelism)
      : UnaryNode(std::move(input)),
        fn_(std::move(fn)),
        parallelism_(parallelism) {}
  std::string op() const override { return "ParallelMap"; }
  std::string Describe() const override {
    return absl::StrCat("ParallelMap(num_parallel_calls=", parallelism_, ")");
  }
  int64_t Cardinality() const override { return input().Cardinality(); }
  // compute_batch_size stops here, as at Map.
  NodePtr WithInputs(std::vector<Dataset> inputs) const override {
    return std::make_shared<ParallelMapNode>(std::move(inputs[0]), fn_,
                                             parallelism_);
  }
  // The function once on the input's first element, not the threads.
  absl::StatusOr<ElementSpec> ComputeSpec() const override {
    return MapSpec(input(), fn_, Describe());
  }
  std::unique_ptr<Iterator> MakeIterator(uint64_t key) const override {
    return std::make_unique<ParallelMapIterator>(
        input().MakeIterator(static_cast<int64_t>(key)), fn_, parallelism_);
  }

 private:
  const Dataset::MapFn fn_;
  const int parallelism_;
};

}  // namespace

NodePtr MakeParallelMapNode(Dataset input, Dataset::MapFn fn, int parallelism) {
  return std::make_shared<ParallelMapNode>(std::move(input), std::move(fn),
                                           parallelism);
}

}  // namespace internal
}  // namespace data
}  // namespace distribute
