// ExecuteSchedule's issue order: program order, except that on a transport
// that prefers_early_receives() every receive without deps is posted first;
// results are the same either way.
#include "distribute/collective/executor.h"

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/host_transport.h"
#include "distribute/collective/builders.h"
#include "gtest/gtest.h"

namespace distribute {
namespace collective {
namespace {

// A transport that logs its Send and Recv calls ("S<tag>", "R<tag>") and
// passes them to a host transport endpoint.
class RecordingTransport : public devices::Transport {
 public:
  RecordingTransport(std::unique_ptr<devices::Transport> inner, bool early)
      : inner_(std::move(inner)), early_(early) {}

  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const std::string& device(int rank) const override {
    return inner_->device(rank);
  }
  absl::StatusOr<std::unique_ptr<devices::Request>> Send(
      int peer, uint64_t tag, absl::Span<const std::byte> data) override {
    calls_.push_back(absl::StrCat("S", tag));
    return inner_->Send(peer, tag, data);
  }
  absl::StatusOr<std::unique_ptr<devices::Request>> Recv(
      int peer, uint64_t tag, absl::Span<std::byte> data) override {
    calls_.push_back(absl::StrCat("R", tag));
    return inner_->Recv(peer, tag, data);
  }
  absl::Status Abort(absl::Status reason) override {
    return inner_->Abort(std::move(reason));
  }
  bool prefers_early_receives() const override { return early_; }

  const std::vector<std::string>& calls() const { return calls_; }

 private:
  std::unique_ptr<devices::Transport> inner_;
  const bool early_;
  std::vector<std::string> calls_;
};

// The transport calls rank `rank` must make: program order, with the
// receives that have no deps first when `early`.
std::vector<std::string> ExpectedCalls(const Schedule& schedule, int rank,
                                       bool early) {
  std::vector<std::string> first, rest;
  for (const Step& step : schedule.ranks[rank].steps) {
    if (step.kind == StepKind::kSend) {
      rest.push_back(absl::StrCat("S", step.tag));
    } else if (step.kind == StepKind::kRecv) {
      (early && step.deps.empty() ? first : rest)
          .push_back(absl::StrCat("R", step.tag));
    }
  }
  first.insert(first.end(), rest.begin(), rest.end());
  return first;
}

// Runs a ring all-reduce over recording transports, checks every rank's
// result and calls, and hands the calls back in `calls` when given.
void RunAndCheck(int n, int64_t count, int64_t chunk_elements, bool early,
                 std::vector<std::vector<std::string>>* calls = nullptr) {
  SCOPED_TRACE(absl::StrCat(n, " ranks, ", count, " elements, chunks of ",
                            chunk_elements, early ? ", early" : ""));
  ScheduleOptions options;
  options.group_size = n;
  options.count = count;
  options.chunk_elements = chunk_elements;
  absl::StatusOr<Schedule> schedule =
      BuildSchedule(CollectiveOp::kAllReduce, Algorithm::kRing, options);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back(absl::StrCat("/device:CPU:", i));
  auto endpoints = devices::CreateHostTransportGroup(names);
  ASSERT_TRUE(endpoints.ok()) << endpoints.status();
  std::vector<std::unique_ptr<RecordingTransport>> transports;
  for (auto& endpoint : *endpoints) {
    transports.push_back(
        std::make_unique<RecordingTransport>(std::move(endpoint), early));
  }
  std::vector<std::vector<float>> in(n, std::vector<float>(count));
  std::vector<std::vector<float>> out(n, std::vector<float>(count));
  for (int r = 0; r < n; ++r) {
    for (int64_t i = 0; i < count; ++i) in[r][i] = static_cast<float>(r + i);
  }
  std::vector<absl::Status> status(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      status[r] = ExecuteSchedule(*schedule, *transports[r], in[r].data(),
                                  out[r].data(), ExecuteOptions());
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(status[r].ok()) << status[r];
    EXPECT_EQ(transports[r]->calls(), ExpectedCalls(*schedule, r, early))
        << "rank " << r;
    if (calls != nullptr) calls->push_back(transports[r]->calls());
    for (int64_t i = 0; i < count; ++i) {
      // Sum over ranks of (rank + i).
      ASSERT_EQ(out[r][i], static_cast<float>(n * (n - 1) / 2 + n * i))
          << "rank " << r << " element " << i;
    }
  }
}

TEST(ExecutorTest, ProgramOrderByDefault) {
  RunAndCheck(2, 64, 0, /*early=*/false);
  RunAndCheck(3, 96, 8, /*early=*/false);
}

TEST(ExecutorTest, ReceivesWithoutDepsFirstWhereTheTransportPrefersIt) {
  RunAndCheck(2, 64, 0, /*early=*/true);
  RunAndCheck(3, 96, 8, /*early=*/true);
  RunAndCheck(4, 1000, 16, /*early=*/true);
}

TEST(ExecutorTest, EarlyReceivesChangeTheOrderOfATwoRankRing) {
  // Rank 0 of a 2-rank ring: send its half, receive the peer's, reduce,
  // send the reduced half, receive the other. Early, both receives go
  // first: the all-gather's message finds its buffer ready.
  std::vector<std::vector<std::string>> in_order, early;
  RunAndCheck(2, 64, 0, /*early=*/false, &in_order);
  RunAndCheck(2, 64, 0, /*early=*/true, &early);
  ASSERT_EQ(in_order.size(), 2u);
  ASSERT_EQ(early.size(), 2u);
  EXPECT_EQ(in_order[0], (std::vector<std::string>{"S0", "R0", "S1", "R1"}));
  EXPECT_EQ(early[0], (std::vector<std::string>{"R0", "R1", "S0", "S1"}));
}

}  // namespace
}  // namespace collective
}  // namespace distribute
