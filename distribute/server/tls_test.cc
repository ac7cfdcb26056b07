// TLS end to end: servers with a certificate, clients that verify it, mutual
// TLS, and the gRPC transport between TLS servers of either protocol.
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "devices/status_macros.h"
#include "devices/transport.h"
#include "distribute/server/channel.h"
#include "distribute/server/grpc_transport.h"
#include "distribute/server/internal/grpc_status.h"
#include "distribute/server/internal/test_certificates.h"
#include "distribute/server/internal/test_cluster.h"
#include "distribute/server/server.h"
#include "distribute/server/worker_service.grpc.pb.h"
#include "gtest/gtest.h"

namespace distribute {
namespace {

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const server_internal::TestTlsFiles files =
        server_internal::WriteTestTlsFiles();
    key_ = files.key;
    cert_ = files.cert;
  }
  ServerOptions TlsServer(bool mutual) const {
    ServerOptions options;
    options.tls.cert_file = cert_;
    options.tls.key_file = key_;
    if (mutual) options.tls.ca_file = cert_;
    return options;
  }
  std::string key_;
  std::string cert_;
};

absl::Status Ping(const std::string& target, const ChannelOptions& options) {
  ASSIGN_OR_RETURN(auto channel, CreateChannel(target, options));
  auto stub = server::WorkerService::NewStub(channel);
  grpc::ClientContext context;
  PrepareClientContext(options, absl::Seconds(5), context);
  server::PingRequest request;
  server::PingResponse response;
  return server_internal::FromGrpcStatus(
      stub->Ping(&context, request, &response));
}

TEST_F(TlsTest, ClientsThatVerifyTheServerGetThrough) {
  auto server = Server::CreateLocalServer(TlsServer(/*mutual=*/false));
  ASSERT_TRUE(server.ok()) << server.status();
  ChannelOptions verifying;
  verifying.tls.ca_file = cert_;
  EXPECT_TRUE(Ping((*server)->target(), verifying).ok());
  // Without ca_file the server's own clients verify peers against the
  // system's roots, which do not know this self-signed certificate.
  EXPECT_EQ(Ping((*server)->target(), (*server)->channel_options()).code(),
            absl::StatusCode::kUnavailable);
  // A plaintext client cannot talk to a TLS server.
  EXPECT_EQ(Ping((*server)->target(), {}).code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(TlsTest, MutualTlsNeedsAClientCertificate) {
  auto server = Server::CreateLocalServer(TlsServer(/*mutual=*/true));
  ASSERT_TRUE(server.ok()) << server.status();
  ChannelOptions anonymous;
  anonymous.tls.ca_file = cert_;
  EXPECT_EQ(Ping((*server)->target(), anonymous).code(),
            absl::StatusCode::kUnavailable);
  ChannelOptions with_certificate = anonymous;
  with_certificate.tls.cert_file = cert_;
  with_certificate.tls.key_file = key_;
  EXPECT_TRUE(Ping((*server)->target(), with_certificate).ok());
}

TEST_F(TlsTest, MissingClientFilesAreInvalidArgumentNamingThem) {
  ChannelOptions options;
  options.tls.ca_file = "/nonexistent/ca.pem";
  auto channel = CreateChannel("127.0.0.1:1", options);
  EXPECT_EQ(channel.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(channel.status().message().find("/nonexistent/ca.pem"),
            std::string::npos);
}

// Both protocols: over grpc+tcp the messages' bytes take the data plane's
// own TLS sessions.
class TlsTransportTest : public TlsTest,
                         public ::testing::WithParamInterface<std::string> {};

TEST_P(TlsTransportTest, TransportBetweenTlsServers) {
  ServerOptions server = TlsServer(true);
  server.protocol = GetParam();
  auto cluster = server_internal::TestCluster::Start(2, server);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  std::vector<std::unique_ptr<devices::Transport>> endpoints;
  for (int r = 0; r < 2; ++r) {
    GrpcTransportOptions options;
    options.group_key = "tls";
    options.rank_targets = cluster->addresses;
    options.rank = r;
    options.connect_timeout = absl::Seconds(10);
    auto endpoint = GrpcTransport::Create(*cluster->servers[r], options);
    ASSERT_TRUE(endpoint.ok()) << endpoint.status();
    endpoints.push_back(*std::move(endpoint));
  }
  std::string data = "over TLS", out(8, '.');
  auto send = endpoints[0]->Send(
      1, 1,
      absl::MakeConstSpan(reinterpret_cast<const std::byte*>(data.data()),
                          data.size()));
  ASSERT_TRUE(send.ok());
  auto recv = endpoints[1]->Recv(
      0, 1, absl::MakeSpan(reinterpret_cast<std::byte*>(&out[0]), out.size()));
  ASSERT_TRUE(recv.ok());
  ASSERT_TRUE((*recv)->Wait(absl::Seconds(20)).ok());
  ASSERT_TRUE((*send)->Wait(absl::Seconds(20)).ok());
  EXPECT_EQ(out, data);
  // grpc+tcp servers with TLS serve a data plane (which GrpcTransport
  // takes between two of them) instead of refusing the combination.
  EXPECT_EQ(cluster->servers[1]->data_port() > 0, GetParam() == "grpc+tcp");
}

INSTANTIATE_TEST_SUITE_P(Protocols, TlsTransportTest,
                         ::testing::Values("grpc", "grpc+tcp"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "grpc" ? std::string("grpc")
                                                       : std::string("tcp");
                         });

}  // namespace
}  // namespace distribute
