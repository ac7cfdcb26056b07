// The Communicator contract (devices/communicator.h) as one test suite,
// written once and run against every backend: NCCL (skipped without a GPU),
// the simulated NCCL, and ScheduleCommunicator with each collective
// algorithm over the host, simulated and gRPC transports. Each backend's
// test instantiates CommunicatorConformanceTest with a factory of groups:
//
//   INSTANTIATE_TEST_SUITE_P(
//       Host, CommunicatorConformanceTest,
//       ::testing::Values(conformance::CommunicatorBackend{
//           "host_ring",
//           [](int n) -> absl::StatusOr<conformance::CommunicatorGroup> {
//             ...
//           }}),
//       conformance::CommunicatorBackendName);
//
// Every case runs on groups of 1 to 4 ranks, each rank on a thread of its
// own (as the backend runs them), with float32 element counts that do and
// do not divide among the ranks, including 0, and values whose sums are
// exact in any order. An optional collective that a backend does not
// provide (UNIMPLEMENTED on every rank) skips its case; a factory that
// cannot run here (NCCL without a GPU) returns FAILED_PRECONDITION or
// UNAVAILABLE and every case skips.
#ifndef DEVICES_COMMUNICATOR_CONFORMANCE_H_
#define DEVICES_COMMUNICATOR_CONFORMANCE_H_

#include <functional>
#include <memory>
#include <ostream>
#include <string>

#include "absl/status/statusor.h"
#include "devices/communicator.h"
#include "devices/tensor.h"
#include "gtest/gtest.h"

namespace devices {
namespace conformance {

struct CommunicatorGroup {
  // Whatever backs the communicator (a platform, servers); outlives it.
  std::shared_ptr<void> owner;
  std::unique_ptr<Communicator> communicator;
  // Runs body(rank) for every rank at once, each on a thread of its own
  // set up as the backend needs (bound to the rank's device), and returns
  // when all have. Empty: a plain thread per rank.
  std::function<void(const std::function<void(int)>& body)> run_ranks;
  // A copy of host tensor `host` where rank `rank` keeps its tensors, and a
  // host copy of a rank's tensor. Empty: ranks use host tensors.
  std::function<Tensor(int rank, const Tensor& host)> to_rank;
  std::function<Tensor(int rank, const Tensor& tensor)> to_host;
};

struct CommunicatorBackend {
  std::string name;  // the test name's suffix: letters, digits and '_'
  std::function<absl::StatusOr<CommunicatorGroup>(int n)> make;
};

// gtest prints a backend by its name.
void PrintTo(const CommunicatorBackend& backend, std::ostream* os);

std::string CommunicatorBackendName(
    const ::testing::TestParamInfo<CommunicatorBackend>& info);

class CommunicatorConformanceTest
    : public ::testing::TestWithParam<CommunicatorBackend> {
 protected:
  // The group of `n` ranks (skips the test where the backend cannot run;
  // null then, or on a failure, which it reports).
  std::unique_ptr<CommunicatorGroup> Make(int n);
};

}  // namespace conformance
}  // namespace devices

#endif  // DEVICES_COMMUNICATOR_CONFORMANCE_H_
