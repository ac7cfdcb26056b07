// TLS for the grpc+tcp data plane (tcp_data_plane.h) between servers that
// have TLS options. Each data-plane connection is a TLS session (1.2 at the
// least, 1.3 where both ends have it, as OpenSSL negotiates) in which the
// receiving server presents its certificate and key and, when the options
// give a CA, requires the sending server's certificate and verifies it
// against that CA, as the gRPC side does (LoadServerCredentials in
// server_security.h); the sender verifies the receiver's certificate
// against the CA (the system's roots without one, as gRPC's clients do) and
// the host it dialled (or tls.target_name_override). The hello, and with it
// the cluster token, travels only inside the session. Both ends offer
// gRPC's default cipher suites, in gRPC's order. OpenSSL is the system's
// libssl, the one gRPC links.
//
// Threads. The sender reads its answers on one thread while another writes
// its messages (and Post writes small ones inline), all on one socket, and
// an OpenSSL SSL object must not be used by two threads at once (this
// kernel has no kTLS to take the records over). The design: one SSL object
// per connection behind a mutex, over a socket read and written without
// blocking (MSG_DONTWAIT). Every call into OpenSSL runs under the mutex and
// never blocks, so the mutex is held only while a call seals or opens
// records, never while waiting; a call that cannot proceed returns 0, and
// its thread waits in poll() for the readiness it needs (wants()), without
// the mutex, then calls again. A call never waits before it has tried, so
// bytes the stream holds already are never stranded behind a poll(). A
// wait for the other direction's readiness (a write that needs bytes read:
// only renegotiation, which is off, would) lasts at most kMaxWait at a
// time, so that neither direction can strand the other.
//
// The records do not go to the socket one by one: OpenSSL seals them into
// the stream's own send buffer, and Write sends up to kSealBytes of them
// with one send(); reads take up to kReceiveBytes of records with one
// recv() into the stream's receive buffer, from which OpenSSL opens them.
// With OpenSSL's own socket I/O each 16 KiB record cost a send() and one
// or two recv() (with read-ahead on, one, but OpenSSL then moves the rest
// of its read buffer to the front for every record): all-reduces between 2
// bound processes took 1.94 ms at 1 MiB and 8.3 ms at 4 MiB against 1.70
// and 7.9 ms this way (grpc_allreduce_worker, one round each, on a loaded
// machine). A Write holds the mutex while it seals up to kSealBytes (about
// 60 us), which is the longest the other direction waits for it. Since
// OpenSSL's writes never block, a Write never has to be repeated with the
// same bytes (OpenSSL's rule for a write that would block): what it
// returns it has sealed, and sealed bytes that the socket did not take
// wait in the stream (pending()) until Flush().
//
// Why not the alternatives: a connection per direction would double the
// handshakes and split a message from its answer across two sockets, and a
// dedicated I/O thread per connection would add a hand-off (a thread
// wake-up) to every message, which Post's inline writes exist to avoid.
//
// Example (the receiving side):
//   absl::StatusOr<std::shared_ptr<const DataPlaneTls>> tls =
//       DataPlaneTls::Create(options.tls);
//   absl::StatusOr<std::unique_ptr<TlsStream>> session =
//       (*tls)->Accept(fd, deadline, stopping);
//   int64_t n = (*session)->Read(buffer, size);  // 0: poll for wants().
#ifndef DISTRIBUTE_SERVER_INTERNAL_DATA_PLANE_TLS_H_
#define DISTRIBUTE_SERVER_INTERNAL_DATA_PLANE_TLS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "distribute/server/channel.h"

// OpenSSL's SSL and SSL_CTX.
struct ssl_st;
struct ssl_ctx_st;

namespace distribute {
namespace server_internal {

// Whether the first bytes a connection sent (at least 3) open a TLS
// handshake record (content type 22, protocol version 3.x). A grpc+tcp
// hello in plaintext never does: its u32 length is at most 64 KiB, so its
// third byte is 0 or its first is not 22.
bool StartsTlsHandshake(absl::string_view first_bytes);

// One TLS session over a connected socket (see the header comment).
class TlsStream {
 public:
  // The longest a wait for the other direction's readiness lasts.
  static constexpr absl::Duration kMaxWait = absl::Milliseconds(100);
  // The most plaintext one Write seals, and so about the most one send()
  // takes.
  static constexpr size_t kSealBytes = size_t{256} << 10;
  // The most one recv() takes.
  static constexpr size_t kReceiveBytes = size_t{256} << 10;

  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;
  // Frees the session; the socket stays open (its owner closes it).
  ~TlsStream();

  // Seals up to kSealBytes of the `n` > 0 bytes at `data` and sends what
  // the socket takes of them: the bytes sealed (the caller's buffer is free
  // of them; some may be pending()); 0 when nothing could be, because
  // bytes sealed before still wait for the socket (poll() for
  // wants(/*write=*/true), or Await, then call again); -1 when the
  // connection failed (failure() says why). One thread writes at a time.
  int64_t Write(const void* data, size_t n) {
    const absl::string_view piece(static_cast<const char*>(data), n);
    return Write(absl::MakeConstSpan(&piece, 1));
  }
  // The same for the bytes of `pieces` in order, as one stream.
  int64_t Write(absl::Span<const absl::string_view> pieces);
  // Whether sealed bytes wait for the socket.
  bool pending() const;
  // Sends what the socket takes of the pending bytes: 1 when none are left
  // pending, 0 when some are (wait as for Write), -1 when the connection
  // failed. Only the writing thread flushes.
  int Flush();
  // Opens what has arrived, up to `n` > 0 bytes into `data`: the bytes
  // read, 0 when none are there (poll() for wants(/*write=*/false)), -1
  // when the connection closed or failed (failure() says why). At most one
  // thread reads at a time; it may be another than the writer's.
  int64_t Read(void* data, size_t n);

  // The poll() events (POLLIN or POLLOUT) that the last Write or Flush
  // (write) or Read (!write) that returned 0 waits for.
  short wants(bool write) const {
    return (write ? write_wants_ : read_wants_).load(std::memory_order_relaxed);
  }
  // Waits until the socket has what the last call of that direction that
  // returned 0 wants, for at most `timeout` (and at most kMaxWait when it
  // wants the other direction's readiness).
  void Await(bool write, absl::Duration timeout) const;

  // Why the last Read, Write or Flush that returned -1 failed:
  // UNAUTHENTICATED when the peer refused this end's certificate (a TLS
  // alert names why), UNAVAILABLE when the connection closed or broke
  // otherwise. The message says what happened, without naming the peer
  // (the caller does).
  absl::Status failure() const;

  int fd() const { return fd_; }

  // The socket's side of the session, which OpenSSL reads and writes
  // through (defined in the .cc).
  struct Socket;

 private:
  friend class DataPlaneTls;
  // A session of `ctx` over `fd`; RESOURCE_EXHAUSTED when OpenSSL cannot
  // make one.
  static absl::StatusOr<std::unique_ptr<TlsStream>> Create(ssl_ctx_st* ctx,
                                                           int fd);
  TlsStream(int fd, ssl_st* ssl, std::unique_ptr<Socket> socket);
  // The handshake, by `deadline`; gives up once `stopping` (when given) is
  // set.
  absl::Status Handshake(absl::Time deadline,
                         const std::atomic<bool>* stopping);
  // Flush()'s work.
  int FlushLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int fd_;
  mutable absl::Mutex mu_;
  ssl_st* const ssl_ ABSL_PT_GUARDED_BY(mu_);
  const std::unique_ptr<Socket> socket_ ABSL_PT_GUARDED_BY(mu_);
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  std::atomic<short> read_wants_{0};
  std::atomic<short> write_wants_{0};
};

// A server's TLS credentials for its data plane: an OpenSSL context to
// accept connections with and one to open them with. Shared by the
// server's data plane and its transports' senders.
class DataPlaneTls {
 public:
  // The contexts of `tls` (enabled, with cert_file and key_file, as a
  // server's TLS options are). INVALID_ARGUMENT naming the file that cannot
  // be read or holds no PEM certificate (or key) that OpenSSL reads, or a
  // key that does not match the certificate.
  static absl::StatusOr<std::shared_ptr<const DataPlaneTls>> Create(
      const TlsOptions& tls);
  DataPlaneTls(const DataPlaneTls&) = delete;
  DataPlaneTls& operator=(const DataPlaneTls&) = delete;
  ~DataPlaneTls();

  // The receiving side's handshake on accepted socket `fd` (left
  // non-blocking), by `deadline`; gives up once `stopping` is set. On
  // failure OpenSSL has sent the peer an alert where it could (for a
  // certificate not signed by the CA, say); the status is the receiver's
  // to log or drop.
  absl::StatusOr<std::unique_ptr<TlsStream>> Accept(
      int fd, absl::Time deadline, const std::atomic<bool>& stopping) const;

  // The sending side's handshake on connected socket `fd` (left
  // non-blocking) with the data plane of `host` (the name or address
  // dialled), by `deadline`. `where` names the peer in errors. Errors:
  // UNAUTHENTICATED when the receiver's certificate does not verify (not
  // signed by the CA, or not for `host`) or the receiver refused this
  // end's; FAILED_PRECONDITION when the receiver answered in plaintext (a
  // server without TLS options); DEADLINE_EXCEEDED when the handshake did
  // not finish by `deadline`; UNAVAILABLE when the connection broke.
  absl::StatusOr<std::unique_ptr<TlsStream>> Connect(
      int fd, const std::string& host, absl::Time deadline,
      absl::string_view where) const;

 private:
  DataPlaneTls(ssl_ctx_st* server, ssl_ctx_st* client,
               std::string target_name_override)
      : server_(server),
        client_(client),
        target_name_override_(std::move(target_name_override)) {}

  ssl_ctx_st* const server_;
  ssl_ctx_st* const client_;
  const std::string target_name_override_;
};

}  // namespace server_internal
}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_INTERNAL_DATA_PLANE_TLS_H_
