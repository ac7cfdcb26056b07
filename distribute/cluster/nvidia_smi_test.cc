#include "distribute/cluster/nvidia_smi.h"

#include <cstdlib>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace cluster {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// The stand-in in the test's runfiles.
constexpr char kFakeSmi[] = "distribute/cluster/testdata/fake_nvidia_smi.sh";

absl::StatusOr<int64_t> CountIn(const char* mode,
                                absl::Duration timeout = absl::Seconds(30)) {
  setenv("FAKE_SMI_MODE", mode, 1);
  return NvidiaSmiGpuCount(kFakeSmi, timeout);
}

TEST(NvidiaSmiTest, CountsTheListedGpusButNotTheirMigInstances) {
  absl::StatusOr<int64_t> gpus = CountIn("list");
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_EQ(*gpus, 3);
}

TEST(NvidiaSmiTest, AnEmptyListIsNoGpu) {
  absl::StatusOr<int64_t> gpus = CountIn("none");
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_EQ(*gpus, 0);
}

TEST(NvidiaSmiTest, AFailureQuotesWhatItPrinted) {
  absl::StatusOr<int64_t> gpus = CountIn("fail");
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(gpus.status().message(),
              AllOf(HasSubstr("fake_nvidia_smi.sh --list-gpus` exited with "
                              "status 9"),
                    HasSubstr("couldn't communicate with the NVIDIA driver")));
}

TEST(NvidiaSmiTest, AProgramThatIsNotThereIsNotFound) {
  absl::StatusOr<int64_t> gpus =
      NvidiaSmiGpuCount("distsim-no-such-nvidia-smi", absl::Seconds(30));
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(gpus.status().message(),
              HasSubstr("distsim-no-such-nvidia-smi is not on PATH"));
  gpus = NvidiaSmiGpuCount("/nonexistent/nvidia-smi", absl::Seconds(30));
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(gpus.status().message(),
              HasSubstr("/nonexistent/nvidia-smi does not exist"));
}

// A program that exits but leaves a process holding its output is done:
// its count comes back, long before the timeout, not a DEADLINE_EXCEEDED.
TEST(NvidiaSmiTest, WhatItLeftBehindDoesNotHoldTheCount) {
  const absl::Time start = absl::Now();
  absl::StatusOr<int64_t> gpus = CountIn("linger", absl::Seconds(30));
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_EQ(*gpus, 1);
  EXPECT_LT(absl::Now() - start, absl::Seconds(15));
}

// Output that never ends does not keep the count reading past its timeout.
TEST(NvidiaSmiTest, EndlessOutputIsKilledAtTheTimeout) {
  absl::StatusOr<int64_t> gpus = CountIn("flood", absl::Milliseconds(300));
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(gpus.status().message(), HasSubstr("did not finish within"));
}

TEST(NvidiaSmiTest, NoTimeoutWaitsForTheProgram) {
  absl::StatusOr<int64_t> gpus = CountIn("list", absl::InfiniteDuration());
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  EXPECT_EQ(*gpus, 3);
}

// A driver that wedges nvidia-smi must not wedge the resolver: the child is
// killed at the timeout. (The bound asserted is the behaviour, with a wide
// margin over the 200 ms timeout; not a speed test.)
TEST(NvidiaSmiTest, AHungProgramIsKilledAtTheTimeout) {
  const absl::Time start = absl::Now();
  absl::StatusOr<int64_t> gpus = CountIn("hang", absl::Milliseconds(200));
  EXPECT_EQ(gpus.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(gpus.status().message(),
              HasSubstr("did not finish within 200ms; it was killed"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));
}

}  // namespace
}  // namespace cluster
}  // namespace distribute
