#include "distribute/server/internal/data_plane_tls.h"

#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "distribute/server/internal/test_certificates.h"
#include "distribute/server/internal/test_cluster.h"
#include "gtest/gtest.h"

namespace distribute {
namespace server_internal {
namespace {

constexpr absl::Duration kWait = absl::Seconds(10);

// Two ends of a loopback TCP connection, each with small socket buffers
// so that a few hundred KiB fill them.
struct SocketPair {
  int client = -1;
  int server = -1;
  ~SocketPair() {
    if (client >= 0) close(client);
    if (server >= 0) close(server);
  }
};

void SmallBuffers(int fd) {
  const int bytes = 32 << 10;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bytes, sizeof(bytes));
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof(bytes));
}

bool Connected(SocketPair& pair) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  SmallBuffers(listener);  // Inherited by the accepted socket.
  sockaddr_in address = LoopbackAddress(0);
  socklen_t length = sizeof(address);
  if (bind(listener, reinterpret_cast<sockaddr*>(&address), length) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&address), &length) !=
          0) {
    close(listener);
    return false;
  }
  pair.client = socket(AF_INET, SOCK_STREAM, 0);
  SmallBuffers(pair.client);
  const bool ok = connect(pair.client, reinterpret_cast<sockaddr*>(&address),
                          sizeof(address)) == 0 &&
                  (pair.server = accept(listener, nullptr, nullptr)) >= 0;
  close(listener);
  return ok;
}

// Both ends' sessions over one connection, handshaken with `client_tls`
// and `server_tls`.
struct Sessions {
  absl::Status client_status;
  absl::Status server_status;
  std::unique_ptr<TlsStream> client;
  std::unique_ptr<TlsStream> server;
};

Sessions Handshake(const SocketPair& pair, const DataPlaneTls& client_tls,
                   const DataPlaneTls& server_tls) {
  Sessions sessions;
  std::atomic<bool> stopping{false};
  std::thread accepting([&] {
    auto accepted =
        server_tls.Accept(pair.server, absl::Now() + kWait, stopping);
    sessions.server_status = accepted.status();
    if (accepted.ok()) sessions.server = *std::move(accepted);
  });
  auto connected = client_tls.Connect(pair.client, "127.0.0.1",
                                      absl::Now() + kWait, "the test server");
  sessions.client_status = connected.status();
  if (connected.ok()) sessions.client = *std::move(connected);
  if (!connected.ok()) shutdown(pair.client, SHUT_RDWR);  // Ends Accept.
  accepting.join();
  return sessions;
}

std::vector<char> Pattern(size_t n, int seed) {
  std::vector<char> bytes(n);
  for (size_t i = 0; i < n; ++i) {
    bytes[i] = static_cast<char>((i * 131 + seed) % 251);
  }
  return bytes;
}

// Writes every byte of `data` from `offset` on, waiting as the stream says,
// and flushes.
bool WriteFrom(TlsStream& stream, const std::vector<char>& data,
               size_t offset) {
  while (offset < data.size()) {
    const int64_t sent =
        stream.Write(data.data() + offset, data.size() - offset);
    if (sent < 0) return false;
    if (sent == 0) stream.Await(/*write=*/true, kWait);
    offset += static_cast<size_t>(sent);
  }
  while (true) {
    const int flushed = stream.Flush();
    if (flushed != 0) return flushed > 0;
    stream.Await(/*write=*/true, kWait);
  }
}

bool ReadAll(TlsStream& stream, std::vector<char>& data) {
  size_t offset = 0;
  while (offset < data.size()) {
    const int64_t got = stream.Read(data.data() + offset, data.size() - offset);
    if (got < 0) return false;
    if (got == 0) stream.Await(/*write=*/false, kWait);
    offset += static_cast<size_t>(got);
  }
  return true;
}

class DataPlaneTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    files_ = WriteTestTlsFiles();
    auto cluster = DataPlaneTls::Create(files_.Mutual());
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = *std::move(cluster);
  }
  TestTlsFiles files_;
  std::shared_ptr<const DataPlaneTls> cluster_;
};

TEST(StartsTlsHandshakeTest, TellsTlsRecordsFromPlaintextHellos) {
  EXPECT_TRUE(StartsTlsHandshake(absl::string_view("\x16\x03\x01\x02", 4)));
  EXPECT_TRUE(StartsTlsHandshake(absl::string_view("\x16\x03\x03", 3)));
  EXPECT_FALSE(StartsTlsHandshake(absl::string_view("\x16\x03", 2)));
  // A plaintext hello of 790 (0x316) bytes starts with 16 03 00.
  EXPECT_FALSE(StartsTlsHandshake(absl::string_view("\x16\x03\x00\x00", 4)));
  EXPECT_FALSE(StartsTlsHandshake(absl::string_view("\x2a\x00\x00\x00", 4)));
}

// Sealed records that the socket did not take wait in the stream, which
// a later call sends from another thread (as TcpPeerSender's writer thread
// finishes a message Post began): the receiver gets every byte in order.
TEST_F(DataPlaneTlsTest, SealedBytesWaitUntilAnotherThreadFlushesThem) {
  SocketPair pair;
  ASSERT_TRUE(Connected(pair));
  Sessions sessions = Handshake(pair, *cluster_, *cluster_);
  ASSERT_TRUE(sessions.client_status.ok()) << sessions.client_status;
  ASSERT_TRUE(sessions.server_status.ok()) << sessions.server_status;
  const std::vector<char> data = Pattern(8 << 20, 7);
  size_t offset = 0;
  while (true) {
    const int64_t sent =
        sessions.client->Write(data.data() + offset, data.size() - offset);
    ASSERT_GE(sent, 0) << sessions.client->failure();
    if (sent == 0) break;  // Nobody reads: the socket is full.
    EXPECT_LE(sent, static_cast<int64_t>(TlsStream::kSealBytes));
    offset += static_cast<size_t>(sent);
    ASSERT_LT(offset, data.size()) << "the socket never filled";
  }
  EXPECT_TRUE(sessions.client->pending());
  EXPECT_EQ(sessions.client->wants(/*write=*/true), POLLOUT);
  bool written = false;
  std::thread writer(
      [&] { written = WriteFrom(*sessions.client, data, offset); });
  std::vector<char> got(data.size());
  EXPECT_TRUE(ReadAll(*sessions.server, got)) << sessions.server->failure();
  writer.join();
  EXPECT_TRUE(written) << sessions.client->failure();
  EXPECT_FALSE(sessions.client->pending());
  EXPECT_TRUE(got == data);
}

// Each end writes and reads at once from two threads on one session, as a
// sender's writer and answer threads do, with buffers far smaller than
// what moves: no direction strands the other.
TEST_F(DataPlaneTlsTest, BothDirectionsAtOnceOnOneSession) {
  SocketPair pair;
  ASSERT_TRUE(Connected(pair));
  Sessions sessions = Handshake(pair, *cluster_, *cluster_);
  ASSERT_TRUE(sessions.client_status.ok()) << sessions.client_status;
  ASSERT_TRUE(sessions.server_status.ok()) << sessions.server_status;
  const std::vector<char> up = Pattern(8 << 20, 1);
  const std::vector<char> down = Pattern(8 << 20, 2);
  std::vector<char> got_up(up.size()), got_down(down.size());
  bool ok[4] = {false, false, false, false};
  std::vector<std::thread> threads;
  threads.emplace_back([&] { ok[0] = WriteFrom(*sessions.client, up, 0); });
  threads.emplace_back([&] { ok[1] = WriteFrom(*sessions.server, down, 0); });
  threads.emplace_back([&] { ok[2] = ReadAll(*sessions.server, got_up); });
  threads.emplace_back([&] { ok[3] = ReadAll(*sessions.client, got_down); });
  for (std::thread& thread : threads) thread.join();
  for (bool each : ok) EXPECT_TRUE(each);
  EXPECT_TRUE(got_up == up);
  EXPECT_TRUE(got_down == down);
}

TEST_F(DataPlaneTlsTest, AClosedPeerFailsReadsAndWrites) {
  SocketPair pair;
  ASSERT_TRUE(Connected(pair));
  Sessions sessions = Handshake(pair, *cluster_, *cluster_);
  ASSERT_TRUE(sessions.client_status.ok()) << sessions.client_status;
  shutdown(pair.server, SHUT_RDWR);
  char byte = 0;
  int64_t got = 0;
  while ((got = sessions.client->Read(&byte, 1)) == 0) {
    sessions.client->Await(/*write=*/false, kWait);
  }
  EXPECT_EQ(got, -1);
  EXPECT_EQ(sessions.client->failure().code(), absl::StatusCode::kUnavailable)
      << sessions.client->failure();
}

TEST_F(DataPlaneTlsTest, AServerCertificateTheCaDidNotSignIsUnauthenticated) {
  SocketPair pair;
  ASSERT_TRUE(Connected(pair));
  auto outsider = DataPlaneTls::Create(files_.Outsider());
  ASSERT_TRUE(outsider.ok()) << outsider.status();
  Sessions sessions = Handshake(pair, *cluster_, **outsider);
  EXPECT_EQ(sessions.client_status.code(), absl::StatusCode::kUnauthenticated)
      << sessions.client_status;
  EXPECT_NE(sessions.client_status.message().find("does not verify"),
            std::string::npos)
      << sessions.client_status;
  EXPECT_NE(sessions.client_status.message().find("the test server"),
            std::string::npos)
      << sessions.client_status;
  EXPECT_FALSE(sessions.server_status.ok());
}

TEST_F(DataPlaneTlsTest, ACertificateForAnotherHostIsUnauthenticated) {
  SocketPair pair;
  ASSERT_TRUE(Connected(pair));
  TlsOptions elsewhere = files_.Mutual();
  elsewhere.target_name_override = "other.example";
  auto client = DataPlaneTls::Create(elsewhere);
  ASSERT_TRUE(client.ok()) << client.status();
  Sessions sessions = Handshake(pair, **client, *cluster_);
  EXPECT_EQ(sessions.client_status.code(), absl::StatusCode::kUnauthenticated)
      << sessions.client_status;
  EXPECT_NE(sessions.client_status.message().find("hostname mismatch"),
            std::string::npos)
      << sessions.client_status;
}

TEST_F(DataPlaneTlsTest, CredentialsThatCannotBeUsedAreInvalidArgument) {
  TlsOptions mismatched = files_.Mutual();
  mismatched.key_file = files_.untrusted_key;
  auto loaded = DataPlaneTls::Create(mismatched);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(loaded.status().message().find("is not the key of"),
            std::string::npos)
      << loaded.status();

  TlsOptions not_pem = files_.Mutual();
  not_pem.ca_file = files_.key;  // A key, not a certificate.
  loaded = DataPlaneTls::Create(not_pem);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(loaded.status().message().find(files_.key), std::string::npos)
      << loaded.status();

  TlsOptions missing = files_.Mutual();
  missing.cert_file = "/nonexistent/cert.pem";
  loaded = DataPlaneTls::Create(missing);
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(loaded.status().message().find("/nonexistent/cert.pem"),
            std::string::npos)
      << loaded.status();
}

}  // namespace
}  // namespace server_internal
}  // namespace distribute
