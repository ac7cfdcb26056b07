// Tests of Map with num_parallel_calls: the output equals Map's (order,
// errors, end), the function does run concurrently, work ahead is bounded,
// and the threads stop whenever the iterator is destroyed.

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "distribute/input/dataset.h"
#include "distribute/input/test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace data {
namespace {

using testing::DrainScalars;
using testing::DrainValues;
using testing::Int64s;
using testing::Rows;
using testing::Values;

// Generous: only reached if the workers never make progress (a bug).
constexpr absl::Duration kStuck = absl::Seconds(60);

absl::StatusOr<Element> Squared(Element e) {
  const int64_t v = Values(e[0])[0];
  return Element{Int64s({v * v})};
}

TEST(ParallelMapTest, OutputEqualsMapsForEveryParallelism) {
  std::vector<int64_t> expected;
  for (int64_t i = 0; i < 500; ++i) expected.push_back(i * i);
  EXPECT_EQ(DrainScalars(Dataset::Range(500).Map(Squared)), expected);
  for (int64_t calls :
       {int64_t{1}, int64_t{2}, int64_t{7}, Dataset::kAutotune}) {
    absl::StatusOr<Dataset> ds = Dataset::Range(500).Map(Squared, calls);
    ASSERT_TRUE(ds.ok()) << ds.status();
    EXPECT_EQ(DrainScalars(*ds), expected) << calls;
    EXPECT_EQ(ds->Cardinality(), 500);
    EXPECT_EQ(ds->StaticBatchSize(), -1);
  }
  // Batches through it, and a pipeline after it.
  Dataset batched =
      *(*(*Dataset::Range(7).Batch(3))
             .Map([](Element e) -> absl::StatusOr<Element> { return e; }, 3))
           .Prefetch(1);
  EXPECT_EQ(DrainValues(batched), (Rows{{0, 1, 2}, {3, 4, 5}, {6}}));
  EXPECT_THAT(batched.DebugString(),
              ::testing::HasSubstr("ParallelMap(num_parallel_calls=3)"));
}

TEST(ParallelMapTest, CallsRunConcurrently) {
  // Each of the first four calls waits until all four have started: only
  // four calls at once can get past it.
  constexpr int kCalls = 4;
  absl::Mutex mu;
  int started = 0;
  std::atomic<bool> stuck{false};
  Dataset ds = *Dataset::Range(kCalls).Map(
      [&](Element e) -> absl::StatusOr<Element> {
        absl::MutexLock lock(&mu);
        ++started;
        auto all = [&] { return started >= kCalls; };
        if (!mu.AwaitWithTimeout(absl::Condition(&all), kStuck)) {
          stuck = true;
        }
        return e;
      },
      kCalls);
  EXPECT_EQ(DrainScalars(ds), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_FALSE(stuck.load());
}

TEST(ParallelMapTest, ErrorsArriveInOrderAndIterationGoesOn) {
  Dataset input = Dataset::FromGenerator(
      [](int64_t i) -> absl::StatusOr<std::optional<Element>> {
        if (i == 2) return absl::DataLossError("input 2");
        if (i == 9) return std::nullopt;
        return std::optional<Element>(Element{Int64s({i})});
      });
  Dataset ds = *input.Map(
      [](Element e) -> absl::StatusOr<Element> {
        if (Values(e[0])[0] == 5) return absl::InvalidArgumentError("map 5");
        return e;
      },
      3);
  std::unique_ptr<Iterator> it = ds.MakeIterator();
  std::vector<std::string> seen;
  while (true) {
    absl::StatusOr<std::optional<Element>> next = it->GetNext();
    if (!next.ok()) {
      seen.push_back(std::string(next.status().message()));
      continue;
    }
    if (!next->has_value()) break;
    seen.push_back(std::to_string(Values((**next)[0])[0]));
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"0", "1", "input 2", "3", "4",
                                            "map 5", "6", "7", "8"}));
  EXPECT_FALSE(it->GetNext()->has_value());  // The end is sticky.
}

TEST(ParallelMapTest, ReadsNoFurtherAheadThanItsCalls) {
  constexpr int64_t kCalls = 3;
  std::atomic<int64_t> reads{0};
  absl::Notification ahead;
  Dataset ds =
      *Dataset::FromGenerator(
           [&](int64_t i) -> absl::StatusOr<std::optional<Element>> {
             reads.fetch_add(1);
             if (i == kCalls) ahead.Notify();
             return std::optional<Element>(Element{Int64s({i})});
           },
           kInfiniteCardinality)
           .Map([](Element e) -> absl::StatusOr<Element> { return e; }, kCalls);
  std::unique_ptr<Iterator> it = ds.MakeIterator();
  for (int64_t taken = 1; taken <= 30; ++taken) {
    absl::StatusOr<std::optional<Element>> next = it->GetNext();
    ASSERT_TRUE(next.ok() && next->has_value());
    EXPECT_EQ(Values((**next)[0])[0], taken - 1);
    EXPECT_LE(reads.load(), taken + kCalls);
    if (taken == 1) {
      EXPECT_TRUE(ahead.WaitForNotificationWithTimeout(kStuck));
    }
  }
}

TEST(ParallelMapTest, DestroyingStopsEveryThread) {
  std::atomic<bool> destroyed{false};
  std::atomic<int64_t> calls_after{0};
  Dataset ds = *Dataset::Range(1000).Repeat().Map(
      [&](Element e) -> absl::StatusOr<Element> {
        if (destroyed.load()) calls_after++;
        return e;
      },
      4);
  for (int round = 0; round < 30; ++round) {
    std::unique_ptr<Iterator> it = ds.MakeIterator();
    for (int i = 0; i < round % 6; ++i) ASSERT_TRUE(it->GetNext().ok());
    it.reset();
  }
  destroyed.store(true);
  EXPECT_EQ(calls_after.load(), 0);
  // Destroyed before the first GetNext: nothing was read.
  std::atomic<int64_t> reads{0};
  Dataset counted =
      *Dataset::FromGenerator(
           [&](int64_t i) -> absl::StatusOr<std::optional<Element>> {
             reads++;
             return std::optional<Element>(Element{Int64s({i})});
           },
           kInfiniteCardinality)
           .Map([](Element e) -> absl::StatusOr<Element> { return e; }, 2);
  { std::unique_ptr<Iterator> it = counted.MakeIterator(); }
  EXPECT_EQ(reads.load(), 0);
}

TEST(ParallelMapTest, DestroyingWaitsForTheCallsInProgress) {
  absl::Notification reached, release;
  Dataset ds = *Dataset::Range(100).Map(
      [&](Element e) -> absl::StatusOr<Element> {
        if (Values(e[0])[0] == 1) {
          reached.Notify();
          release.WaitForNotification();
        }
        return e;
      },
      2);
  std::unique_ptr<Iterator> it = ds.MakeIterator();
  ASSERT_TRUE(it->GetNext().ok());
  ASSERT_TRUE(reached.WaitForNotificationWithTimeout(kStuck));
  std::thread destroyer([&it] { it.reset(); });
  release.Notify();
  destroyer.join();
  EXPECT_EQ(it, nullptr);
}

TEST(ParallelMapTest, RejectsACountThatIsNotPositive) {
  auto identity = [](Element e) -> absl::StatusOr<Element> { return e; };
  for (int64_t calls : {int64_t{0}, int64_t{-2}, int64_t{-100}}) {
    absl::StatusOr<Dataset> ds = Dataset::Range(3).Map(identity, calls);
    EXPECT_EQ(ds.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(ds.status().message(),
                ::testing::HasSubstr("num_parallel_calls must be positive"));
  }
}

}  // namespace
}  // namespace data
}  // namespace distribute
