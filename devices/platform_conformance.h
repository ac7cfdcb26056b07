// The Platform and Device contracts (devices/platform.h, device.h) as one
// test suite, written once and run against every platform: host, the
// simulator (functional and timing-only, GPUs and TPU cores) and CUDA
// (skipped without a GPU). Each platform's test instantiates
// PlatformConformanceTest with a factory:
//
//   INSTANTIATE_TEST_SUITE_P(
//       Host, PlatformConformanceTest,
//       ::testing::Values(conformance::PlatformBackend{
//           "host", [] { return devices::CreatePlatform("host:2"); }}),
//       conformance::PlatformBackendName);
//
// Every device of the platform is checked: names, allocation and its
// accounting, copies (data where the device is functional), the queue's
// order and error reporting; and the platform's lookups and group
// factories. A factory that cannot run here returns FAILED_PRECONDITION or
// UNAVAILABLE and every case skips.
#ifndef DEVICES_PLATFORM_CONFORMANCE_H_
#define DEVICES_PLATFORM_CONFORMANCE_H_

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "devices/platform.h"
#include "gtest/gtest.h"

namespace devices {
namespace conformance {

struct PlatformBackend {
  std::string name;  // the test name's suffix: letters, digits and '_'
  std::function<absl::StatusOr<std::unique_ptr<Platform>>()> make;
};

// gtest prints a backend by its name.
void PrintTo(const PlatformBackend& backend, std::ostream* os);

std::string PlatformBackendName(
    const ::testing::TestParamInfo<PlatformBackend>& info);

class PlatformConformanceTest
    : public ::testing::TestWithParam<PlatformBackend> {
 protected:
  void SetUp() override;
  void TearDown() override { platform_.reset(); }

  Platform& platform() { return *platform_; }

  std::unique_ptr<Platform> platform_;
};

}  // namespace conformance
}  // namespace devices

#endif  // DEVICES_PLATFORM_CONFORMANCE_H_
