#include "distribute/server/internal/data_plane_tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/server/internal/server_security.h"

namespace distribute {
namespace server_internal {
namespace {

// How long a handshake waits for its socket at a time before it looks at
// the stop flag and the deadline again.
constexpr absl::Duration kHandshakePoll = absl::Milliseconds(100);
// gRPC's default cipher suites (GRPC_SSL_CIPHER_SUITES), AES-128-GCM first.
constexpr char kTls13Suites[] =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
    "TLS_CHACHA20_POLY1305_SHA256";
constexpr char kTls12Ciphers[] =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:"
    "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384";
struct CtxFree {
  void operator()(SSL_CTX* ctx) const { SSL_CTX_free(ctx); }
};
struct X509Free {
  void operator()(X509* cert) const { X509_free(cert); }
};
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct BioFree {
  void operator()(BIO* bio) const { BIO_free(bio); }
};
using CtxPtr = std::unique_ptr<SSL_CTX, CtxFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using BioPtr = std::unique_ptr<BIO, BioFree>;

}  // namespace

// ---------------------------------------------------------------------------
// The socket under OpenSSL: a BIO that reads up to kReceiveBytes with one
// recv() into a buffer that OpenSSL's reads then take from, and keeps what
// OpenSSL writes until TlsStream flushes it (see the header comment). It
// sends with MSG_NOSIGNAL (OpenSSL's own socket BIO would raise SIGPIPE
// once the peer has gone) and MSG_DONTWAIT both ways, so the socket itself
// may stay blocking.

struct TlsStream::Socket {
  int fd = -1;
  std::vector<char> in = std::vector<char>(kReceiveBytes);
  size_t in_begin = 0;
  size_t in_end = 0;
  std::string out;
  size_t out_begin = 0;
};

namespace {

TlsStream::Socket& SocketOf(BIO* bio) {
  return *static_cast<TlsStream::Socket*>(BIO_get_data(bio));
}

int SocketWrite(BIO* bio, const char* data, size_t n, size_t* written) {
  BIO_clear_retry_flags(bio);
  SocketOf(bio).out.append(data, n);
  *written = n;
  return 1;
}

int SocketRead(BIO* bio, char* data, size_t n, size_t* read) {
  BIO_clear_retry_flags(bio);
  *read = 0;
  TlsStream::Socket& socket = SocketOf(bio);
  if (socket.in_begin == socket.in_end) {
    ssize_t got;
    do {
      got = recv(socket.fd, socket.in.data(), socket.in.size(), MSG_DONTWAIT);
    } while (got < 0 && errno == EINTR);
    if (got == 0) {
      BIO_set_flags(bio, BIO_FLAGS_IN_EOF);  // OpenSSL asks BIO_eof().
      return 0;
    }
    if (got < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_read(bio);
      return 0;
    }
    socket.in_begin = 0;
    socket.in_end = static_cast<size_t>(got);
  }
  const size_t taken = std::min(n, socket.in_end - socket.in_begin);
  std::memcpy(data, socket.in.data() + socket.in_begin, taken);
  socket.in_begin += taken;
  *read = taken;
  return 1;
}

long SocketCtrl(BIO* bio, int command, long, void*) {  // NOLINT(runtime/int)
  switch (command) {
    case BIO_CTRL_FLUSH:
      return 1;  // TlsStream flushes.
    case BIO_CTRL_EOF:
      return BIO_test_flags(bio, BIO_FLAGS_IN_EOF) != 0 ? 1 : 0;
    case BIO_CTRL_WPENDING:
      return static_cast<long>(SocketOf(bio).out.size() -  // NOLINT
                               SocketOf(bio).out_begin);
    default:
      return 0;
  }
}

const BIO_METHOD* SocketMethod() {
  static const BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(
        BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
        "grpc+tcp data plane socket");
    BIO_meth_set_write_ex(m, SocketWrite);
    BIO_meth_set_read_ex(m, SocketRead);
    BIO_meth_set_ctrl(m, SocketCtrl);
    return m;
  }();
  return method;
}

// ---------------------------------------------------------------------------
// Errors.

// OpenSSL's errors queued on this thread (which it clears): their reasons
// in words, and the last one's code.
struct SslErrors {
  unsigned long last = 0;  // NOLINT(runtime/int)
  std::string text;
};

SslErrors TakeErrors() {
  SslErrors errors;
  while (const unsigned long error = ERR_get_error()) {  // NOLINT
    errors.last = error;
    const char* reason = ERR_reason_error_string(error);
    char code[256];
    if (reason == nullptr) {
      ERR_error_string_n(error, code, sizeof(code));
      reason = code;
    }
    if (!errors.text.empty()) absl::StrAppend(&errors.text, "; ");
    absl::StrAppend(&errors.text, reason);
  }
  return errors;
}

// The peer's alerts that say it refused this end's certificate.
bool RefusedOurCertificate(int reason) {
  switch (reason) {
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
      return true;
    default:
      return false;
  }
}

// What a failed OpenSSL call on `ssl` means (`error`: SSL_get_error's
// answer; `sys_errno`: errno right after the call), in words that do not
// name the peer.
absl::Status Classify(const SSL* ssl, int error, int sys_errno) {
  const SslErrors errors = TakeErrors();
  const int reason = ERR_GET_REASON(errors.last);
  if (error == SSL_ERROR_SSL) {
    const long verified = SSL_get_verify_result(ssl);  // NOLINT(runtime/int)
    if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED && verified != X509_V_OK) {
      return absl::UnauthenticatedError(absl::StrCat(
          "the peer's TLS certificate does not verify (",
          X509_verify_cert_error_string(verified),
          "): it must be signed by the CA of this server's TLS options "
          "(ca_file) and, to a sender, name the host dialled (or "
          "target_name_override)"));
    }
    if (RefusedOurCertificate(reason)) {
      return absl::UnauthenticatedError(absl::StrCat(
          "the peer refused this server's TLS certificate (TLS alert: ",
          errors.text,
          "): it must be signed by the CA of the peer's TLS options "
          "(ca_file)"));
    }
    if (reason == SSL_R_WRONG_VERSION_NUMBER ||
        reason == SSL_R_PACKET_LENGTH_TOO_LONG ||
        reason == SSL_R_HTTP_REQUEST) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the peer does not speak TLS (", errors.text,
          "): its server has no TLS options and answers in plaintext; give "
          "every server of the cluster the same TLS options"));
    }
    if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
      return absl::UnavailableError("the peer closed the connection");
    }
    return absl::UnavailableError(absl::StrCat(
        "TLS failed: ", errors.text.empty() ? "no reason given" : errors.text));
  }
  if (error == SSL_ERROR_ZERO_RETURN) {
    return absl::UnavailableError("the peer ended the TLS session");
  }
  if (error == SSL_ERROR_SYSCALL) {
    return absl::UnavailableError(
        sys_errno != 0
            ? absl::StrCat("the connection broke: ", std::strerror(sys_errno))
            : std::string("the peer closed the connection"));
  }
  return absl::UnavailableError(
      absl::StrCat("TLS failed (SSL_get_error ", error, ")",
                   errors.text.empty() ? "" : ": ", errors.text));
}

// The poll() events that a call answered `error` waits for; 0 when the
// call failed.
short Wants(int error) {
  if (error == SSL_ERROR_WANT_READ) return POLLIN;
  if (error == SSL_ERROR_WANT_WRITE) return POLLOUT;
  return 0;
}

int PollMillis(absl::Duration timeout) {
  if (timeout == absl::InfiniteDuration()) return -1;
  if (timeout <= absl::ZeroDuration()) return 0;
  return static_cast<int>(std::min<int64_t>(
      absl::ToInt64Milliseconds(timeout + absl::Milliseconds(1) -
                                absl::Nanoseconds(1)),
      std::numeric_limits<int>::max()));
}

// ---------------------------------------------------------------------------
// Credentials.

absl::Status UnreadablePem(absl::string_view field, const std::string& path,
                           absl::string_view what) {
  ERR_clear_error();
  return absl::InvalidArgumentError(
      absl::StrCat("TLS option ", field, " \"", path, "\" holds no ", what,
                   " that OpenSSL can read; give a PEM file"));
}

// The PEM certificates in `pem`, in order (none when it holds none).
std::vector<X509Ptr> ReadCertificates(const std::string& pem) {
  std::vector<X509Ptr> certificates;
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  if (bio == nullptr) return certificates;
  while (X509* certificate =
             PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr)) {
    certificates.emplace_back(certificate);
  }
  ERR_clear_error();  // The end of the file reads as an error.
  return certificates;
}

// A context with the settings both ends share.
CtxPtr NewContext(bool server) {
  CtxPtr ctx(SSL_CTX_new(server ? TLS_server_method() : TLS_client_method()));
  if (ctx == nullptr) return ctx;
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  if (SSL_CTX_set_ciphersuites(ctx.get(), kTls13Suites) != 1 ||
      SSL_CTX_set_cipher_list(ctx.get(), kTls12Ciphers) != 1) {
    return nullptr;
  }
  // Nothing but records of the stream after the handshake (see the
  // header): no renegotiation, no session tickets, no compression.
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_TICKET |
                                     SSL_OP_NO_COMPRESSION);
  if (server) SSL_CTX_set_num_tickets(ctx.get(), 0);
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE |
                                  SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  // No read-ahead: OpenSSL takes each record from the stream's own
  // receive buffer (see the header comment).
  return ctx;
}

}  // namespace

bool StartsTlsHandshake(absl::string_view first_bytes) {
  return first_bytes.size() >= 3 && first_bytes[0] == 0x16 &&
         first_bytes[1] == 0x03 && first_bytes[2] != 0 &&
         static_cast<unsigned char>(first_bytes[2]) <= 0x04;
}

// ---------------------------------------------------------------------------
// TlsStream

absl::StatusOr<std::unique_ptr<TlsStream>> TlsStream::Create(SSL_CTX* ctx,
                                                             int fd) {
  SSL* ssl = SSL_new(ctx);
  if (ssl == nullptr) {
    ERR_clear_error();
    return absl::ResourceExhaustedError("OpenSSL could not make a session");
  }
  auto socket = std::make_unique<Socket>();
  socket->fd = fd;
  BIO* bio = BIO_new(SocketMethod());
  if (bio == nullptr) {
    SSL_free(ssl);
    ERR_clear_error();
    return absl::ResourceExhaustedError("OpenSSL could not wrap the socket");
  }
  BIO_set_data(bio, socket.get());
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl, bio, bio);  // One reference, now the SSL's.
  return std::unique_ptr<TlsStream>(new TlsStream(fd, ssl, std::move(socket)));
}

TlsStream::TlsStream(int fd, SSL* ssl, std::unique_ptr<Socket> socket)
    : fd_(fd), ssl_(ssl), socket_(std::move(socket)) {}

TlsStream::~TlsStream() {
  absl::MutexLock lock(&mu_);
  SSL_free(ssl_);  // Frees the BIO; socket_ goes after it.
}

int TlsStream::FlushLocked() {
  Socket& socket = *socket_;
  while (socket.out_begin < socket.out.size()) {
    const ssize_t sent =
        send(socket.fd, socket.out.data() + socket.out_begin,
             socket.out.size() - socket.out_begin, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (sent >= 0) {
      socket.out_begin += static_cast<size_t>(sent);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      write_wants_.store(POLLOUT, std::memory_order_relaxed);
      return 0;
    }
    failure_ = absl::UnavailableError(
        absl::StrCat("the connection broke: ", std::strerror(errno)));
    return -1;
  }
  socket.out.clear();  // Keeps its capacity.
  socket.out_begin = 0;
  return 1;
}

absl::Status TlsStream::Handshake(absl::Time deadline,
                                  const std::atomic<bool>* stopping) {
  absl::MutexLock lock(&mu_);
  bool finished = false;
  while (true) {
    short events = 0;
    if (!finished) {
      ERR_clear_error();
      errno = 0;
      const int done = SSL_do_handshake(ssl_);
      const int sys_errno = errno;
      if (done == 1) {
        finished = true;
      } else {
        const int error = SSL_get_error(ssl_, done);
        events = Wants(error);
        if (events == 0) {
          absl::Status failed = Classify(ssl_, error, sys_errno);
          FlushLocked();  // The alert saying why, where the socket takes it.
          return failed;
        }
      }
    }
    // What OpenSSL wrote (the handshake's messages) goes out first.
    const int flushed = FlushLocked();
    if (flushed < 0) return failure_;
    if (flushed == 0) {
      events = POLLOUT;
    } else if (finished) {
      return absl::OkStatus();
    }
    if (stopping != nullptr && stopping->load(std::memory_order_acquire)) {
      return absl::UnavailableError("the server is stopping");
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          "the TLS handshake did not finish in time");
    }
    pollfd ready{fd_, events, 0};
    mu_.Unlock();
    poll(&ready, 1, PollMillis(std::min(deadline - now, kHandshakePoll)));
    mu_.Lock();
  }
}

int64_t TlsStream::Write(absl::Span<const absl::string_view> pieces) {
  absl::MutexLock lock(&mu_);
  const int flushed = FlushLocked();
  if (flushed <= 0) return flushed;  // Earlier records first.
  size_t sealed = 0;
  for (absl::string_view piece : pieces) {
    while (!piece.empty() && sealed < kSealBytes) {
      ERR_clear_error();
      errno = 0;
      size_t written = 0;
      const int done = SSL_write_ex(ssl_, piece.data(), piece.size(), &written);
      if (done == 1) {
        sealed += written;
        piece.remove_prefix(written);
        continue;
      }
      const int sys_errno = errno;
      const int error = SSL_get_error(ssl_, done);
      const short events = Wants(error);
      if (events == 0) {
        failure_ = Classify(ssl_, error, sys_errno);
        return -1;
      }
      // Only a session that must read first gets here (see the header).
      write_wants_.store(events, std::memory_order_relaxed);
      if (sealed > 0 && FlushLocked() < 0) return -1;
      return static_cast<int64_t>(sealed);
    }
  }
  if (sealed > 0 && FlushLocked() < 0) return -1;
  return static_cast<int64_t>(sealed);
}

bool TlsStream::pending() const {
  absl::MutexLock lock(&mu_);
  return socket_->out_begin < socket_->out.size();
}

int TlsStream::Flush() {
  absl::MutexLock lock(&mu_);
  return FlushLocked();
}

int64_t TlsStream::Read(void* data, size_t n) {
  absl::MutexLock lock(&mu_);
  ERR_clear_error();
  errno = 0;
  size_t read = 0;
  const int done = SSL_read_ex(ssl_, data, n, &read);
  if (done == 1) return static_cast<int64_t>(read);
  const int sys_errno = errno;
  const int error = SSL_get_error(ssl_, done);
  const short events = Wants(error);
  if (events != 0) {
    read_wants_.store(events, std::memory_order_relaxed);
    return 0;
  }
  failure_ = Classify(ssl_, error, sys_errno);
  return -1;
}

void TlsStream::Await(bool write, absl::Duration timeout) const {
  const short events = wants(write);
  if (events == 0) return;
  if (events != (write ? POLLOUT : POLLIN)) {
    timeout = std::min(timeout, kMaxWait);
  }
  pollfd ready{fd_, events, 0};
  poll(&ready, 1, PollMillis(timeout));
}

absl::Status TlsStream::failure() const {
  absl::MutexLock lock(&mu_);
  return failure_;
}

// ---------------------------------------------------------------------------
// DataPlaneTls

absl::StatusOr<std::shared_ptr<const DataPlaneTls>> DataPlaneTls::Create(
    const TlsOptions& tls) {
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS on the grpc+tcp data plane needs the server's certificate and "
        "key (TLS options cert_file and key_file)");
  }
  ASSIGN_OR_RETURN(std::string cert_pem,
                   ReadPemFile("certificate", tls.cert_file));
  ASSIGN_OR_RETURN(std::string key_pem,
                   ReadPemFile("private key", tls.key_file));
  std::vector<X509Ptr> chain = ReadCertificates(cert_pem);
  if (chain.empty()) {
    return UnreadablePem("cert_file", tls.cert_file, "certificate");
  }
  std::unique_ptr<EVP_PKEY, KeyFree> key;
  {
    BioPtr bio(
        BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size())));
    if (bio != nullptr) {
      key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    }
  }
  if (key == nullptr) {
    return UnreadablePem("key_file", tls.key_file, "private key");
  }
  std::vector<X509Ptr> cas;
  if (!tls.ca_file.empty()) {
    ASSIGN_OR_RETURN(std::string ca_pem,
                     ReadPemFile("CA certificate", tls.ca_file));
    cas = ReadCertificates(ca_pem);
    if (cas.empty()) {
      return UnreadablePem("ca_file", tls.ca_file, "CA certificate");
    }
  }

  CtxPtr server = NewContext(/*server=*/true);
  CtxPtr client = NewContext(/*server=*/false);
  if (server == nullptr || client == nullptr) {
    ERR_clear_error();
    return absl::ResourceExhaustedError(
        "OpenSSL could not make a TLS context for the grpc+tcp data plane");
  }
  if (X509_check_private_key(chain[0].get(), key.get()) != 1) {
    ERR_clear_error();
    return absl::InvalidArgumentError(
        absl::StrCat("TLS option key_file \"", tls.key_file,
                     "\" is not the key of the certificate in cert_file \"",
                     tls.cert_file, "\"; give the pair's two files"));
  }
  for (SSL_CTX* ctx : {server.get(), client.get()}) {
    if (SSL_CTX_use_certificate(ctx, chain[0].get()) != 1 ||
        SSL_CTX_use_PrivateKey(ctx, key.get()) != 1) {
      const SslErrors errors = TakeErrors();
      return absl::InvalidArgumentError(
          absl::StrCat("OpenSSL refuses the certificate \"", tls.cert_file,
                       "\" or the key \"", tls.key_file, "\": ", errors.text));
    }
    for (size_t i = 1; i < chain.size(); ++i) {
      SSL_CTX_add1_chain_cert(ctx, chain[i].get());
    }
    X509_STORE* store = SSL_CTX_get_cert_store(ctx);
    for (const X509Ptr& ca : cas) X509_STORE_add_cert(store, ca.get());
  }
  if (cas.empty()) {
    // As gRPC: without a CA, servers ask for no client certificate and
    // clients verify servers against the system's roots.
    SSL_CTX_set_verify(server.get(), SSL_VERIFY_NONE, nullptr);
    SSL_CTX_set_default_verify_paths(client.get());
  } else {
    SSL_CTX_set_verify(server.get(),
                       SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                       nullptr);
  }
  SSL_CTX_set_verify(client.get(), SSL_VERIFY_PEER, nullptr);
  ERR_clear_error();
  return std::shared_ptr<const DataPlaneTls>(new DataPlaneTls(
      server.release(), client.release(), tls.target_name_override));
}

DataPlaneTls::~DataPlaneTls() {
  SSL_CTX_free(server_);
  SSL_CTX_free(client_);
}

absl::StatusOr<std::unique_ptr<TlsStream>> DataPlaneTls::Accept(
    int fd, absl::Time deadline, const std::atomic<bool>& stopping) const {
  ASSIGN_OR_RETURN(std::unique_ptr<TlsStream> stream,
                   TlsStream::Create(server_, fd));
  SSL_set_accept_state(stream->ssl_);
  RETURN_IF_ERROR(stream->Handshake(deadline, &stopping));
  return stream;
}

absl::StatusOr<std::unique_ptr<TlsStream>> DataPlaneTls::Connect(
    int fd, const std::string& host, absl::Time deadline,
    absl::string_view where) const {
  ASSIGN_OR_RETURN(std::unique_ptr<TlsStream> stream,
                   TlsStream::Create(client_, fd));
  SSL* ssl = stream->ssl_;
  // The name the receiver's certificate must carry, as gRPC checks it.
  const std::string& name =
      target_name_override_.empty() ? host : target_name_override_;
  if (CanonicalIp(name).has_value()) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name.c_str());
  } else {
    SSL_set1_host(ssl, name.c_str());
    SSL_set_tlsext_host_name(ssl, name.c_str());
  }
  SSL_set_connect_state(ssl);
  absl::Status done = stream->Handshake(deadline, nullptr);
  if (!done.ok()) {
    return absl::Status(done.code(),
                        absl::StrCat("the TLS handshake with ", where,
                                     " failed: ", done.message()));
  }
  return stream;
}

}  // namespace server_internal
}  // namespace distribute
