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
