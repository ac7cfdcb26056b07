#include "distribute/cluster/cuda_driver.h"

#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace cluster {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// The stand-in driver in the test's runfiles; a path, so dlopen does not
// search the loader's directories.
constexpr char kFakeDriver[] = "./distribute/cluster/libfake_cuda_driver.so";

// Sets the stand-in driver's answers for one test.
class CudaDriverTest : public ::testing::Test {
 protected:
  void SetUp() override { Answer(0, 0, 0); }
  void TearDown() override { Answer(0, 0, 0); }

  static void Answer(int init_result, int devices, int count_result) {
    setenv("FAKE_CUDA_INIT_RESULT", std::to_string(init_result).c_str(), 1);
    setenv("FAKE_CUDA_DEVICE_COUNT", std::to_string(devices).c_str(), 1);
    setenv("FAKE_CUDA_COUNT_RESULT", std::to_string(count_result).c_str(), 1);
  }
};

TEST_F(CudaDriverTest, CountsTheDriversDevices) {
  Answer(/*init_result=*/0, /*devices=*/3, /*count_result=*/0);
  absl::StatusOr<int64_t> count = CudaDriverGpuCount(kFakeDriver);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 3);
}

TEST_F(CudaDriverTest, NoDriverInstalledIsNoGpu) {
  absl::StatusOr<int64_t> count =
      CudaDriverGpuCount("libdistsim_no_such_cuda_driver.so.1");
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 0);
}

TEST_F(CudaDriverTest, NoDeviceAndTheLinkStubAreNoGpu) {
  // CUDA_ERROR_NO_DEVICE: a driver on a machine without a GPU (or with
  // CUDA_VISIBLE_DEVICES=-1). The device count is never asked for.
  Answer(/*init_result=*/100, /*devices=*/5, /*count_result=*/0);
  absl::StatusOr<int64_t> count = CudaDriverGpuCount(kFakeDriver);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 0);
  // CUDA_ERROR_STUB_LIBRARY: the toolkit's stub found instead of a driver.
  Answer(/*init_result=*/34, /*devices=*/5, /*count_result=*/0);
  count = CudaDriverGpuCount(kFakeDriver);
  ASSERT_TRUE(count.ok()) << count.status();
  EXPECT_EQ(*count, 0);
}

TEST_F(CudaDriverTest, ADriverThatCannotStartIsAnError) {
  Answer(/*init_result=*/999, /*devices=*/2, /*count_result=*/0);
  absl::StatusOr<int64_t> count = CudaDriverGpuCount(kFakeDriver);
  EXPECT_EQ(count.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(count.status().message(),
              AllOf(HasSubstr(kFakeDriver),
                    HasSubstr("failed cuInit with CUDA_ERROR_UNKNOWN (999)"),
                    HasSubstr("CUDA_VISIBLE_DEVICES=-1")));
  // A code the driver cannot name is given as a number.
  Answer(/*init_result=*/35, /*devices=*/2, /*count_result=*/0);
  EXPECT_THAT(CudaDriverGpuCount(kFakeDriver).status().message(),
              HasSubstr("failed cuInit with CUresult 35"));
}

TEST_F(CudaDriverTest, AFailedCountIsAnError) {
  Answer(/*init_result=*/0, /*devices=*/2, /*count_result=*/999);
  absl::StatusOr<int64_t> count = CudaDriverGpuCount(kFakeDriver);
  EXPECT_EQ(count.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(count.status().message(),
              HasSubstr("failed cuDeviceGetCount with CUDA_ERROR_UNKNOWN"));
}

TEST_F(CudaDriverTest, ALibraryThatCannotLoadIsAnError) {
  // A file that is there but is no shared object.
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string path =
      std::string(tmp != nullptr ? tmp : "/tmp") + "/libnot_elf.so.1";
  {
    std::ofstream file(path);
    file << "not an ELF file\n";
  }
  absl::StatusOr<int64_t> count = CudaDriverGpuCount(path);
  EXPECT_EQ(count.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(count.status().message(),
              HasSubstr("is there but cannot be loaded"));
}

// A driver that is installed but misses one of its own libraries is not
// "no driver": the loader's "No such file or directory" names the
// dependency, not the driver.
TEST_F(CudaDriverTest, ALibraryMissingADependencyIsAnError) {
  absl::StatusOr<int64_t> count =
      CudaDriverGpuCount("./distribute/cluster/libneeds_absent_dependency.so");
  EXPECT_EQ(count.status().code(), absl::StatusCode::kFailedPrecondition)
      << count.status();
  EXPECT_THAT(count.status().message(),
              AllOf(HasSubstr("is there but cannot be loaded"),
                    HasSubstr("libdistsim_absent_dependency.so")));
}

TEST_F(CudaDriverTest, ALibraryThatIsNotADriverIsAnError) {
  absl::StatusOr<int64_t> count = CudaDriverGpuCount("libm.so.6");
  EXPECT_EQ(count.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(count.status().message(),
              AllOf(HasSubstr("libm.so.6"), HasSubstr("not a CUDA driver")));
}

}  // namespace
}  // namespace cluster
}  // namespace distribute
