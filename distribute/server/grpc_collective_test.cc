// Collectives written once over devices::Transport, run by
// ScheduleCommunicator over GrpcTransport: three Servers in this process,
// one thread per rank, results checked against a reference computed here.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "devices/communicator_conformance.h"
#include "devices/reduce_op.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "devices/transport.h"
#include "distribute/collective/schedule.h"
#include "distribute/collective/schedule_communicator.h"
#include "distribute/server/grpc_transport.h"
#include "distribute/server/internal/test_certificates.h"
#include "distribute/server/internal/test_cluster.h"
#include "gtest/gtest.h"

namespace distribute {
namespace {

using collective::Algorithm;
using collective::ScheduleCommunicator;
using collective::ScheduleCommunicatorOptions;
using devices::ReduceOp;
using devices::Shape;
using devices::Tensor;
using server_internal::TestCluster;

constexpr int kRanks = 3;

// Runs fn(rank) on one thread per rank and returns each rank's status.
std::vector<absl::Status> RunRanks(int n,
                                   const std::function<absl::Status(int)>& fn) {
  std::vector<absl::Status> status(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r)
    threads.emplace_back([&, r] { status[r] = fn(r); });
  for (auto& t : threads) t.join();
  return status;
}

// With both server protocols ("grpc", "grpc+tcp").
class GrpcCollectiveTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.protocol = GetParam();
    auto cluster = TestCluster::Start(kRanks, options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
  }

  std::unique_ptr<ScheduleCommunicator> Communicator(
      const std::string& key, ScheduleCommunicatorOptions options = {}) {
    std::vector<std::unique_ptr<devices::Transport>> endpoints;
    for (int r = 0; r < kRanks; ++r) {
      GrpcTransportOptions transport;
      transport.group_key = key;
      transport.rank_targets = cluster_.addresses;
      transport.rank = r;
      transport.bytes_per_pack = 64 << 10;
      transport.connect_timeout = absl::Seconds(10);
      auto endpoint = GrpcTransport::Create(*cluster_.servers[r], transport);
      EXPECT_TRUE(endpoint.ok()) << endpoint.status();
      if (!endpoint.ok()) return nullptr;
      endpoints.push_back(*std::move(endpoint));
    }
    auto comm = ScheduleCommunicator::Create(std::move(endpoints), options);
    EXPECT_TRUE(comm.ok()) << comm.status();
    return comm.ok() ? *std::move(comm) : nullptr;
  }

  TestCluster cluster_;
};

TEST_P(GrpcCollectiveTest, AllReduceSumsOnEveryRank) {
  for (Algorithm algorithm : {Algorithm::kRing, Algorithm::kDoubleBinaryTree}) {
    for (int64_t count :
         {int64_t{0}, int64_t{1}, int64_t{1001}, int64_t{300'000}}) {
      ScheduleCommunicatorOptions options;
      options.all_reduce_algorithm = algorithm;
      auto comm = Communicator(
          absl::StrCat("allreduce-", static_cast<int>(algorithm), "-", count),
          options);
      ASSERT_NE(comm, nullptr);
      std::vector<Tensor> in, out;
      std::vector<float> expected(count, 0.0f);
      for (int r = 0; r < kRanks; ++r) {
        std::vector<float> values(count);
        for (int64_t i = 0; i < count; ++i) {
          values[i] = static_cast<float>((r * 7 + i * 3) % 11);
          expected[i] += values[i];
        }
        in.push_back(*Tensor::FromVector<float>(values, Shape({count})));
        out.push_back(*Tensor::Host(devices::DType::kFloat32, Shape({count})));
      }
      auto status = RunRanks(kRanks, [&](int r) {
        return comm->AllReduce(r, in[r], out[r],
                               {ReduceOp::kSum, absl::Seconds(30)});
      });
      for (int r = 0; r < kRanks; ++r) {
        ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
        EXPECT_EQ(out[r].ToVector<float>(), expected)
            << "rank " << r << " count " << count;
      }
    }
  }
}

TEST_P(GrpcCollectiveTest, ManyCollectivesInARowAndABarrier) {
  auto comm = Communicator("sequence");
  ASSERT_NE(comm, nullptr);
  auto status = RunRanks(kRanks, [&](int r) -> absl::Status {
    // Separate input and output: the executor needs them apart.
    Tensor t = Tensor::FromVector<float>({static_cast<float>(r), 1.0f});
    for (int step = 0; step < 5; ++step) {
      Tensor sum = *Tensor::Host(devices::DType::kFloat32, Shape({2}));
      RETURN_IF_ERROR(
          comm->AllReduce(r, t, sum, {ReduceOp::kSum, absl::Seconds(30)}));
      t = sum;
    }
    // Each step triples the vector: (0+1+2, 3) then x3 four more times.
    if (t.ToVector<float>() != std::vector<float>{3.0f * 81, 3.0f * 81}) {
      return absl::InternalError(
          absl::StrCat("rank ", r, " got ", t.ToVector<float>()[0]));
    }
    Tensor root_value = Tensor::FromVector<float>({r == 1 ? 42.0f : 0.0f});
    RETURN_IF_ERROR(
        comm->Broadcast(r, 1, root_value, {ReduceOp::kSum, absl::Seconds(30)}));
    if (root_value.ToVector<float>()[0] != 42.0f) {
      return absl::InternalError("broadcast did not deliver the root's value");
    }
    return comm->Barrier(r, absl::Seconds(30));
  });
  for (int r = 0; r < kRanks; ++r) EXPECT_TRUE(status[r].ok()) << status[r];
}

TEST_P(GrpcCollectiveTest, AMissingRankTimesOutAndAbortsThePeers) {
  auto comm = Communicator("missing");
  ASSERT_NE(comm, nullptr);
  // Only rank 0 joins: it times out and aborts the group.
  Tensor t = Tensor::FromVector<float>({1, 2, 3, 4});
  Tensor sum = *Tensor::Host(devices::DType::kFloat32, Shape({4}));
  absl::Status alone =
      comm->AllReduce(0, t, sum, {ReduceOp::kSum, absl::Milliseconds(300)});
  EXPECT_EQ(alone.code(), absl::StatusCode::kDeadlineExceeded) << alone;
  // Rank 1 learns of the abort and fails fast instead of waiting 30 s,
  // with the group's timeout.
  const absl::Time start = absl::Now();
  absl::Status late =
      comm->AllReduce(1, t, sum, {ReduceOp::kSum, absl::Seconds(30)});
  EXPECT_EQ(late.code(), absl::StatusCode::kDeadlineExceeded) << late;
  EXPECT_NE(late.message().find("/job:worker/task:0"), std::string::npos)
      << late;
  EXPECT_LT(absl::Now() - start, absl::Seconds(25));
}

INSTANTIATE_TEST_SUITE_P(Protocols, GrpcCollectiveTest,
                         ::testing::Values("grpc", "grpc+tcp"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "grpc" ? std::string("grpc")
                                                       : std::string("tcp");
                         });

// The Communicator contract: ScheduleCommunicator (AUTO, and the ring)
// over gRPC transports among servers in this process, with each protocol.
// With `tls`, the servers have mutual TLS (test_certificates.h).
devices::conformance::CommunicatorBackend GrpcCommunicators(
    std::string name, std::string protocol, std::optional<Algorithm> all_reduce,
    bool tls = false) {
  return {
      std::move(name),
      [protocol, all_reduce,
       tls](int n) -> absl::StatusOr<devices::conformance::CommunicatorGroup> {
        ServerOptions server;
        server.protocol = protocol;
        if (tls) server.tls = server_internal::WriteTestTlsFiles().Mutual();
        absl::StatusOr<TestCluster> cluster = TestCluster::Start(n, server);
        RETURN_IF_ERROR(cluster.status());
        auto owner = std::make_shared<TestCluster>(*std::move(cluster));
        ASSIGN_OR_RETURN(auto endpoints, server_internal::GrpcTransportGroup(
                                             *owner, "conformance"));
        ScheduleCommunicatorOptions options;
        options.all_reduce_algorithm = all_reduce;
        ASSIGN_OR_RETURN(auto comm, ScheduleCommunicator::Create(
                                        std::move(endpoints), options));
        devices::conformance::CommunicatorGroup group;
        group.communicator = std::move(comm);
        group.owner = std::move(owner);
        return group;
      }};
}

using devices::conformance::CommunicatorConformanceTest;

INSTANTIATE_TEST_SUITE_P(
    Grpc, CommunicatorConformanceTest,
    ::testing::Values(GrpcCommunicators("grpc_auto", "grpc", std::nullopt),
                      GrpcCommunicators("grpc_ring", "grpc", Algorithm::kRing),
                      GrpcCommunicators("grpc_tcp_auto", "grpc+tcp",
                                        std::nullopt),
                      GrpcCommunicators("grpc_tcp_tls_auto", "grpc+tcp",
                                        std::nullopt, /*tls=*/true)),
    devices::conformance::CommunicatorBackendName);

}  // namespace
}  // namespace distribute
