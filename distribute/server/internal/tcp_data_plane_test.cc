#include "distribute/server/internal/tcp_data_plane.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "devices/status_macros.h"
#include "distribute/server/internal/mailbox.h"
#include "distribute/server/internal/server_security.h"
#include "distribute/server/internal/tcp_proxy.h"
#include "distribute/server/internal/test_certificates.h"
#include "distribute/server/internal/test_cluster.h"
#include "distribute/server/server.h"
#include "distribute/server/worker_service.pb.h"
#include "gtest/gtest.h"

namespace distribute {
namespace server_internal {
namespace {

constexpr absl::Duration kWait = absl::Seconds(10);

// A raw client of a data plane, to send what a TcpPeerSender never would.
class RawClient {
 public:
  explicit RawClient(int port) {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address = LoopbackAddress(port);
    connected_ = connect(fd_, reinterpret_cast<sockaddr*>(&address),
                         sizeof(address)) == 0;
    SetReceiveTimeout(kWait);
  }
  ~RawClient() { close(fd_); }

  bool connected() const { return connected_; }
  void SetReceiveTimeout(absl::Duration timeout) {
    timeval tv = absl::ToTimeval(timeout);
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  }
  bool Write(const void* data, size_t n) {
    return send(fd_, data, n, MSG_NOSIGNAL) == static_cast<ssize_t>(n);
  }
  bool Hello(const std::string& token, const std::string& group, int src,
             int dst) {
    server::DataPlaneHello hello;
    if (!token.empty()) hello.set_cluster_token(token);
    hello.mutable_header()->set_group_key(group);
    hello.mutable_header()->set_src_rank(src);
    hello.mutable_header()->set_dst_rank(dst);
    hello.mutable_header()->set_src_task("/job:test/task:0");
    const std::string bytes = hello.SerializeAsString();
    const uint32_t length = static_cast<uint32_t>(bytes.size());
    return Write(&length, sizeof(length)) && Write(bytes.data(), bytes.size());
  }
  // A hello from rank 1 to rank 0 of group "g" (no token) that the server
  // accepts.
  bool Join() {
    return Hello("", "g", 1, 0) &&
           ReadStatus().value_or(absl::UnknownError("no answer")).ok();
  }
  // A message frame and the first `sent` of its claimed `size` bytes.
  bool Message(uint64_t tag, uint64_t size, absl::string_view sent) {
    const uint64_t frame[2] = {tag, size};
    return Write(frame, sizeof(frame)) && Write(sent.data(), sent.size());
  }
  // Whether the server closed the connection (rather than the read timing
  // out with the connection still open).
  bool ClosedByServer() {
    char byte;
    const ssize_t got = recv(fd_, &byte, 1, 0);
    // A close with our bytes unread arrives as a reset.
    return got == 0 || (got < 0 && errno == ECONNRESET);
  }
  // The next status frame; nullopt when the server closed the connection.
  std::optional<absl::Status> ReadStatus() {
    uint32_t head[2];
    if (recv(fd_, head, sizeof(head), MSG_WAITALL) != sizeof(head)) {
      return std::nullopt;
    }
    std::string text(head[1], '\0');
    if (head[1] > 0 && recv(fd_, text.data(), text.size(), MSG_WAITALL) !=
                           static_cast<ssize_t>(text.size())) {
      return std::nullopt;
    }
    return absl::Status(static_cast<absl::StatusCode>(head[0]), text);
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

std::unique_ptr<Server> GrpcTcpServer(std::optional<std::string> token = {}) {
  ServerOptions options;
  options.protocol = "grpc+tcp";
  options.cluster_token = std::move(token);
  auto server = Server::CreateLocalServer(options);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

TEST(TcpDataPlaneTest, OnlyGrpcTcpServersHaveADataPort) {
  auto plain = Server::CreateLocalServer({});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)->data_port(), 0);
  std::unique_ptr<Server> server = GrpcTcpServer();
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->data_port(), 0);
  EXPECT_EQ(server->protocol(), "grpc+tcp");
}

TEST(TcpDataPlaneTest, UnknownProtocolsAreInvalidArgument) {
  ServerOptions options;
  options.protocol = "grpc+verbs";
  EXPECT_EQ(Server::CreateLocalServer(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TcpDataPlaneTest, HelloWithoutTheRightTokenIsUnauthenticated) {
  std::unique_ptr<Server> server = GrpcTcpServer("s3cret");
  ASSERT_NE(server, nullptr);
  {
    RawClient client(server->data_port());
    ASSERT_TRUE(client.connected());
    ASSERT_TRUE(client.Hello("", "g", 1, 0));
    std::optional<absl::Status> answer = client.ReadStatus();
    ASSERT_TRUE(answer.has_value());
    EXPECT_EQ(answer->code(), absl::StatusCode::kUnauthenticated) << *answer;
    EXPECT_NE(answer->message().find("carries none"), std::string::npos);
    EXPECT_TRUE(client.ClosedByServer());
  }
  RawClient client(server->data_port());
  ASSERT_TRUE(client.Hello("guess", "g", 1, 0));
  std::optional<absl::Status> answer = client.ReadStatus();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->code(), absl::StatusCode::kUnauthenticated);
  // Neither token is echoed.
  EXPECT_EQ(answer->message().find("guess"), std::string::npos) << *answer;
  EXPECT_EQ(answer->message().find("s3cret"), std::string::npos) << *answer;
  RawClient member(server->data_port());
  ASSERT_TRUE(member.Hello("s3cret", "g", 1, 0));
  answer = member.ReadStatus();
  ASSERT_TRUE(answer.has_value());
  EXPECT_TRUE(answer->ok()) << *answer;
}

// A hello naming no group, or a negative rank, is refused as the gRPC path
// refuses such a header (it used to open a mailbox nothing could receive
// from, and the sender was told OK).
TEST(TcpDataPlaneTest, HelloWithABadHeaderIsInvalidArgument) {
  std::unique_ptr<Server> server = GrpcTcpServer();
  ASSERT_NE(server, nullptr);
  for (const auto& [group, src, dst] :
       {std::make_tuple("", 1, 0), std::make_tuple("g", -1, 0),
        std::make_tuple("g", 1, -2)}) {
    RawClient client(server->data_port());
    ASSERT_TRUE(client.Hello("", group, src, dst));
    std::optional<absl::Status> answer = client.ReadStatus();
    ASSERT_TRUE(answer.has_value());
    EXPECT_EQ(answer->code(), absl::StatusCode::kInvalidArgument) << *answer;
    EXPECT_NE(answer->message().find("bad message header"), std::string::npos)
        << *answer;
  }
}

// Connections that never say hello (anyone who can reach the port may open
// them) hold a thread each until their hello deadline: past 64 at once the
// data plane closes new ones at once instead of spending a thread on each,
// and serves members again once the silent ones are gone.
TEST(TcpDataPlaneTest, ConnectionsWaitingForTheirHelloAreBounded) {
  std::unique_ptr<Server> server = GrpcTcpServer();
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<RawClient>> silent;
  for (int i = 0; i < 64; ++i) {
    silent.push_back(std::make_unique<RawClient>(server->data_port()));
    ASSERT_TRUE(silent.back()->connected());
  }
  RawClient extra(server->data_port());
  ASSERT_TRUE(extra.connected());
  // Closed at once, well before the 10 s hello deadline would close it.
  extra.SetReceiveTimeout(absl::Seconds(4));
  EXPECT_TRUE(extra.ClosedByServer());
  silent.clear();
  // The server notices the closes as its threads read them; a member gets
  // in once it has.
  bool joined = false;
  for (int attempt = 0; attempt < 100 && !joined; ++attempt) {
    RawClient member(server->data_port());
    joined = member.Join();
    if (!joined) absl::SleepFor(absl::Milliseconds(100));
  }
  EXPECT_TRUE(joined);
}

TEST(TcpDataPlaneTest, OversizedHelloIsInvalidArgument) {
  std::unique_ptr<Server> server = GrpcTcpServer();
  ASSERT_NE(server, nullptr);
  RawClient client(server->data_port());
  const uint32_t length = 1u << 30;
  ASSERT_TRUE(client.Write(&length, sizeof(length)));
  std::optional<absl::Status> answer = client.ReadStatus();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->code(), absl::StatusCode::kInvalidArgument) << *answer;
}

TEST(TcpDataPlaneTest, HostsOutsideTheClusterAreCutOff) {
  // A filter that admits one remote address only: loopback is an outsider.
  std::unique_ptr<PeerFilter> filter = PeerFilter::ForIps({"10.9.8.7"});
  TcpDataPlaneConfig config;
  config.task = "/job:worker/task:0";
  config.peer_filter = filter.get();
  config.mailboxes = std::make_shared<MailboxRegistry>();
  auto plane = TcpDataPlane::Start("127.0.0.1", config);
  ASSERT_TRUE(plane.ok()) << plane.status();
  RawClient client((*plane)->port());
  ASSERT_TRUE(client.connected());
  client.Hello("", "g", 1, 0);
  // No answer: the connection is closed unread.
  EXPECT_TRUE(client.ClosedByServer());
}

TEST(TcpDataPlaneTest, AMessageCutShortFailsItsReceiveAndLosesNothingElse) {
  std::unique_ptr<Server> server = GrpcTcpServer();
  ASSERT_NE(server, nullptr);
  auto mailbox = server->mailboxes()->Register("g", 0, {server->address()});
  ASSERT_TRUE(mailbox.ok()) << mailbox.status();
  std::vector<std::byte> out(1 << 20);
  auto recv = (*mailbox)->PostRecv(1, 5, absl::MakeSpan(out));
  ASSERT_TRUE(recv.ok());
  {
    RawClient client(server->data_port());
    ASSERT_TRUE(client.Join());
    ASSERT_TRUE(client.Message(5, 1 << 20, std::string(1000, 'x')));
  }  // Closed mid-message.
  ASSERT_TRUE((*recv)->completion.WaitFor(kWait));
  const absl::Status& status = (*recv)->completion.status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
  EXPECT_NE(status.message().find("broke"), std::string::npos) << status;
  // The mailbox itself still works: a whole message from a new connection.
  std::vector<std::byte> small(3);
  auto next = (*mailbox)->PostRecv(1, 6, absl::MakeSpan(small));
  ASSERT_TRUE(next.ok());
  RawClient client(server->data_port());
  ASSERT_TRUE(client.Join());
  ASSERT_TRUE(client.Message(6, 3, "abc"));
  std::optional<absl::Status> answer = client.ReadStatus();
  ASSERT_TRUE(answer.has_value());
  EXPECT_TRUE(answer->ok()) << *answer;
  ASSERT_TRUE((*next)->completion.WaitFor(kWait));
  EXPECT_TRUE((*next)->completion.status().ok());
  EXPECT_EQ(static_cast<char>(small[2]), 'c');
}

TEST(TcpDataPlaneTest, ASizeMismatchIsAnsweredAndTheStreamStaysInStep) {
  std::unique_ptr<Server> server = GrpcTcpServer();
  ASSERT_NE(server, nullptr);
  auto mailbox = server->mailboxes()->Register("g", 0, {server->address()});
  ASSERT_TRUE(mailbox.ok());
  std::vector<std::byte> wrong(8), right(4);
  auto mismatched = (*mailbox)->PostRecv(1, 1, absl::MakeSpan(wrong));
  auto matched = (*mailbox)->PostRecv(1, 2, absl::MakeSpan(right));
  RawClient client(server->data_port());
  ASSERT_TRUE(client.Join());
  ASSERT_TRUE(client.Message(1, 4, "wxyz"));
  ASSERT_TRUE(client.Message(2, 4, "abcd"));
  std::optional<absl::Status> answer = client.ReadStatus();
  ASSERT_TRUE(answer.has_value());
  EXPECT_EQ(answer->code(), absl::StatusCode::kInvalidArgument) << *answer;
  answer = client.ReadStatus();
  ASSERT_TRUE(answer.has_value());
  EXPECT_TRUE(answer->ok()) << *answer;
  ASSERT_TRUE((*mismatched)->completion.WaitFor(kWait));
  EXPECT_EQ((*mismatched)->completion.status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE((*matched)->completion.WaitFor(kWait));
  EXPECT_EQ(static_cast<char>(right[0]), 'a');
}

// The size in a frame is the sender's claim: a message claiming a terabyte
// that nobody has posted a receive for costs only the bytes that arrive.
TEST(TcpDataPlaneTest, AnAbsurdClaimedSizeCostsOnlyTheBytesSent) {
  std::unique_ptr<Server> server = GrpcTcpServer();
  ASSERT_NE(server, nullptr);
  auto mailbox = server->mailboxes()->Register("g", 0, {server->address()});
  ASSERT_TRUE(mailbox.ok());
  {
    RawClient client(server->data_port());
    ASSERT_TRUE(client.Join());
    ASSERT_TRUE(client.Message(9, uint64_t{1} << 40, "0123456789"));
  }
  // The message broke off: a receive that catches it before the server has
  // seen the close fails; after that it is withdrawn. Either way it is
  // never delivered, and the next whole message of that tag is.
  std::vector<std::byte> out(10);
  auto recv = (*mailbox)->PostRecv(1, 9, absl::MakeSpan(out));
  ASSERT_TRUE(recv.ok());
  if ((*recv)->completion.WaitFor(absl::Milliseconds(500))) {
    EXPECT_FALSE((*recv)->completion.status().ok());
    recv = (*mailbox)->PostRecv(1, 9, absl::MakeSpan(out));
    ASSERT_TRUE(recv.ok());
  }
  // And the server goes on serving.
  RawClient client(server->data_port());
  ASSERT_TRUE(client.Join());
  ASSERT_TRUE(client.Message(9, 10, "abcdefghij"));
  ASSERT_TRUE((*recv)->completion.WaitFor(kWait));
  EXPECT_TRUE((*recv)->completion.status().ok())
      << (*recv)->completion.status();
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(out.data()), 10),
            "abcdefghij");
}

TEST(TcpPeerSenderTest, NobodyListeningFailsTheSendNamingThePeer) {
  std::unique_ptr<Server> server = GrpcTcpServer();
  ASSERT_NE(server, nullptr);
  const int port = server->data_port();
  server->Stop();  // Its data port is closed now.
  server::MessageHeader header;
  header.set_group_key("g");
  header.set_src_rank(0);
  header.set_dst_rank(1);
  TcpPeerSender sender("127.0.0.1", port, header, std::nullopt, "",
                       "rank 1 (test peer)", absl::Seconds(5), nullptr);
  auto op = std::make_shared<SendOp>();
  op->tag = 1;
  std::vector<std::byte> data(16);
  op->data = data.data();
  op->size = data.size();
  ASSERT_TRUE(sender.Post(op).ok());
  ASSERT_TRUE(op->completion.WaitFor(kWait));
  EXPECT_EQ(op->completion.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(op->completion.status().message().find("rank 1 (test peer)"),
            std::string::npos)
      << op->completion.status();
  // Later sends fail at once with the same error.
  EXPECT_EQ(sender.Post(std::make_shared<SendOp>()).code(),
            absl::StatusCode::kUnavailable);
}

TEST(TcpPeerSenderTest, ARefusedHelloFailsTheSendWithTheServersReason) {
  std::unique_ptr<Server> server = GrpcTcpServer("s3cret");
  ASSERT_NE(server, nullptr);
  server::MessageHeader header;
  header.set_group_key("g");
  header.set_src_rank(1);
  header.set_dst_rank(0);
  TcpPeerSender sender("127.0.0.1", server->data_port(), header,
                       std::string("wrong"), "", "rank 0 (test peer)",
                       absl::Seconds(5), nullptr);
  auto op = std::make_shared<SendOp>();
  op->tag = 1;
  ASSERT_TRUE(sender.Post(op).ok());
  ASSERT_TRUE(op->completion.WaitFor(kWait));
  const absl::Status& status = op->completion.status();
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << status;
  EXPECT_NE(status.message().find("refused the connection"), std::string::npos)
      << status;
  EXPECT_NE(status.message().find("wrong cluster token"), std::string::npos)
      << status;
}

// A sender of another cluster (its hello's fingerprint differs), or one
// that names a task this cluster lacks, is refused before any byte of its
// messages is taken.
TEST(TcpPeerSenderTest, ATaskOfAnotherClusterIsRefused) {
  std::unique_ptr<Server> server = GrpcTcpServer("s3cret");
  ASSERT_NE(server, nullptr);
  struct Case {
    std::string src_task;
    std::string fingerprint;
    std::string says;
  };
  for (const Case& c :
       {Case{"/job:worker/task:0", "0123456789abcdef",
             "belongs to another cluster"},
        Case{"/job:worker/task:9", server->cluster_spec().Fingerprint(),
             "not a task of this server's cluster"}}) {
    server::MessageHeader header;
    header.set_group_key("g");
    header.set_src_rank(1);
    header.set_dst_rank(0);
    header.set_src_task(c.src_task);
    TcpPeerSender sender("127.0.0.1", server->data_port(), header,
                         std::string("s3cret"), c.fingerprint,
                         "rank 0 (test peer)", absl::Seconds(5), nullptr);
    auto op = std::make_shared<SendOp>();
    op->tag = 1;
    ASSERT_TRUE(sender.Post(op).ok());
    ASSERT_TRUE(op->completion.WaitFor(kWait));
    const absl::Status& status = op->completion.status();
    EXPECT_EQ(status.code(), absl::StatusCode::kPermissionDenied) << status;
    EXPECT_NE(status.message().find(c.says), std::string::npos) << status;
  }
}

// ---------------------------------------------------------------------------
// TLS (data_plane_tls.h): between servers with TLS options every
// connection is a TLS session opened before the hello.

class TcpDataPlaneTlsTest : public ::testing::Test {
 protected:
  void SetUp() override { files_ = WriteTestTlsFiles(); }

  // A grpc+tcp server with mutual TLS (the cluster's certificate) and
  // `token`.
  std::unique_ptr<Server> TlsServer(std::optional<std::string> token = {}) {
    ServerOptions options;
    options.protocol = "grpc+tcp";
    options.tls = files_.Mutual();
    options.cluster_token = std::move(token);
    auto server = Server::CreateLocalServer(options);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }
  static std::shared_ptr<const DataPlaneTls> Credentials(
      const TlsOptions& tls) {
    auto loaded = DataPlaneTls::Create(tls);
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    return loaded.ok() ? *std::move(loaded) : nullptr;
  }
  // A sender of group "g" from rank 1 to rank 0 at `port`.
  static std::unique_ptr<TcpPeerSender> Sender(
      int port, std::shared_ptr<const DataPlaneTls> tls,
      std::optional<std::string> token = {}) {
    server::MessageHeader header;
    header.set_group_key("g");
    header.set_src_rank(1);
    header.set_dst_rank(0);
    return std::make_unique<TcpPeerSender>(
        "127.0.0.1", port, header, std::move(token), "", "rank 0 (test peer)",
        absl::Seconds(5), std::move(tls));
  }
  // The outcome of sending `data` with tag `tag` through `sender`.
  static absl::Status Send(TcpPeerSender& sender, uint64_t tag,
                           const std::vector<std::byte>& data) {
    auto op = std::make_shared<SendOp>();
    op->tag = tag;
    op->data = data.data();
    op->size = data.size();
    RETURN_IF_ERROR(sender.Post(op));
    if (!op->completion.WaitFor(kWait)) {
      return absl::DeadlineExceededError("the send did not complete");
    }
    return op->completion.status();
  }

  TestTlsFiles files_;
};

std::vector<std::byte> Pattern(size_t n, int seed) {
  std::vector<std::byte> bytes(n);
  for (size_t i = 0; i < n; ++i) {
    bytes[i] = static_cast<std::byte>((i * 131 + seed) % 251);
  }
  return bytes;
}

// Messages of every size around a TLS record's (16 KiB, of which the
// frame takes 16 bytes in the first) arrive whole and in order, the
// inline writes (up to 256 KiB) and the writer thread's alike.
TEST_F(TcpDataPlaneTlsTest, MessagesArriveWholeOverTls) {
  std::unique_ptr<Server> server = TlsServer("s3cret");
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->data_port(), 0);
  auto mailbox = server->mailboxes()->Register("g", 0, {server->address()});
  ASSERT_TRUE(mailbox.ok()) << mailbox.status();
  const std::vector<size_t> sizes = {
      0, 1, 16368, 16369, 16384, 262144, 262145, (1 << 20) + 3, 8 << 20};
  std::vector<std::vector<std::byte>> sent, got;
  std::vector<std::shared_ptr<RecvOp>> receives;
  for (size_t i = 0; i < sizes.size(); ++i) {
    sent.push_back(Pattern(sizes[i], static_cast<int>(i)));
    got.emplace_back(sizes[i]);
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto recv = (*mailbox)->PostRecv(1, i, absl::MakeSpan(got[i]));
    ASSERT_TRUE(recv.ok()) << recv.status();
    receives.push_back(*recv);
  }
  std::unique_ptr<TcpPeerSender> sender =
      Sender(server->data_port(), Credentials(files_.Mutual()), "s3cret");
  std::vector<std::shared_ptr<SendOp>> ops;
  for (size_t i = 0; i < sizes.size(); ++i) {
    auto op = std::make_shared<SendOp>();
    op->tag = i;
    op->data = sent[i].data();
    op->size = sent[i].size();
    ASSERT_TRUE(sender->Post(op).ok());
    ops.push_back(op);
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    ASSERT_TRUE(ops[i]->completion.WaitFor(kWait)) << sizes[i];
    EXPECT_TRUE(ops[i]->completion.status().ok())
        << ops[i]->completion.status();
    ASSERT_TRUE(receives[i]->completion.WaitFor(kWait)) << sizes[i];
    EXPECT_TRUE(receives[i]->completion.status().ok())
        << receives[i]->completion.status();
    EXPECT_TRUE(got[i] == sent[i]) << "message of " << sizes[i] << " bytes";
  }
  EXPECT_EQ(server->received().messages, static_cast<int64_t>(sizes.size()));
}

// What crosses the wire: over TLS neither the cluster token nor a byte
// pattern of the tensor shows; without TLS (the control) both do.
TEST_F(TcpDataPlaneTlsTest, TheTokenAndTensorsTravelOnlyInsideTls) {
  const std::string token = "token-that-must-not-show";
  const std::string marker = "tensor-bytes-that-must-not-show";
  std::vector<std::byte> data(64 << 10);
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] = static_cast<std::byte>(marker[i % marker.size()]);
  }
  for (const bool tls : {true, false}) {
    SCOPED_TRACE(tls ? "TLS" : "plaintext");
    std::unique_ptr<Server> server = tls ? TlsServer(token) : nullptr;
    if (!tls) {
      ServerOptions options;
      options.protocol = "grpc+tcp";
      options.cluster_token = token;
      auto plain = Server::CreateLocalServer(options);
      ASSERT_TRUE(plain.ok()) << plain.status();
      server = *std::move(plain);
    }
    ASSERT_NE(server, nullptr);
    auto mailbox = server->mailboxes()->Register("g", 0, {server->address()});
    ASSERT_TRUE(mailbox.ok()) << mailbox.status();
    auto proxy = TcpProxy::Start(server->data_port());
    ASSERT_TRUE(proxy.ok()) << proxy.status();
    const std::string& address = (*proxy)->address();
    const int port = std::stoi(address.substr(address.rfind(':') + 1));
    std::unique_ptr<TcpPeerSender> sender =
        Sender(port, tls ? Credentials(files_.Mutual()) : nullptr, token);
    std::vector<std::byte> out(data.size());
    auto recv = (*mailbox)->PostRecv(1, 3, absl::MakeSpan(out));
    ASSERT_TRUE(recv.ok());
    EXPECT_TRUE(Send(*sender, 3, data).ok());
    ASSERT_TRUE((*recv)->completion.WaitFor(kWait));
    EXPECT_TRUE(out == data);
    const std::string wire = (*proxy)->client_stream();
    EXPECT_GE(wire.size(), data.size());
    EXPECT_EQ(wire.find(token) != std::string::npos, !tls);
    EXPECT_EQ(wire.find(marker) != std::string::npos, !tls);
  }
}

TEST_F(TcpDataPlaneTlsTest, APlaintextSenderIsToldTheServerWantsTls) {
  std::unique_ptr<Server> server = TlsServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<TcpPeerSender> sender =
      Sender(server->data_port(), /*tls=*/nullptr);
  const absl::Status status = Send(*sender, 1, Pattern(10, 0));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("refused the connection"), std::string::npos)
      << status;
  EXPECT_NE(status.message().find("serves grpc+tcp over TLS"),
            std::string::npos)
      << status;
}

TEST_F(TcpDataPlaneTlsTest, ATlsSenderToAPlaintextServerFailsItsHandshake) {
  std::unique_ptr<Server> server = GrpcTcpServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<TcpPeerSender> sender =
      Sender(server->data_port(), Credentials(files_.Mutual()));
  const absl::Status status = Send(*sender, 1, Pattern(10, 0));
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition) << status;
  EXPECT_NE(status.message().find("does not speak TLS"), std::string::npos)
      << status;
  EXPECT_NE(status.message().find("rank 0 (test peer)"), std::string::npos)
      << status;
}

// The receiver refuses a sender whose certificate its CA did not sign;
// with TLS 1.3 the sender learns it from the alert that answers its hello.
TEST_F(TcpDataPlaneTlsTest, ASenderCertificateTheCaDidNotSignIsRefused) {
  std::unique_ptr<Server> server = TlsServer();
  ASSERT_NE(server, nullptr);
  std::unique_ptr<TcpPeerSender> sender =
      Sender(server->data_port(), Credentials(files_.Outsider()));
  const absl::Status status = Send(*sender, 1, Pattern(10, 0));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << status;
  EXPECT_NE(status.message().find("refused this server's TLS certificate"),
            std::string::npos)
      << status;
  // The server keeps serving senders it trusts.
  auto mailbox = server->mailboxes()->Register("g", 0, {server->address()});
  ASSERT_TRUE(mailbox.ok());
  std::vector<std::byte> out(10);
  auto recv = (*mailbox)->PostRecv(1, 2, absl::MakeSpan(out));
  ASSERT_TRUE(recv.ok());
  std::unique_ptr<TcpPeerSender> trusted =
      Sender(server->data_port(), Credentials(files_.Mutual()));
  EXPECT_TRUE(Send(*trusted, 2, Pattern(10, 0)).ok());
}

// The sender refuses a receiver whose certificate its CA did not sign.
TEST_F(TcpDataPlaneTlsTest, AReceiverCertificateTheCaDidNotSignIsRefused) {
  ServerOptions options;
  options.protocol = "grpc+tcp";
  options.tls = files_.Outsider();
  options.tls.ca_file = files_.untrusted_cert;  // Trusts only itself.
  auto outsider = Server::CreateLocalServer(options);
  ASSERT_TRUE(outsider.ok()) << outsider.status();
  std::unique_ptr<TcpPeerSender> sender =
      Sender((*outsider)->data_port(), Credentials(files_.Mutual()));
  const absl::Status status = Send(*sender, 1, Pattern(10, 0));
  EXPECT_EQ(status.code(), absl::StatusCode::kUnauthenticated) << status;
  EXPECT_NE(status.message().find("does not verify"), std::string::npos)
      << status;
  EXPECT_NE(status.message().find("rank 0 (test peer)"), std::string::npos)
      << status;
}

// A connection that opens no TLS session within the hello timeout is
// closed: a handshake cannot hold a thread of the server for ever.
TEST_F(TcpDataPlaneTlsTest, ASilentConnectionIsClosedAfterTheHelloTimeout) {
  auto tls = DataPlaneTls::Create(files_.Mutual());
  ASSERT_TRUE(tls.ok()) << tls.status();
  TcpDataPlaneConfig config;
  config.task = "/job:worker/task:0";
  config.mailboxes = std::make_shared<MailboxRegistry>();
  config.hello_timeout = absl::Milliseconds(300);
  config.tls = *tls;
  auto plane = TcpDataPlane::Start("127.0.0.1", config);
  ASSERT_TRUE(plane.ok()) << plane.status();
  RawClient silent((*plane)->port());
  ASSERT_TRUE(silent.connected());
  RawClient half((*plane)->port());
  ASSERT_TRUE(half.connected());
  ASSERT_TRUE(half.Write("\x16\x03\x01\x00\x40", 5));  // A record's header.
  EXPECT_TRUE(silent.ClosedByServer());
  EXPECT_TRUE(half.ClosedByServer());
}

TEST(HostOfTest, StripsPortAndBrackets) {
  EXPECT_EQ(HostOf("127.0.0.1:2222"), "127.0.0.1");
  EXPECT_EQ(HostOf("[::1]:2222"), "::1");
  EXPECT_EQ(HostOf("worker-0.example:80"), "worker-0.example");
}

}  // namespace
}  // namespace server_internal
}  // namespace distribute
