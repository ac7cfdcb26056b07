// TLS for the grpc+tcp data plane (tcp_data_plane.h) between servers that
// have TLS options. Each data-plane connection is a TLS session (1.2 at the
// least, 1.3 where both ends have it, as OpenSSL negotiates) in which the
// receiving server presents its certificate and key and, when the options
// give a CA, requires the sending server's certificate and verifies it
// against that CA, as the gRPC side does (LoadServerCredentials in
// server_security.h); the sender verifies the receiver's certificate
// against the CA (the system's roots without one, as gRPC's clients do) and
// the host it dialled (or tls.target_name_override). The hello, and with it
// the cluster token, travels only inside the session. OpenSSL is the
// system's libssl, the one gRPC links.
//
// Threads. The sender reads its answers on one thread while another writes
// its messages (and Post writes small ones inline), all on one socket, and
// an OpenSSL SSL object must not be used by two threads at once (this
// kernel has no kTLS to take the records over). The design: one SSL object
// per connection behind a mutex, on a non-blocking socket. Every SSL_read
// and SSL_write runs under the mutex and never blocks, so the mutex is held
// only while a call seals or opens what the socket takes or holds, never
// while waiting; a call that would block (SSL_ERROR_WANT_READ or
// SSL_ERROR_WANT_WRITE) returns 0, and its thread waits in poll() for the
// readiness that the call asked for (wants()), without the mutex, then calls
// again. A call never waits before it has tried, so bytes OpenSSL holds
// already (a record read ahead) are never stranded behind a poll(). A write
// that asks for readable bytes, or a read for writable space, waits at most
// kMaxWait at a time (the other direction's thread may take that readiness
// first), so neither direction can strand the other; with renegotiation and
// session tickets off neither happens after the handshake anyway.
//
// Why not the alternatives: a connection per direction would double the
// handshakes and split a message from its answer across two sockets, and a
// dedicated I/O thread per connection would add a hand-off (a thread
// wake-up) to every message, which Post's inline writes exist to avoid.
//
// A write that would block has had its first record sealed by OpenSSL,
// which must then be called again from the same position of the stream
// with at least as many bytes (the buffer may move:
// SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER); TcpPeerSender's writer thread does
// that when it takes over a message that Post began. Partial writes are on,
// so a Write reports the bytes of the whole records that it sent.
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

  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;
  // Frees the session; the socket stays open (its owner closes it).
  ~TlsStream();

  // Seals and sends what the socket takes now of `n` > 0 bytes at `data`:
  // the bytes sent (whole records), 0 when nothing could be (poll() for
  // wants(/*write=*/true), then call again from the same position), -1
  // when the connection failed (failure() says why). At most one thread
  // writes at a time.
  int64_t Write(const void* data, size_t n);
  // Opens what has arrived, up to `n` > 0 bytes into `data`: the bytes
  // read, 0 when none are there (poll() for wants(/*write=*/false)), -1
  // when the connection closed or failed (failure() says why). At most one
  // thread reads at a time; it may be another than the writer's.
  int64_t Read(void* data, size_t n);

  // The poll() events (POLLIN or POLLOUT) that the last Write (write) or
  // Read (!write) that returned 0 waits for.
  short wants(bool write) const {
    return (write ? write_wants_ : read_wants_).load(std::memory_order_relaxed);
  }
  // Waits until the socket has what the last call of that direction that
  // returned 0 wants, for at most `timeout` (and at most kMaxWait when it
  // wants the other direction's readiness).
  void Await(bool write, absl::Duration timeout) const;

  // Why the last Read or Write that returned -1 failed: UNAUTHENTICATED
  // when the peer refused this end's certificate (a TLS alert names why),
  // UNAVAILABLE when the connection closed or broke otherwise. The message
  // says what happened, without naming the peer (the caller does).
  absl::Status failure() const;

  int fd() const { return fd_; }

 private:
  friend class DataPlaneTls;
  TlsStream(int fd, ssl_st* ssl) : fd_(fd), ssl_(ssl) {}

  const int fd_;
  mutable absl::Mutex mu_;
  ssl_st* const ssl_ ABSL_PT_GUARDED_BY(mu_);
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
