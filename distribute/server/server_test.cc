#include "distribute/server/server.h"

#include <cstdlib>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <tuple>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/server/channel.h"
#include "distribute/server/internal/grpc_status.h"
#include "distribute/server/internal/test_cluster.h"
#include "distribute/server/remote_function_client.h"
#include "distribute/server/worker_service.grpc.pb.h"
#include "gtest/gtest.h"

namespace distribute {
namespace {

using server_internal::FromGrpcStatus;
using server_internal::PickFreePorts;

// Pings `target` with `options`; returns the status and fills `response`.
absl::Status Ping(const std::string& target, const ChannelOptions& options,
                  server::PingResponse* response = nullptr) {
  ASSIGN_OR_RETURN(auto channel, CreateChannel(target, options));
  auto stub = server::WorkerService::NewStub(channel);
  grpc::ClientContext context;
  PrepareClientContext(options, absl::Seconds(5), context);
  server::PingRequest request;
  server::PingResponse local;
  return FromGrpcStatus(
      stub->Ping(&context, request, response ? response : &local));
}

// Creates the server of task 0 of job `job` in make_spec(port) for a free
// port, picking another port when the chosen one was taken meanwhile.
absl::StatusOr<std::unique_ptr<Server>> CreateOnFreePort(
    const std::function<cluster::ClusterSpec(int)>& make_spec,
    const std::string& job, ServerOptions options = {}) {
  absl::StatusOr<std::unique_ptr<Server>> server =
      absl::UnavailableError("not tried");
  for (int attempt = 0; attempt < 5; ++attempt) {
    ASSIGN_OR_RETURN(auto ports, PickFreePorts(1));
    server = Server::Create(make_spec(ports[0]), job, 0, options);
    if (server.status().code() != absl::StatusCode::kUnavailable) break;
  }
  return server;
}

cluster::ClusterSpec OneWorker(int port) {
  return *cluster::ClusterSpec::Create(
      {{"worker", {absl::StrCat("127.0.0.1:", port)}}});
}

TEST(ServerTest, CreateStartsAndAnswersPing) {
  auto cluster = server_internal::TestCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto* server = &cluster->servers[0];
  EXPECT_TRUE((*server)->running());
  EXPECT_EQ((*server)->target(), "grpc://" + cluster->addresses[0]);
  EXPECT_EQ((*server)->task_name(), "/job:worker/task:0");
  server::PingResponse who;
  ASSERT_TRUE(Ping((*server)->target(), {}, &who).ok());
  EXPECT_EQ(who.job(), "worker");
  EXPECT_EQ(who.task_index(), 0);
  EXPECT_EQ(who.incarnation(), (*server)->incarnation());
  EXPECT_EQ(who.address(), (*server)->address());
}

// A task's calls say which task and cluster they come from: the server
// admits its own cluster's tasks and clients that are not tasks, and
// refuses a task of another cluster or one its cluster lacks.
TEST(ServerTest, RefusesTasksOfOtherClusters) {
  auto cluster = server_internal::TestCluster::Start(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const Server& server = *cluster->servers[0];
  // What the cluster's own servers send.
  EXPECT_EQ(cluster->servers[1]->channel_options().caller_task,
            "/job:worker/task:1");
  EXPECT_EQ(cluster->servers[1]->channel_options().cluster_fingerprint,
            cluster->spec.Fingerprint());
  EXPECT_TRUE(
      Ping(server.target(), cluster->servers[1]->channel_options()).ok());
  EXPECT_TRUE(Ping(server.target(), {}).ok());  // Not a task: admitted.

  ChannelOptions other_cluster;
  other_cluster.caller_task = "/job:worker/task:1";
  other_cluster.cluster_fingerprint =
      OneWorker(1).Fingerprint();  // Another cluster's spec.
  absl::Status refused = Ping(server.target(), other_cluster);
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << refused;
  EXPECT_TRUE(
      absl::StrContains(refused.message(), "belongs to another cluster"))
      << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(), "/job:worker/task:1"))
      << refused;

  ChannelOptions stranger;
  stranger.caller_task = "/job:ps/task:0";
  stranger.cluster_fingerprint = cluster->spec.Fingerprint();
  refused = Ping(server.target(), stranger);
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(),
                                "not a task of this server's cluster"))
      << refused;
}

// Where specs are partial by design, the check can be turned off.
TEST(ServerTest, RefuseOtherClustersOffAdmitsThem) {
  ServerOptions options;
  options.refuse_other_clusters = false;
  auto server = CreateOnFreePort(OneWorker, "worker", options);
  ASSERT_TRUE(server.ok()) << server.status();
  ChannelOptions other_cluster;
  other_cluster.caller_task = "/job:worker/task:5";
  other_cluster.cluster_fingerprint = "00000000000000ff";
  EXPECT_TRUE(Ping((*server)->target(), other_cluster).ok());
}

TEST(ServerTest, StopFromAnotherThreadEndsJoin) {
  auto server = Server::CreateLocalServer();
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_FALSE((*server)->JoinFor(absl::Milliseconds(10)));
  std::thread stopper([&] { (*server)->Stop(); });
  EXPECT_TRUE((*server)->JoinFor(absl::Seconds(10)));
  stopper.join();
  (*server)->Join();  // Returns at once once stopped.
  EXPECT_FALSE((*server)->running());
  EXPECT_EQ((*server)->Start().code(), absl::StatusCode::kFailedPrecondition);
  (*server)->Stop();  // Idempotent.
}

// A Stop() that finds another one in progress returns only when the server
// has stopped, so its caller may destroy the server (it used to return at
// once while the first still shut the services down).
TEST(ServerTest, ConcurrentStopReturnsOnceStopped) {
  auto server = Server::CreateLocalServer();
  ASSERT_TRUE(server.ok()) << server.status();
  absl::Notification started;
  ASSERT_TRUE(
      (*server)
          ->function_registry()
          .Register("slow",
                    [&](std::vector<devices::Tensor> args)
                        -> absl::StatusOr<std::vector<devices::Tensor>> {
                      started.Notify();
                      absl::SleepFor(absl::Milliseconds(600));
                      return args;
                    })
          .ok());
  RemoteFunctionClient client((*server)->channel_options());
  std::thread caller([&] {
    (void)client.Call((*server)->target(), "slow", {}, absl::Seconds(10));
  });
  ASSERT_TRUE(started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  // The first Stop waits for the running function (server shutdown lets
  // handlers return).
  std::thread first([&] { (*server)->Stop(); });
  absl::SleepFor(absl::Milliseconds(100));
  (*server)->Stop();
  EXPECT_TRUE((*server)->JoinFor(absl::ZeroDuration()));
  EXPECT_FALSE((*server)->running());
  first.join();
  caller.join();
}

TEST(ServerTest, DeferredStart) {
  ServerOptions options;
  options.start = false;
  auto server = Server::Create(OneWorker(0), "worker", 0, options);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_FALSE((*server)->running());
  EXPECT_EQ((*server)->target(), "grpc://127.0.0.1:0");
  ASSERT_TRUE((*server)->Start().ok());
  EXPECT_NE((*server)->target(), "grpc://127.0.0.1:0");
  ASSERT_TRUE((*server)->Start().ok());  // Already running.
  EXPECT_TRUE(Ping((*server)->target(), {}).ok());
}

TEST(ServerTest, LocalServerReportsItsEphemeralPort) {
  auto server = Server::CreateLocalServer();
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string target = (*server)->target();
  EXPECT_TRUE(absl::StartsWith(target, "grpc://127.0.0.1:")) << target;
  EXPECT_NE(target, "grpc://127.0.0.1:0");
  EXPECT_EQ((*server)->job_name(), "localhost");
  EXPECT_TRUE(Ping(target, {}).ok());
}

TEST(ServerTest, IncarnationsDiffer) {
  auto a = Server::CreateLocalServer();
  auto b = Server::CreateLocalServer();
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NE((*a)->incarnation(), (*b)->incarnation());
}

TEST(ServerTest, TaskNotInClusterIsInvalidArgumentNamingIt) {
  auto spec = OneWorker(2222);
  auto missing_task = Server::Create(spec, "worker", 3, {});
  EXPECT_EQ(missing_task.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing_task.status().message().find("task 3 of job \"worker\""),
            std::string::npos)
      << missing_task.status();
  auto missing_job = Server::Create(spec, "ps", 0, {});
  EXPECT_EQ(missing_job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing_job.status().message().find("\"ps\""), std::string::npos);
}

TEST(ServerTest, BadOptionsAreInvalidArgument) {
  auto spec = OneWorker(2222);
  ServerOptions options;
  options.start = false;
  options.protocol = "grpc+verbs";
  auto bad_protocol = Server::Create(spec, "worker", 0, options);
  EXPECT_EQ(bad_protocol.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_protocol.status().message().find("grpc+verbs"),
            std::string::npos);
  options.protocol = "grpc";
  options.cluster_token = "";
  EXPECT_EQ(Server::Create(spec, "worker", 0, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.cluster_token.reset();
  options.max_message_bytes = 0;
  EXPECT_EQ(Server::Create(spec, "worker", 0, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.max_message_bytes = kDefaultMaxMessageBytes;
  for (auto [time, timeout, field] :
       {std::make_tuple(absl::ZeroDuration(), absl::Seconds(10),
                        "keepalive.time"),
        std::make_tuple(absl::Seconds(10), absl::ZeroDuration(),
                        "keepalive.timeout"),
        std::make_tuple(absl::Hours(1000), absl::Seconds(10), "keepalive.time"),
        std::make_tuple(absl::Seconds(10), absl::InfiniteDuration(),
                        "keepalive.timeout")}) {
    options.keepalive.time = time;
    options.keepalive.timeout = timeout;
    auto bad = Server::Create(spec, "worker", 0, options);
    EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << field;
    EXPECT_NE(bad.status().message().find(field), std::string::npos)
        << bad.status();
    ChannelOptions channel;
    channel.keepalive = options.keepalive;
    EXPECT_EQ(CreateChannel("127.0.0.1:1", channel).status().code(),
              absl::StatusCode::kInvalidArgument)
        << field;
  }
  // An infinite time turns keepalive off.
  options.keepalive.time = absl::InfiniteDuration();
  options.keepalive.timeout = absl::Seconds(10);
  EXPECT_TRUE(Server::Create(spec, "worker", 0, options).ok());
  options.keepalive = KeepaliveOptions();
  options.tls.cert_file = "/nonexistent/server.crt";
  options.tls.key_file = "/nonexistent/server.key";
  auto bad_tls = Server::Create(spec, "worker", 0, options);
  EXPECT_EQ(bad_tls.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad_tls.status().message().find("/nonexistent/server.crt"),
            std::string::npos);
}

TEST(ServerTest, BusyPortIsUnavailable) {
  auto first = server_internal::TestCluster::Start(1);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = Server::Create(first->spec, "worker", 0, {});
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable)
      << second.status();
}

TEST(ServerTest, ClusterTokenFileIsReadWithoutItsNewline) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir = tmp == nullptr ? "/tmp" : tmp;
  const std::string good = dir + "/token", empty = dir + "/empty_token";
  std::ofstream(good) << "s3cret\r\n";
  std::ofstream(empty) << "\n";
  absl::StatusOr<std::string> token = ReadClusterTokenFile(good);
  ASSERT_TRUE(token.ok()) << token.status();
  EXPECT_EQ(*token, "s3cret");
  absl::StatusOr<std::string> none = ReadClusterTokenFile(empty);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("holds no token"), std::string::npos)
      << none.status();
  absl::StatusOr<std::string> missing = ReadClusterTokenFile(dir + "/absent");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(missing.status().message().find("/absent"), std::string::npos)
      << missing.status();
}

TEST(ServerTest, ClusterTokenIsRequired) {
  ServerOptions options;
  options.cluster_token = "s3cret";
  auto server = Server::CreateLocalServer(options);
  ASSERT_TRUE(server.ok()) << server.status();
  const std::string target = (*server)->target();
  EXPECT_EQ(Ping(target, {}).code(), absl::StatusCode::kUnauthenticated);
  ChannelOptions wrong;
  wrong.cluster_token = "guess";
  EXPECT_EQ(Ping(target, wrong).code(), absl::StatusCode::kUnauthenticated);
  EXPECT_TRUE(Ping(target, (*server)->channel_options()).ok());
}

TEST(ServerTest, CallsFromOutsideTheClusterAreRefused) {
  // The only task listens on 127.0.0.2; a client on this machine dialling it
  // arrives from 127.0.0.1, which is not a host of the cluster.
  auto at_127_0_0_2 = [](int port) {
    return *cluster::ClusterSpec::Create(
        {{"worker", {absl::StrCat("127.0.0.2:", port)}}});
  };
  auto server = CreateOnFreePort(at_127_0_0_2, "worker");
  ASSERT_TRUE(server.ok()) << server.status();
  absl::Status refused = Ping((*server)->target(), {});
  EXPECT_EQ(refused.code(), absl::StatusCode::kPermissionDenied) << refused;
  EXPECT_NE(refused.message().find("127.0.0.1"), std::string::npos) << refused;

  // The same cluster with the check off admits the call.
  ServerOptions open;
  open.restrict_to_cluster_hosts = false;
  auto open_server = CreateOnFreePort(at_127_0_0_2, "worker", open);
  ASSERT_TRUE(open_server.ok()) << open_server.status();
  EXPECT_TRUE(Ping((*open_server)->target(), {}).ok());
}

TEST(ServerTest, LoopbackClusterAdmitsLocalCallers) {
  auto server = CreateOnFreePort(
      [](int port) {
        return *cluster::ClusterSpec::Create(
            {{"worker", {absl::StrCat("127.0.0.1:", port)}},
             {"ps", {"192.0.2.10:2222"}}});
      },
      "worker");
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_TRUE(Ping((*server)->target(), {}).ok());
}

}  // namespace
}  // namespace distribute
