#include "distribute/server/grpc_transport.h"

#include <cstddef>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "devices/status_macros.h"
#include "devices/transport.h"
#include "devices/transport_conformance.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/collective/cost_model.h"
#include "distribute/server/internal/tcp_proxy.h"
#include "distribute/server/internal/test_certificates.h"
#include "distribute/server/internal/test_cluster.h"
#include "distribute/server/server.h"
#include "gtest/gtest.h"

namespace distribute {
namespace {

using server_internal::TestCluster;

constexpr absl::Duration kWait = absl::Seconds(20);

std::vector<std::byte> Pattern(size_t n, int seed) {
  std::vector<std::byte> bytes(n);
  for (size_t i = 0; i < n; ++i) {
    bytes[i] = static_cast<std::byte>((i * 131 + seed * 7) & 0xff);
  }
  return bytes;
}

// Every case runs with both server protocols: "grpc" (messages over gRPC
// calls) and "grpc+tcp" (their bytes over the TCP data plane).
class GrpcTransportTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    ServerOptions options;
    options.protocol = GetParam();
    auto cluster = TestCluster::Start(2, options);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
  }

  GrpcTransportOptions Options(int rank, const std::string& key = "group") {
    GrpcTransportOptions options;
    options.group_key = key;
    options.rank_targets = cluster_.addresses;
    options.rank = rank;
    options.bytes_per_pack = 1 << 20;
    options.connect_timeout = absl::Seconds(10);
    return options;
  }

  // Endpoints of ranks 0 and 1 of `key`.
  std::vector<std::unique_ptr<devices::Transport>> Pair(
      const std::string& key = "group") {
    std::vector<std::unique_ptr<devices::Transport>> endpoints;
    for (int r = 0; r < 2; ++r) {
      auto endpoint =
          GrpcTransport::Create(*cluster_.servers[r], Options(r, key));
      EXPECT_TRUE(endpoint.ok()) << endpoint.status();
      if (!endpoint.ok()) return {};
      endpoints.push_back(*std::move(endpoint));
    }
    return endpoints;
  }

  TestCluster cluster_;
};

TEST_P(GrpcTransportTest, DescribesTheGroup) {
  auto endpoints = Pair();
  ASSERT_EQ(endpoints.size(), 2u);
  EXPECT_EQ(endpoints[0]->rank(), 0);
  EXPECT_EQ(endpoints[1]->rank(), 1);
  EXPECT_EQ(endpoints[0]->size(), 2);
  EXPECT_EQ(endpoints[0]->device(1),
            "/job:worker/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(endpoints[0]->device(2), "");
}

TEST_P(GrpcTransportTest, SendsAndReceivesEverySize) {
  auto endpoints = Pair();
  ASSERT_EQ(endpoints.size(), 2u);
  uint64_t tag = 0;
  // 0 B, 1 B, and 10 MB in 1 MiB packs; receive posted before and after.
  for (size_t size : {size_t{0}, size_t{1}, size_t{10'000'000}}) {
    for (bool recv_first : {true, false}) {
      ++tag;
      std::vector<std::byte> data = Pattern(size, static_cast<int>(tag));
      std::vector<std::byte> out(size, std::byte{0});
      std::unique_ptr<devices::Request> recv;
      if (recv_first) recv = *endpoints[1]->Recv(0, tag, absl::MakeSpan(out));
      auto send = endpoints[0]->Send(1, tag, absl::MakeConstSpan(data));
      ASSERT_TRUE(send.ok()) << send.status();
      if (!recv_first) {
        ASSERT_TRUE((*send)->Wait(kWait).ok());  // Staged at the receiver.
        recv = *endpoints[1]->Recv(0, tag, absl::MakeSpan(out));
      }
      ASSERT_TRUE(recv->Wait(kWait).ok()) << size;
      ASSERT_TRUE((*send)->Wait(kWait).ok()) << size;
      EXPECT_TRUE(recv->IsComplete());
      EXPECT_TRUE(out == data)
          << "size " << size << " recv_first " << recv_first;
    }
  }
}

// The receiving server counts what arrives: over gRPC a message streams in
// chunks of at most bytes_per_pack bytes; the data plane sends it whole.
TEST_P(GrpcTransportTest, ReceiverCountsChunksOfBytesPerPack) {
  std::vector<std::unique_ptr<devices::Transport>> endpoints;
  for (int r = 0; r < 2; ++r) {
    GrpcTransportOptions options = Options(r, "packs");
    options.bytes_per_pack = 1000;
    auto endpoint = GrpcTransport::Create(*cluster_.servers[r], options);
    ASSERT_TRUE(endpoint.ok()) << endpoint.status();
    endpoints.push_back(*std::move(endpoint));
  }
  const Server::ReceiveStats before = cluster_.servers[1]->received();
  std::vector<std::byte> data = Pattern(10'500, 3);
  std::vector<std::byte> out(data.size());
  auto recv = endpoints[1]->Recv(0, 1, absl::MakeSpan(out));
  ASSERT_TRUE(recv.ok()) << recv.status();
  auto send = endpoints[0]->Send(1, 1, absl::MakeConstSpan(data));
  ASSERT_TRUE(send.ok()) << send.status();
  ASSERT_TRUE((*recv)->Wait(kWait).ok());
  ASSERT_TRUE((*send)->Wait(kWait).ok());
  EXPECT_TRUE(out == data);
  const Server::ReceiveStats after = cluster_.servers[1]->received();
  EXPECT_EQ(after.messages - before.messages, 1);
  EXPECT_EQ(after.bytes - before.bytes, 10'500);
  EXPECT_EQ(after.chunks - before.chunks, GetParam() == "grpc" ? 11 : 1);
  // The sender received nothing.
  EXPECT_EQ(cluster_.servers[0]->received().messages, 0);
}

TEST_P(GrpcTransportTest, TagsAreIndependentAndSameTagIsFifo) {
  auto endpoints = Pair();
  ASSERT_EQ(endpoints.size(), 2u);
  std::vector<std::vector<std::byte>> data;
  for (int i = 0; i < 4; ++i) data.push_back(Pattern(1000 + i, i));
  // Sends: tag 5 (a), tag 9, tag 5 (b), tag 2.
  std::vector<std::unique_ptr<devices::Request>> sends;
  const uint64_t tags[] = {5, 9, 5, 2};
  for (int i = 0; i < 4; ++i) {
    sends.push_back(
        *endpoints[0]->Send(1, tags[i], absl::MakeConstSpan(data[i])));
  }
  // Receives in another order.
  std::vector<std::vector<std::byte>> out;
  for (int i = 0; i < 4; ++i) out.emplace_back(1000 + i);
  auto r2 = *endpoints[1]->Recv(0, 2, absl::MakeSpan(out[3]));
  auto r9 = *endpoints[1]->Recv(0, 9, absl::MakeSpan(out[1]));
  auto r5a = *endpoints[1]->Recv(0, 5, absl::MakeSpan(out[0]));
  auto r5b = *endpoints[1]->Recv(0, 5, absl::MakeSpan(out[2]));
  for (auto* r : {r2.get(), r9.get(), r5a.get(), r5b.get()}) {
    ASSERT_TRUE(r->Wait(kWait).ok());
  }
  for (auto& s : sends) ASSERT_TRUE(s->Wait(kWait).ok());
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(out[i] == data[i]) << i;
}

TEST_P(GrpcTransportTest, SendToSelf) {
  auto endpoints = Pair();
  ASSERT_EQ(endpoints.size(), 2u);
  std::vector<std::byte> data = Pattern(300, 3), out(300);
  auto send = *endpoints[1]->Send(1, 4, absl::MakeConstSpan(data));
  auto recv = *endpoints[1]->Recv(1, 4, absl::MakeSpan(out));
  ASSERT_TRUE(send->Wait(kWait).ok());
  ASSERT_TRUE(recv->Wait(kWait).ok());
  EXPECT_TRUE(out == data);
}

TEST_P(GrpcTransportTest, SizeMismatchIsInvalidArgumentOnTheReceiver) {
  auto endpoints = Pair();
  ASSERT_EQ(endpoints.size(), 2u);
  std::vector<std::byte> data = Pattern(100, 1), small(50);
  // Receive posted first: both sides fail.
  auto recv = *endpoints[1]->Recv(0, 1, absl::MakeSpan(small));
  auto send = *endpoints[0]->Send(1, 1, absl::MakeConstSpan(data));
  absl::Status r = recv->Wait(kWait);
  EXPECT_EQ(r.code(), absl::StatusCode::kInvalidArgument) << r;
  EXPECT_NE(r.message().find("100 bytes"), std::string::npos) << r;
  EXPECT_EQ(send->Wait(kWait).code(), absl::StatusCode::kInvalidArgument);
  // Message first: the receiver fails.
  auto send2 = *endpoints[0]->Send(1, 2, absl::MakeConstSpan(data));
  ASSERT_TRUE(send2->Wait(kWait).ok());
  auto recv2 = *endpoints[1]->Recv(0, 2, absl::MakeSpan(small));
  EXPECT_EQ(recv2->Wait(kWait).code(), absl::StatusCode::kInvalidArgument);
}

TEST_P(GrpcTransportTest, WaitTimesOutNamingPeerAndTag) {
  auto endpoints = Pair();
  ASSERT_EQ(endpoints.size(), 2u);
  std::vector<std::byte> out(8);
  auto recv = *endpoints[1]->Recv(0, 77, absl::MakeSpan(out));
  absl::Status s = recv->Wait(absl::Milliseconds(50));
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(s.message().find("rank 0"), std::string::npos) << s;
  EXPECT_NE(s.message().find("tag 77"), std::string::npos) << s;
  EXPECT_NE(s.message().find(cluster_.addresses[0]), std::string::npos) << s;
  EXPECT_FALSE(recv->IsComplete());
  // Still posted: a later send completes it.
  std::vector<std::byte> data = Pattern(8, 5);
  auto send = *endpoints[0]->Send(1, 77, absl::MakeConstSpan(data));
  ASSERT_TRUE(recv->Wait(kWait).ok());
  EXPECT_TRUE(out == data);
  ASSERT_TRUE(send->Wait(kWait).ok());
}

TEST_P(GrpcTransportTest, DestroyedReceiveIsWithdrawn) {
  auto endpoints = Pair();
  ASSERT_EQ(endpoints.size(), 2u);
  std::vector<std::byte> first(16, std::byte{0}), second(16);
  { auto abandoned = *endpoints[1]->Recv(0, 3, absl::MakeSpan(first)); }
  auto recv = *endpoints[1]->Recv(0, 3, absl::MakeSpan(second));
  std::vector<std::byte> data = Pattern(16, 9);
  auto send = *endpoints[0]->Send(1, 3, absl::MakeConstSpan(data));
  ASSERT_TRUE(recv->Wait(kWait).ok());
  EXPECT_TRUE(second == data);
  EXPECT_TRUE(first == std::vector<std::byte>(16, std::byte{0}));
}

TEST_P(GrpcTransportTest, AbortFailsPendingRequestsAndReachesThePeer) {
  auto endpoints = Pair();
  ASSERT_EQ(endpoints.size(), 2u);
  std::vector<std::byte> out0(4), out1(4);
  auto mine = *endpoints[0]->Recv(1, 1, absl::MakeSpan(out0));
  auto theirs = *endpoints[1]->Recv(0, 1, absl::MakeSpan(out1));
  EXPECT_EQ(endpoints[0]->Abort(absl::OkStatus()).code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(endpoints[0]->Abort(absl::InternalError("kernel failed")).ok());
  absl::Status local = mine->Wait(kWait);
  EXPECT_EQ(local.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(local.message().find("kernel failed"), std::string::npos) << local;
  absl::Status remote = theirs->Wait(kWait);
  EXPECT_EQ(remote.code(), absl::StatusCode::kUnavailable) << remote;
  EXPECT_NE(remote.message().find("/job:worker/task:0"), std::string::npos)
      << remote;
  EXPECT_NE(remote.message().find("kernel failed"), std::string::npos)
      << remote;
  // Later calls fail too; a second abort changes nothing.
  std::vector<std::byte> data(4);
  EXPECT_EQ(endpoints[0]->Send(1, 2, absl::MakeConstSpan(data)).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(endpoints[1]->Recv(0, 2, absl::MakeSpan(out1)).status().code(),
            absl::StatusCode::kUnavailable);
  ASSERT_TRUE(endpoints[1]->Abort(absl::InternalError("second")).ok());
  EXPECT_EQ(mine->Wait(kWait).message(), local.message());
}

// A rank whose collective timed out aborts the group with its
// DEADLINE_EXCEEDED: every rank reports the timeout, not UNAVAILABLE.
TEST_P(GrpcTransportTest, AbortForATimeoutIsDeadlineExceededOnThePeers) {
  auto endpoints = Pair();
  ASSERT_EQ(endpoints.size(), 2u);
  std::vector<std::byte> out0(4), out1(4);
  auto mine = *endpoints[0]->Recv(1, 1, absl::MakeSpan(out0));
  auto theirs = *endpoints[1]->Recv(0, 1, absl::MakeSpan(out1));
  ASSERT_TRUE(endpoints[0]
                  ->Abort(absl::DeadlineExceededError(
                      "all-reduce did not finish within 2s"))
                  .ok());
  absl::Status local = mine->Wait(kWait);
  EXPECT_EQ(local.code(), absl::StatusCode::kDeadlineExceeded) << local;
  absl::Status remote = theirs->Wait(kWait);
  EXPECT_EQ(remote.code(), absl::StatusCode::kDeadlineExceeded) << remote;
  EXPECT_NE(remote.message().find("/job:worker/task:0"), std::string::npos)
      << remote;
  EXPECT_NE(remote.message().find("within 2s"), std::string::npos) << remote;
  std::vector<std::byte> data(4);
  EXPECT_EQ(endpoints[1]->Send(0, 2, absl::MakeConstSpan(data)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST_P(GrpcTransportTest, StoppingTheLocalServerFailsPendingReceives) {
  auto endpoints = Pair();
  ASSERT_EQ(endpoints.size(), 2u);
  std::vector<std::byte> out(4);
  auto recv = *endpoints[1]->Recv(0, 1, absl::MakeSpan(out));
  cluster_.servers[1]->Stop();
  absl::Status s = recv->Wait(kWait);
  EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
  // Sends to the stopped task fail as well, over the protocol's path (the
  // data plane's error names it).
  std::vector<std::byte> data(4);
  auto send = *endpoints[0]->Send(1, 1, absl::MakeConstSpan(data));
  const absl::Status sent = send->Wait(kWait);
  EXPECT_EQ(sent.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(sent.message().find("grpc+tcp") != std::string::npos,
            GetParam() == "grpc+tcp")
      << sent;
}

TEST_P(GrpcTransportTest, BadPeerIsInvalidArgument) {
  auto endpoints = Pair();
  ASSERT_EQ(endpoints.size(), 2u);
  std::vector<std::byte> data(4);
  EXPECT_EQ(endpoints[0]->Send(2, 1, absl::MakeConstSpan(data)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(endpoints[0]->Recv(-1, 1, absl::MakeSpan(data)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(GrpcTransportTest, CreateValidatesOptions) {
  Server& local = *cluster_.servers[0];
  auto with = [&](auto change) {
    GrpcTransportOptions options = Options(0, "bad");
    change(options);
    return GrpcTransport::Create(local, options).status().code();
  };
  EXPECT_EQ(with([](auto& o) { o.group_key = ""; }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](auto& o) { o.rank_targets.clear(); }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](auto& o) { o.rank = 2; }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](auto& o) { o.bytes_per_pack = 0; }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](auto& o) { o.bytes_per_pack = int64_t{1} << 40; }),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(with([](auto& o) { o.connect_timeout = absl::ZeroDuration(); }),
            absl::StatusCode::kInvalidArgument);
  // Rank 0's target is the other task's server.
  EXPECT_EQ(with([](auto& o) { o.rank = 1; }),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(GrpcTransportTest, SecondEndpointForTheSameRankIsAlreadyExists) {
  auto first = GrpcTransport::Create(*cluster_.servers[0], Options(0, "dup"));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(GrpcTransport::Create(*cluster_.servers[0], Options(0, "dup"))
                .status()
                .code(),
            absl::StatusCode::kAlreadyExists);
  first->reset();
  EXPECT_TRUE(
      GrpcTransport::Create(*cluster_.servers[0], Options(0, "dup")).ok());
}

TEST_P(GrpcTransportTest, RendezvousTimesOutNamingMissingTasks) {
  auto ports = server_internal::PickFreePorts(1);
  ASSERT_TRUE(ports.ok());
  GrpcTransportOptions options = Options(0);
  const std::string absent = absl::StrCat("127.0.0.1:", (*ports)[0]);
  options.rank_targets.push_back(absent);
  options.connect_timeout = absl::Milliseconds(300);
  auto endpoint = GrpcTransport::Create(*cluster_.servers[0], options);
  EXPECT_EQ(endpoint.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(endpoint.status().message().find("rank 2"), std::string::npos)
      << endpoint.status();
  EXPECT_NE(endpoint.status().message().find(absent), std::string::npos);
  EXPECT_EQ(endpoint.status().message().find("rank 1"), std::string::npos);
}

TEST_P(GrpcTransportTest, RendezvousWaitsForLateServers) {
  // Task 1's server starts a little after task 0 begins its rendezvous.
  auto ports = server_internal::PickFreePorts(2);
  ASSERT_TRUE(ports.ok());
  std::vector<std::string> targets;
  for (int port : *ports) targets.push_back(absl::StrCat("127.0.0.1:", port));
  auto spec = cluster::ClusterSpec::Create({{"worker", targets}});
  ASSERT_TRUE(spec.ok());
  ServerOptions server_options;
  server_options.protocol = GetParam();
  auto early = Server::Create(*spec, "worker", 0, server_options);
  ASSERT_TRUE(early.ok()) << early.status();
  std::unique_ptr<Server> late_server;
  std::thread starter([&] {
    absl::SleepFor(absl::Milliseconds(200));
    auto server = Server::Create(*spec, "worker", 1, server_options);
    ASSERT_TRUE(server.ok()) << server.status();
    late_server = *std::move(server);
  });
  GrpcTransportOptions options = Options(0, "late");
  options.rank_targets = targets;
  auto endpoint = GrpcTransport::Create(**early, options);
  starter.join();
  EXPECT_TRUE(endpoint.ok()) << endpoint.status();
}

// Endpoints whose servers were given different clusters (a misconfigured
// TF_CONFIG, or a stale task of another job on a reused port) do not form
// a group: the rendezvous is refused, naming the other cluster.
TEST_P(GrpcTransportTest, ServersOfAnotherClusterRefuseTheRendezvous) {
  // Rank 1 of the group lives in a cluster of its own (on a port picked
  // free; picked again if it was taken meanwhile).
  ServerOptions server_options;
  server_options.protocol = GetParam();
  std::string stranger;
  absl::StatusOr<std::unique_ptr<Server>> other =
      absl::UnavailableError("not tried");
  for (int attempt = 0; attempt < 5 && !other.ok(); ++attempt) {
    auto ports = server_internal::PickFreePorts(1);
    ASSERT_TRUE(ports.ok());
    stranger = absl::StrCat("127.0.0.1:", (*ports)[0]);
    auto spec = cluster::ClusterSpec::Create({{"worker", {stranger}}});
    ASSERT_TRUE(spec.ok());
    other = Server::Create(*spec, "worker", 0, server_options);
  }
  ASSERT_TRUE(other.ok()) << other.status();
  GrpcTransportOptions options = Options(0, "mixed");
  options.rank_targets = {cluster_.addresses[0], stranger};
  options.connect_timeout = absl::Seconds(5);
  auto endpoint = GrpcTransport::Create(*cluster_.servers[0], options);
  EXPECT_EQ(endpoint.status().code(), absl::StatusCode::kPermissionDenied)
      << endpoint.status();
  EXPECT_NE(endpoint.status().message().find("belongs to another cluster"),
            std::string::npos)
      << endpoint.status();
}

// Task 0 holds two ranks of the group, task 1 believes in one each (the
// workers of a MultiWorkerMirroredStrategy with different device counts):
// instead of waiting for each other's messages forever, task 1's endpoint
// is refused naming both layouts, and task 0's pending receive fails.
TEST_P(GrpcTransportTest, RanksThatSeeAnotherLayoutAreRefused) {
  GrpcTransportOptions wide = Options(0, "layout");
  wide.rank_targets = {cluster_.addresses[0], cluster_.addresses[0],
                       cluster_.addresses[1]};
  auto first = GrpcTransport::Create(*cluster_.servers[0], wide);
  ASSERT_TRUE(first.ok()) << first.status();
  std::vector<std::byte> out(4);
  auto pending = (*first)->Recv(2, 1, absl::MakeSpan(out));
  ASSERT_TRUE(pending.ok()) << pending.status();

  auto narrow =
      GrpcTransport::Create(*cluster_.servers[1], Options(1, "layout"));
  EXPECT_EQ(narrow.status().code(), absl::StatusCode::kFailedPrecondition)
      << narrow.status();
  EXPECT_NE(narrow.status().message().find(
                "sees 2 ranks (1 on /job:worker/task:0, 1 on "
                "/job:worker/task:1)"),
            std::string::npos)
      << narrow.status();
  EXPECT_NE(narrow.status().message().find(
                "sees 3 ranks (2 on /job:worker/task:0, 1 on "
                "/job:worker/task:1)"),
            std::string::npos)
      << narrow.status();
  absl::Status failed = (*pending)->Wait(kWait);
  EXPECT_EQ(failed.code(), absl::StatusCode::kFailedPrecondition) << failed;
  EXPECT_NE(failed.message().find("has two layouts"), std::string::npos)
      << failed;

  // Task 0's endpoint relays the refusal to its peers: a rank that agrees
  // with it fails too, at once or at its first message.
  GrpcTransportOptions last = wide;
  last.rank = 2;
  auto agreeing = GrpcTransport::Create(*cluster_.servers[1], last);
  absl::Status relayed = agreeing.status();
  if (agreeing.ok()) {
    auto recv = (*agreeing)->Recv(0, 1, absl::MakeSpan(out));
    relayed = recv.ok() ? (*recv)->Wait(kWait) : recv.status();
  }
  EXPECT_EQ(relayed.code(), absl::StatusCode::kFailedPrecondition) << relayed;
  EXPECT_NE(relayed.message().find("has two layouts"), std::string::npos)
      << relayed;

  // Endpoints that agree still form the group under another key, and once
  // the refused group's endpoints are gone, under its key: the aborted
  // mailboxes its notices left behind are dropped.
  EXPECT_EQ(Pair("agreed").size(), 2u);
  first->reset();
  if (agreeing.ok()) agreeing->reset();
  auto again = Pair("layout");
  ASSERT_EQ(again.size(), 2u);
  std::vector<std::byte> data = Pattern(64, 5), got(64);
  auto sent = again[0]->Send(1, 9, absl::MakeConstSpan(data));
  auto received = again[1]->Recv(0, 9, absl::MakeSpan(got));
  ASSERT_TRUE(sent.ok() && received.ok());
  EXPECT_TRUE((*received)->Wait(kWait).ok());
  EXPECT_TRUE((*sent)->Wait(kWait).ok());
  EXPECT_EQ(got, data);
}

INSTANTIATE_TEST_SUITE_P(Protocols, GrpcTransportTest,
                         ::testing::Values("grpc", "grpc+tcp"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "grpc" ? std::string("grpc")
                                                       : std::string("tcp");
                         });

// The Transport contract, over a cluster of servers in this process, with
// either protocol, and grpc+tcp with mutual TLS (test_certificates.h).
devices::conformance::TransportBackend GrpcBackend(std::string protocol,
                                                   bool tls = false) {
  std::string name = protocol == "grpc" ? "grpc" : "grpc_tcp";
  if (tls) name += "_tls";
  return {
      name,
      [protocol,
       tls](int n) -> absl::StatusOr<devices::conformance::TransportGroup> {
        ServerOptions options;
        options.protocol = protocol;
        if (tls) options.tls = server_internal::WriteTestTlsFiles().Mutual();
        absl::StatusOr<TestCluster> cluster = TestCluster::Start(n, options);
        RETURN_IF_ERROR(cluster.status());
        auto owner = std::make_shared<TestCluster>(*std::move(cluster));
        ASSIGN_OR_RETURN(auto endpoints, server_internal::GrpcTransportGroup(
                                             *owner, "conformance"));
        devices::conformance::TransportGroup group;
        group.endpoints = std::move(endpoints);
        group.owner = std::move(owner);
        return group;
      }};
}

using devices::conformance::TransportConformanceTest;

INSTANTIATE_TEST_SUITE_P(Grpc, TransportConformanceTest,
                         ::testing::Values(GrpcBackend("grpc"),
                                           GrpcBackend("grpc+tcp"),
                                           GrpcBackend("grpc+tcp",
                                                       /*tls=*/true)),
                         devices::conformance::BackendName);

TEST(GrpcTransportTokenTest, RendezvousWithTheWrongTokenIsUnauthenticated) {
  ServerOptions with_token;
  with_token.cluster_token = "s3cret";
  auto cluster = TestCluster::Start(2, with_token);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  // A third server with another token cannot join a group with them.
  ServerOptions other;
  other.cluster_token = "other";
  auto outsider = Server::CreateLocalServer(other);
  ASSERT_TRUE(outsider.ok());
  GrpcTransportOptions options;
  options.group_key = "g";
  options.rank_targets = {(*outsider)->address(), cluster->addresses[0]};
  options.rank = 0;
  options.connect_timeout = absl::Seconds(5);
  auto endpoint = GrpcTransport::Create(**outsider, options);
  EXPECT_EQ(endpoint.status().code(), absl::StatusCode::kUnauthenticated)
      << endpoint.status();
  // Members with the right token work.
  options.rank_targets = cluster->addresses;
  auto member = GrpcTransport::Create(*cluster->servers[0], options);
  EXPECT_TRUE(member.ok()) << member.status();
}

// A peer that freezes (SIGSTOP, a partition) keeps its connection open and
// reads nothing. A large send to it stalls; when gRPC's write to the socket
// is stuck with the payload, cancelling the call does not let go of it
// (gRPC completes the call's operations only once that write ends), so the
// send cannot complete and its request cannot be dropped even after the
// group was aborted (as the heartbeats do). Keepalive closes the frozen
// connection, which ends the write.
//
// The test makes the write stick: the proxy stops taking the sender's bytes
// 8 MiB into a pack of 32 MiB but still passes on the receiver's HTTP/2
// window updates for all it received, so gRPC may write on far beyond what
// the sockets between can hold (the proxy's small receive buffer and at
// most tcp_wmem's 4 MiB on the sender's side); the group is aborted only
// once the sender's bytes stopped moving, with its write blocked.
TEST(GrpcTransportFrozenPeerTest, KeepaliveReleasesASendStuckOnAFrozenPeer) {
  ServerOptions options;
  options.keepalive.time = absl::Seconds(1);
  options.keepalive.timeout = absl::Seconds(3);
  auto cluster = TestCluster::Start(2, options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string& target = cluster->addresses[1];
  auto proxy = server_internal::TcpProxy::Start(
      std::stoi(target.substr(target.rfind(':') + 1)));
  ASSERT_TRUE(proxy.ok()) << proxy.status();
  std::vector<std::unique_ptr<devices::Transport>> endpoints(2);
  std::vector<std::thread> creators;
  for (int r = 0; r < 2; ++r) {
    creators.emplace_back([&, r] {
      GrpcTransportOptions transport;
      transport.group_key = "frozen";
      transport.rank_targets = cluster->addresses;
      // Rank 0 reaches rank 1 through the proxy.
      if (r == 0) transport.rank_targets[1] = (*proxy)->address();
      transport.rank = r;
      transport.connect_timeout = absl::Seconds(10);
      transport.bytes_per_pack = int64_t{32} << 20;
      auto endpoint = GrpcTransport::Create(*cluster->servers[r], transport);
      EXPECT_TRUE(endpoint.ok()) << endpoint.status();
      if (endpoint.ok()) endpoints[r] = *std::move(endpoint);
    });
  }
  for (std::thread& t : creators) t.join();
  ASSERT_TRUE(endpoints[0] && endpoints[1]);
  (*proxy)->FreezeAfterClientBytes((*proxy)->client_bytes() + (8 << 20));
  std::vector<std::byte> data(64 << 20);
  auto send = endpoints[0]->Send(1, 1, absl::MakeConstSpan(data));
  ASSERT_TRUE(send.ok()) << send.status();
  ASSERT_TRUE((*proxy)->WaitUntilFrozen(kWait));
  ASSERT_TRUE((*proxy)->WaitUntilClientsStall(absl::Milliseconds(200), kWait));
  ASSERT_TRUE(
      endpoints[0]->Abort(absl::UnavailableError("heartbeats lost")).ok());
  // Held: gRPC's write still has the payload, so the abort cannot end the
  // send ...
  const absl::Status early = (*send)->Wait(absl::Milliseconds(300));
  EXPECT_EQ(early.code(), absl::StatusCode::kDeadlineExceeded)
      << "the send to the frozen peer let go of its payload at once (" << early
      << "; " << (*proxy)->QueuedClientBytes() << " bytes queued at the proxy)";
  // ... until keepalive (1 s without an answer, then 3 s) closes the
  // connection.
  const absl::Status sent = (*send)->Wait(absl::Seconds(15));
  EXPECT_EQ(sent.code(), absl::StatusCode::kUnavailable) << sent;
  EXPECT_NE(sent.message().find("heartbeats lost"), std::string::npos) << sent;
  (*proxy)->Thaw();  // Lets a held send end, so the test can tear down.
}

struct SelectionCase {
  int32_t n;
  int64_t bytes;
  collective::Algorithm algorithm;
};

// AUTO's choice on `costs` for each case; from `chunked_from` bytes up,
// chunks of at least `min_chunk` bytes.
void ExpectSelections(collective::GroupCosts costs,
                      std::initializer_list<SelectionCase> cases,
                      int64_t chunked_from, int64_t min_chunk) {
  ASSERT_TRUE(collective::ValidateGroupCosts(costs).ok());
  for (const SelectionCase& c : cases) {
    costs.n = c.n;
    absl::StatusOr<collective::AllReduceSelection> selection =
        collective::SelectAllReduce(c.bytes, costs);
    ASSERT_TRUE(selection.ok()) << selection.status();
    EXPECT_EQ(selection->algorithm, c.algorithm)
        << c.n << " ranks, " << c.bytes
        << " bytes: " << selection->DebugString();
    if (c.bytes >= chunked_from) {
      EXPECT_GE(selection->chunk_bytes, min_chunk) << selection->DebugString();
    }
  }
}

// AUTO over gRPC: what grpc_allreduce_worker measured fastest between
// processes (a message costs hundreds of microseconds, so small and
// mid-sized all-reduces take the fewest messages; large ones pipeline in
// chunks of MiBs).
TEST(GrpcGroupCostsTest, SelectionFollowsTheMeasuredCosts) {
  using collective::Algorithm;
  ExpectSelections(GrpcGroupCosts(),
                   {{2, 64 << 10, Algorithm::kDirect},
                    {2, 256 << 10, Algorithm::kDirect},
                    {2, 16 << 20, Algorithm::kRing},
                    {4, 64 << 10, Algorithm::kDirect},
                    {4, 1 << 20, Algorithm::kRecursiveHalvingDoubling},
                    {4, 16 << 20, Algorithm::kRing}},
                   /*chunked_from=*/16 << 20, /*min_chunk=*/1 << 20);
}

// Over the grpc+tcp data plane messages are cheap enough that ring takes
// over from 1 MiB, in pieces of at most 2 MiB (and no smaller from 4 MiB
// up: smaller pieces measured slower).
TEST(GrpcGroupCostsTest, GrpcTcpSelectionFollowsItsMeasuredCosts) {
  using collective::Algorithm;
  EXPECT_LT(GrpcGroupCosts("grpc+tcp").intra_latency_us,
            GrpcGroupCosts().intra_latency_us);
  ExpectSelections(GrpcGroupCosts("grpc+tcp"),
                   {{2, 4 << 10, Algorithm::kDirect},
                    {2, 64 << 10, Algorithm::kDirect},
                    {2, 1 << 20, Algorithm::kRing},
                    {2, 64 << 20, Algorithm::kRing},
                    {4, 64 << 10, Algorithm::kDirect},
                    {4, 256 << 10, Algorithm::kRecursiveHalvingDoubling},
                    {4, 4 << 20, Algorithm::kRing},
                    {4, 64 << 20, Algorithm::kRing}},
                   /*chunked_from=*/4 << 20, /*min_chunk=*/2 << 20);
  collective::GroupCosts costs = GrpcGroupCosts("grpc+tcp");
  for (int32_t n : {2, 4}) {
    costs.n = n;
    for (int64_t bytes : {int64_t{4} << 20, int64_t{64} << 20}) {
      absl::StatusOr<collective::AllReduceSelection> selection =
          collective::SelectAllReduce(bytes, costs);
      ASSERT_TRUE(selection.ok());
      EXPECT_EQ(selection->chunk_bytes, 2 << 20) << selection->DebugString();
    }
  }
}

}  // namespace
}  // namespace distribute
