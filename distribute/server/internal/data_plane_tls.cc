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
// OpenSSL's read buffer with read-ahead: one recv() takes up to this many
// bytes of records (the default, one record, costs two recv() per 16 KiB
// record: its header, then its body).
constexpr size_t kReadBufferBytes = size_t{256} << 10;

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

// ---------------------------------------------------------------------------
// The socket under OpenSSL. OpenSSL's own socket BIO writes with write(),
// which raises SIGPIPE once the peer has gone (the data plane's plaintext
// writes pass MSG_NOSIGNAL); this one sends with MSG_NOSIGNAL, and with
// MSG_DONTWAIT both ways, so the socket itself may stay blocking.

int SocketOf(BIO* bio) {
  return static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(bio)));
}

int SocketWrite(BIO* bio, const char* data, size_t n, size_t* written) {
  BIO_clear_retry_flags(bio);
  *written = 0;
  ssize_t sent;
  do {
    sent = send(SocketOf(bio), data, n, MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (sent < 0 && errno == EINTR);
  if (sent >= 0) {
    *written = static_cast<size_t>(sent);
    return 1;
  }
  if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(bio);
  return 0;
}

int SocketRead(BIO* bio, char* data, size_t n, size_t* read) {
  BIO_clear_retry_flags(bio);
  *read = 0;
  ssize_t got;
  do {
    got = recv(SocketOf(bio), data, n, MSG_DONTWAIT);
  } while (got < 0 && errno == EINTR);
  if (got > 0) {
    *read = static_cast<size_t>(got);
    return 1;
  }
  if (got == 0) {
    BIO_set_flags(bio, BIO_FLAGS_IN_EOF);  // OpenSSL asks BIO_eof().
  } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
    BIO_set_retry_read(bio);
  }
  return 0;
}

long SocketCtrl(BIO* bio, int command, long, void*) {  // NOLINT(runtime/int)
  switch (command) {
    case BIO_CTRL_FLUSH:
      return 1;  // Nothing is buffered here.
    case BIO_CTRL_EOF:
      return BIO_test_flags(bio, BIO_FLAGS_IN_EOF) != 0 ? 1 : 0;
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

// `ssl` reading and writing socket `fd`. False when OpenSSL is out of
// memory.
bool AttachSocket(SSL* ssl, int fd) {
  BIO* bio = BIO_new(SocketMethod());
  if (bio == nullptr) return false;
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  BIO_set_init(bio, 1);
  SSL_set_bio(ssl, bio, bio);  // One reference, now the SSL's.
  return true;
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
  SSL_CTX_set_read_ahead(ctx.get(), 1);
  SSL_CTX_set_default_read_buffer_len(ctx.get(), kReadBufferBytes);
  return ctx;
}

// The handshake of `ssl` over `fd`, by `deadline`; gives up once
// `stopping` (when given) is set.
absl::Status Handshake(SSL* ssl, int fd, absl::Time deadline,
                       const std::atomic<bool>* stopping) {
  while (true) {
    ERR_clear_error();
    errno = 0;
    const int done = SSL_do_handshake(ssl);
    if (done == 1) return absl::OkStatus();
    const int sys_errno = errno;
    const int error = SSL_get_error(ssl, done);
    const short events = Wants(error);
    if (events == 0) return Classify(ssl, error, sys_errno);
    if (stopping != nullptr && stopping->load(std::memory_order_acquire)) {
      return absl::UnavailableError("the server is stopping");
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          "the TLS handshake did not finish in time");
    }
    pollfd ready{fd, events, 0};
    poll(&ready, 1, PollMillis(std::min(deadline - now, kHandshakePoll)));
  }
}

}  // namespace

bool StartsTlsHandshake(absl::string_view first_bytes) {
  return first_bytes.size() >= 3 && first_bytes[0] == 0x16 &&
         first_bytes[1] == 0x03 && first_bytes[2] != 0 &&
         static_cast<unsigned char>(first_bytes[2]) <= 0x04;
}

// ---------------------------------------------------------------------------
// TlsStream

TlsStream::~TlsStream() {
  absl::MutexLock lock(&mu_);
  SSL_free(ssl_);
}

int64_t TlsStream::Write(const void* data, size_t n) {
  absl::MutexLock lock(&mu_);
  ERR_clear_error();
  errno = 0;
  size_t written = 0;
  const int done = SSL_write_ex(ssl_, data, n, &written);
  if (done == 1) return static_cast<int64_t>(written);
  const int sys_errno = errno;
  const int error = SSL_get_error(ssl_, done);
  const short events = Wants(error);
  if (events != 0) {
    write_wants_.store(events, std::memory_order_relaxed);
    return 0;
  }
  failure_ = Classify(ssl_, error, sys_errno);
  return -1;
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
  absl::StatusOr<std::string> cert_pem =
      ReadPemFile("certificate", tls.cert_file);
  if (!cert_pem.ok()) return cert_pem.status();
  absl::StatusOr<std::string> key_pem =
      ReadPemFile("private key", tls.key_file);
  if (!key_pem.ok()) return key_pem.status();
  std::vector<X509Ptr> chain = ReadCertificates(*cert_pem);
  if (chain.empty()) {
    return UnreadablePem("cert_file", tls.cert_file, "certificate");
  }
  std::unique_ptr<EVP_PKEY, KeyFree> key;
  {
    BioPtr bio(
        BIO_new_mem_buf(key_pem->data(), static_cast<int>(key_pem->size())));
    if (bio != nullptr) {
      key.reset(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    }
  }
  if (key == nullptr) {
    return UnreadablePem("key_file", tls.key_file, "private key");
  }
  std::vector<X509Ptr> cas;
  if (!tls.ca_file.empty()) {
    absl::StatusOr<std::string> ca_pem =
        ReadPemFile("CA certificate", tls.ca_file);
    if (!ca_pem.ok()) return ca_pem.status();
    cas = ReadCertificates(*ca_pem);
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
  SSL* ssl = SSL_new(server_);
  if (ssl == nullptr) {
    ERR_clear_error();
    return absl::ResourceExhaustedError("OpenSSL could not make a session");
  }
  std::unique_ptr<TlsStream> stream(new TlsStream(fd, ssl));
  if (!AttachSocket(ssl, fd)) {
    ERR_clear_error();
    return absl::ResourceExhaustedError("OpenSSL could not wrap the socket");
  }
  SSL_set_accept_state(ssl);
  absl::Status done;
  {
    absl::MutexLock lock(&stream->mu_);
    done = Handshake(ssl, fd, deadline, &stopping);
  }
  if (!done.ok()) return done;
  return stream;
}

absl::StatusOr<std::unique_ptr<TlsStream>> DataPlaneTls::Connect(
    int fd, const std::string& host, absl::Time deadline,
    absl::string_view where) const {
  SSL* ssl = SSL_new(client_);
  if (ssl == nullptr) {
    ERR_clear_error();
    return absl::ResourceExhaustedError("OpenSSL could not make a session");
  }
  std::unique_ptr<TlsStream> stream(new TlsStream(fd, ssl));
  if (!AttachSocket(ssl, fd)) {
    ERR_clear_error();
    return absl::ResourceExhaustedError("OpenSSL could not wrap the socket");
  }
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
  absl::Status done;
  {
    absl::MutexLock lock(&stream->mu_);
    done = Handshake(ssl, fd, deadline, nullptr);
  }
  if (!done.ok()) {
    return absl::Status(done.code(),
                        absl::StrCat("the TLS handshake with ", where,
                                     " failed: ", done.message()));
  }
  return stream;
}

}  // namespace server_internal
}  // namespace distribute
