// The Transport contract (devices/transport.h) as one test suite, written
// once and run against every backend: each backend's test instantiates
// TransportConformanceTest with a factory that makes a group of endpoints
// (as XLA's PJRT client tests and Gloo's BaseTest do), so that every
// transport is held to the same semantics, not to a copy of them.
//
//   INSTANTIATE_TEST_SUITE_P(
//       Host, TransportConformanceTest,
//       ::testing::Values(conformance::TransportBackend{
//           "host", [](int n) -> absl::StatusOr<conformance::TransportGroup> {
//             ...
//           }}),
//       conformance::BackendName);
//
// The suite uses groups of kGroupSize ranks, ranks 0 and 1 unless a case
// says otherwise, messages of a few bytes to 1 MiB, and waits of at most
// 30 s for what must complete. A factory that cannot run here (a GPU
// backend without a GPU) returns FAILED_PRECONDITION or UNAVAILABLE, and
// every case skips with its message.
#ifndef DEVICES_TRANSPORT_CONFORMANCE_H_
#define DEVICES_TRANSPORT_CONFORMANCE_H_

#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/transport.h"
#include "gtest/gtest.h"

namespace devices {
namespace conformance {

inline constexpr int kGroupSize = 3;

// Endpoints of one group, rank r at endpoints[r], and whatever backs them
// (a platform, servers), which outlives the endpoints.
struct TransportGroup {
  std::shared_ptr<void> owner;
  std::vector<std::unique_ptr<Transport>> endpoints;
};

struct TransportBackend {
  std::string name;  // the test name's suffix: letters, digits and '_'
  std::function<absl::StatusOr<TransportGroup>(int n)> make;
};

// gtest prints a backend by its name.
void PrintTo(const TransportBackend& backend, std::ostream* os);

std::string BackendName(const ::testing::TestParamInfo<TransportBackend>& info);

class TransportConformanceTest
    : public ::testing::TestWithParam<TransportBackend> {
 protected:
  void SetUp() override;
  void TearDown() override;

  Transport& rank(int r) { return *group_.endpoints[static_cast<size_t>(r)]; }

  TransportGroup group_;
};

}  // namespace conformance
}  // namespace devices

#endif  // DEVICES_TRANSPORT_CONFORMANCE_H_
