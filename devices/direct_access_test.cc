#include "devices/direct_access.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"

namespace devices {
namespace {

TEST(LazyDeadlineTest, FixedOnFirstUseThenKept) {
  LazyDeadline deadline(absl::Seconds(5));
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  EXPECT_EQ(deadline.Get(t0), t0 + absl::Seconds(5));
  // Later reads keep the first deadline, whatever the clock says.
  EXPECT_EQ(deadline.Get(t0 + absl::Seconds(3)), t0 + absl::Seconds(5));
  LazyDeadline fixed = LazyDeadline::At(t0);
  EXPECT_EQ(fixed.Get(t0 + absl::Hours(1)), t0);
}

// Every rank sees what its peers wrote before arriving, call after call.
TEST(DirectAccessGroupTest, BarrierPublishesWrites) {
  for (bool oversubscribed : {false, true}) {
    const int n = 3;
    DirectAccessGroup group(n, absl::Microseconds(50), oversubscribed);
    std::vector<int> published(n, 0);
    std::vector<int> wrong(n, 0);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        for (int call = 1; call <= 200; ++call) {
          published[r] = call * 10 + r;
          LazyDeadline deadline(absl::Seconds(20));
          ASSERT_TRUE(group.Arrive(r, deadline).ok());
          for (int q = 0; q < n; ++q) wrong[r] += published[q] != call * 10 + q;
          // Nobody writes again before everyone has read.
          ASSERT_TRUE(group.Arrive(r, deadline).ok());
        }
        group.Finish(r);
      });
    }
    for (std::thread& t : threads) t.join();
    for (int r = 0; r < n; ++r) EXPECT_EQ(wrong[r], 0) << "rank " << r;
  }
}

// A rank that never arrives: DEADLINE_EXCEEDED naming it, after about the
// timeout (spinning first or not), and the group is aborted for good (with
// DEADLINE_EXCEEDED for every rank).
TEST(DirectAccessGroupTest, MissingRankTimesOutWithLazyDeadline) {
  for (absl::Duration spin : {absl::ZeroDuration(), absl::Milliseconds(5)}) {
    DirectAccessGroup group(2, spin, /*oversubscribed=*/false);
    LazyDeadline deadline(absl::Milliseconds(100));
    const absl::Time start = absl::Now();
    absl::Status s = group.Arrive(0, deadline);
    const absl::Duration waited = absl::Now() - start;
    EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
    EXPECT_NE(s.message().find("rank(s) 1 did not arrive"), std::string::npos)
        << s;
    EXPECT_GE(waited, absl::Milliseconds(90));
    EXPECT_LT(waited, absl::Seconds(10));
    // The late rank finds the group aborted, with the group's timeout.
    absl::Status late = group.Arrive(1, absl::Now() + absl::Seconds(5));
    EXPECT_EQ(late.code(), absl::StatusCode::kDeadlineExceeded) << late;
    EXPECT_NE(late.message().find("aborted by rank 0"), std::string::npos)
        << late;
  }
}

// Barriers that share a lazy deadline share one budget: once it has been
// spent, the next wait that has to block fails at once.
TEST(DirectAccessGroupTest, SharedLazyDeadlineIsOneBudget) {
  DirectAccessGroup group(2, absl::Microseconds(10), /*oversubscribed=*/false);
  LazyDeadline deadline(absl::Milliseconds(100));
  std::thread peer([&] {
    absl::SleepFor(absl::Milliseconds(60));
    EXPECT_TRUE(group.Arrive(1, absl::Now() + absl::Seconds(20)).ok());
    group.Finish(1);  // Else a failing rank waits for its reads to end.
  });
  EXPECT_TRUE(group.Arrive(0, deadline).ok());  // Spends ~60 ms of it.
  peer.join();
  absl::SleepFor(absl::Milliseconds(60));  // Past the shared deadline.
  const absl::Time start = absl::Now();
  absl::Status s = group.Arrive(0, deadline);
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
  EXPECT_LT(absl::Now() - start, absl::Milliseconds(50));
}

}  // namespace
}  // namespace devices
