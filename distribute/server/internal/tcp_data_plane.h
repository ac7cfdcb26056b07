// The "grpc+tcp" data plane: the payloads of GrpcTransport messages travel
// over plain TCP connections that are set up beside gRPC, as TensorFlow's
// "grpc+verbs" moves tensors over RDMA beside gRPC. gRPC still does the
// rendezvous (the Ping that finds every rank, and advertises each server's
// data port), health checks, aborts and remote functions; only the bytes of
// collective messages take the side channel, which costs the kernel's
// socket copies and nothing else: no HTTP/2 framing, no per-message call,
// and the receiver reads straight into the posted receive buffer.
//
// Wire format (integers little-endian):
//   hello  (sender -> receiver, once): u32 length, DataPlaneHello proto
//   status (receiver -> sender): u32 code, u32 length, message
//          (the answer to the hello, then one per message, in order)
//   message (sender -> receiver): u64 tag, u64 size, then size bytes
// A message completes on the sender when its status comes back, so a send
// finishes once the receiving server holds the whole message, as over gRPC,
// and errors (a size mismatch, an aborted group) reach the sender.
//
// Security is the gRPC server's: connections from hosts outside the cluster
// are closed, the hello must carry the cluster token when one is set (the
// answer is UNAUTHENTICATED otherwise, never echoing the token), and
// between servers with TLS options every connection is a TLS session with
// the servers' certificates, set up before the hello, so that the token and
// the tensors travel only inside it (data_plane_tls.h: the design, and why
// one session may serve the sender's two threads). A sender in plaintext
// is answered, in plaintext, FAILED_PRECONDITION; a TLS sender to a
// plaintext server fails its handshake with FAILED_PRECONDITION; a
// certificate that does not verify fails the handshake with
// UNAUTHENTICATED. Each hello names one transport group and rank; its
// connection serves that pair only.
//
// Example (server side; Server does this for protocol "grpc+tcp"):
//   absl::StatusOr<std::unique_ptr<server_internal::TcpDataPlane>> plane =
//       server_internal::TcpDataPlane::Start("127.0.0.1", config);
//   (*plane)->port();  // Advertised in PingResponse.data_port.
// Example (client side; GrpcTransport does this per peer):
//   server_internal::TcpPeerSender sender(
//       "127.0.0.1", port, header, token, fingerprint,
//       "rank 1 (127.0.0.1:2223)", absl::Seconds(10), /*tls=*/nullptr);
//   sender.Post(op);
#ifndef DISTRIBUTE_SERVER_INTERNAL_TCP_DATA_PLANE_H_
#define DISTRIBUTE_SERVER_INTERNAL_TCP_DATA_PLANE_H_

#include <atomic>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "distribute/server/internal/data_plane_tls.h"
#include "distribute/server/internal/mailbox.h"
#include "distribute/server/internal/peer_sender.h"
#include "distribute/server/internal/receive_counters.h"
#include "distribute/server/internal/server_security.h"
#include "distribute/server/worker_service.pb.h"

namespace distribute {
namespace server_internal {

struct TcpDataPlaneConfig {
  // "/job:worker/task:0", for error messages.
  std::string task;
  std::optional<std::string> cluster_token;
  // Not owned; must outlive the data plane.
  PeerFilter* peer_filter = nullptr;
  // Not owned; refuses tasks of other clusters; may be null (no check).
  const CallerCheck* caller_check = nullptr;
  std::shared_ptr<MailboxRegistry> mailboxes;
  // Counts the messages received, one chunk each (the Server reads it).
  std::shared_ptr<ReceiveCounters> received =
      std::make_shared<ReceiveCounters>();
  // How long a new connection may take to say hello.
  absl::Duration hello_timeout = absl::Seconds(10);
  // How many connections may wait for their hello at once; the data plane
  // closes further ones at once (each waiting one holds a thread).
  int max_connections_before_hello = 64;
  // The server's TLS credentials: every connection must then open a TLS
  // session (within hello_timeout) before its hello. Null: plaintext.
  std::shared_ptr<const DataPlaneTls> tls;
};

// The hello's bytes on the wire: u32 length (little-endian), then the
// serialized hello.
std::string EncodeDataPlaneHello(const server::DataPlaneHello& hello);

// The receiver's check of a hello's length prefix: INVALID_ARGUMENT unless it
// is in [1, 64 KiB] (the message is what the sender is told).
absl::Status CheckDataPlaneHelloLength(uint32_t length);

// The receiver's reading of a hello: `bytes` are the `length` bytes after the
// prefix (the length was checked). Returns the hello if it parses, carries
// the cluster token when `cluster_token` is set (compared in constant time)
// and names a pair that could be received from (CheckMessageHeader).
// Otherwise INVALID_ARGUMENT or UNAUTHENTICATED, whose message is what the
// sender is told: it names `task` and never echoes either token.
absl::StatusOr<server::DataPlaneHello> DecodeDataPlaneHello(
    absl::string_view bytes, const std::optional<std::string>& cluster_token,
    absl::string_view task);

// The receiving side, inside a Server: accepts connections and feeds their
// messages into the server's mailboxes.
class TcpDataPlane {
 public:
  // Listens on `host` (an address of this machine) on a port the system
  // chooses. UNAVAILABLE if it cannot.
  static absl::StatusOr<std::unique_ptr<TcpDataPlane>> Start(
      const std::string& host, TcpDataPlaneConfig config);
  TcpDataPlane(const TcpDataPlane&) = delete;
  TcpDataPlane& operator=(const TcpDataPlane&) = delete;
  ~TcpDataPlane();

  int port() const { return port_; }
  // Closes the listener, lets messages in progress finish and be answered
  // for up to 50 ms (as gRPC's handlers are), then closes every connection
  // (a message still in progress fails its receive with UNAVAILABLE) and
  // joins their threads. Idempotent.
  void Stop();

 private:
  struct Connection {
    int fd = -1;
    std::thread thread;
    std::atomic<bool> done{false};
    // Its hello was accepted.
    std::atomic<bool> greeted{false};
    // Between a message's frame and its answer.
    std::atomic<bool> busy{false};
  };

  TcpDataPlane(int listen_fd, int port, TcpDataPlaneConfig config);
  void AcceptLoop();
  void Serve(Connection& connection, std::string peer);
  // The TLS session of accepted connection `fd`, opened by `deadline`; null
  // when there is none to be had, after a plaintext sender was told why
  // (see the header comment).
  std::unique_ptr<TlsStream> AcceptTls(int fd, absl::Time deadline);
  // Joins the threads of connections that have ended.
  void Reap() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int listen_fd_;
  const int port_;
  const TcpDataPlaneConfig config_;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;

  absl::Mutex mu_;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::unique_ptr<Connection>> connections_ ABSL_GUARDED_BY(mu_);
};

// The sending side: delivers one endpoint's messages to one peer over a
// connection of its own (opened by its thread on the first Post), writing
// each message straight from the caller's buffer: Post itself writes what
// the socket takes at once (without blocking) of a message of up to
// 256 KiB with nothing ahead of it, and the sender's thread the rest. Messages
// are written back to back without waiting for their answers, and complete in
// order as the answers arrive.
class TcpPeerSender : public MessageSender {
 public:
  // `header` names the group, both ranks and the sending task.
  // `cluster_fingerprint`: the sender's ClusterSpec::Fingerprint(), sent in
  // the hello ("" when the sender is not a task). `tls`: the sending
  // server's TLS credentials, with which the connection opens a TLS session
  // before its hello (null: plaintext, for servers without TLS options).
  TcpPeerSender(std::string host, int port, server::MessageHeader header,
                std::optional<std::string> cluster_token,
                std::string cluster_fingerprint, std::string peer,
                absl::Duration connect_timeout,
                std::shared_ptr<const DataPlaneTls> tls);
  TcpPeerSender(const TcpPeerSender&) = delete;
  TcpPeerSender& operator=(const TcpPeerSender&) = delete;
  // Fails what is left (UNAVAILABLE), closes the connection and joins.
  ~TcpPeerSender() override;

  absl::Status Post(std::shared_ptr<SendOp> op) override;
  // A written op awaiting its answer completes CANCELLED at once; an op
  // being written closes the connection (every later send to this peer
  // fails with UNAVAILABLE), since a message cannot be cut short.
  void Cancel(const std::shared_ptr<SendOp>& op) override;
  void Fail(const absl::Status& status) override;

 private:
  absl::Status Connect();
  void WriteLoop();
  void AnswerLoop();
  // Writes op's frame and payload from byte `offset` of the two, over
  // `tls` when it is not null; without `blocking` only what the socket
  // takes now. The offset reached, or -1 when the connection failed.
  static int64_t WriteSome(int fd, TlsStream* tls, const SendOp& op,
                           size_t offset, bool blocking);
  // After a write of `op` (the one in writing_) reached `written`: hands a
  // partial write to the writer thread, or ends the write (failing the op
  // when the sender has failed or the write did). False when the sender
  // is failed.
  bool FinishWrite(const std::shared_ptr<SendOp>& op, int64_t written);

  const std::string host_;
  const int port_;
  const server::MessageHeader header_;
  const std::optional<std::string> cluster_token_;
  const std::string cluster_fingerprint_;
  const std::string peer_;
  const absl::Duration connect_timeout_;
  const std::shared_ptr<const DataPlaneTls> tls_context_;

  absl::Mutex mu_;
  int fd_ ABSL_GUARDED_BY(mu_) = -1;
  // The connection's TLS session (set before connected_; null without
  // TLS). Its own mutex serializes the threads' uses of it.
  std::unique_ptr<TlsStream> tls_ ABSL_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<SendOp>> queue_ ABSL_GUARDED_BY(mu_);
  // Written, or being written, and not yet answered; in order.
  std::deque<std::shared_ptr<SendOp>> unanswered_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<SendOp> writing_ ABSL_GUARDED_BY(mu_);
  // A message Post began writing that the writer thread must finish, and
  // how far Post got.
  std::shared_ptr<SendOp> resume_ ABSL_GUARDED_BY(mu_);
  size_t resume_offset_ ABSL_GUARDED_BY(mu_) = 0;
  // Set by the writer thread once the hello was answered.
  bool connected_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status failed_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread writer_;   // Started by the first Post.
  std::thread answers_;  // Started by writer_ once connected.
};

}  // namespace server_internal
}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_INTERNAL_TCP_DATA_PLANE_H_
