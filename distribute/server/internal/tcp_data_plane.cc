#include "distribute/server/internal/tcp_data_plane.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/completion.h"
#include "devices/status_macros.h"

namespace distribute {
namespace server_internal {
namespace {

// Bounds on the small frames (hello, status messages).
constexpr uint32_t kMaxHelloBytes = 64 << 10;
constexpr uint32_t kMaxStatusMessageBytes = 64 << 10;
// How long Stop lets messages in progress finish.
constexpr absl::Duration kStopGrace = absl::Milliseconds(50);
// Post writes messages up to this size itself. Measured with
// grpc_allreduce_worker (medians of 3-4 interleaved rounds), 2 processes:
// 4 KiB 66 -> 47 us, 256 KiB 112 -> 97 us; 4 processes: within noise.
// Larger messages stay with the writer thread: copying MiBs into the
// socket from the posting thread delayed its sends to the other peers
// (4 processes, 4 MiB: 6.05 -> 6.65 ms without this bound).
constexpr size_t kMaxInlineWriteBytes = size_t{256} << 10;
// How often blocked readers look at the stop flag.
constexpr int kPollMillis = 100;
// With the process bound to one CPU, how long a data-plane thread keeps
// looking for its next bytes, yielding the CPU between looks, before it
// blocks in poll(). A thread blocked in poll() must be woken by the
// sending CPU (an interrupt, and a context switch here), which took a
// 4 KiB all-reduce between 2 bound processes from 29 to 65 us; a thread
// that yields costs the collective's thread nothing while that computes,
// since it runs only when the other gives up the CPU.
constexpr absl::Duration kBoundSpin = absl::Microseconds(50);
// A TLS record's most plaintext: a message's frame goes out in one record
// with the first bytes of its payload.
constexpr size_t kTlsRecordBytes = size_t{16} << 10;
// How long a receiver whose TLS handshake failed waits for the sender to
// read the alert and close (see AcceptTls).
constexpr absl::Duration kRefusedTlsGrace = absl::Seconds(1);

struct MessageFrame {
  uint64_t tag;
  uint64_t size;
};

std::string Errno(const char* what) {
  return absl::StrCat(what, ": ", std::strerror(errno));
}

void SetNoDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void SetTimeout(int fd, int option, absl::Duration timeout) {
  timeval tv = absl::ToTimeval(timeout);
  setsockopt(fd, SOL_SOCKET, option, &tv, sizeof(tv));
}

// Moves past the first `bytes` of the `count` buffers at `iov`.
void Advance(iovec*& iov, int& count, size_t bytes) {
  while (count > 0 && bytes >= iov->iov_len) {
    bytes -= iov->iov_len;
    ++iov;
    --count;
  }
  if (count > 0) {
    iov->iov_base = static_cast<char*>(iov->iov_base) + bytes;
    iov->iov_len -= bytes;
  }
}

// Writes what it can of the `count` buffers at `iov` (advancing them), all
// of them when `blocking`. The bytes written, or -1 when the connection
// failed.
int64_t Write(int fd, iovec* iov, int count, bool blocking) {
  int64_t done = 0;
  while (count > 0) {
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = static_cast<size_t>(count);
    const ssize_t written =
        sendmsg(fd, &message, MSG_NOSIGNAL | (blocking ? 0 : MSG_DONTWAIT));
    if (written < 0) {
      if (errno == EINTR) continue;
      if (!blocking && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      return -1;
    }
    done += written;
    Advance(iov, count, static_cast<size_t>(written));
  }
  return done;
}

// Writes every byte of `iov` (blocking); false when the connection fails.
bool WriteAll(int fd, iovec* iov, int count) {
  return Write(fd, iov, count, /*blocking=*/true) >= 0;
}

bool WriteStatus(int fd, const absl::Status& status) {
  const std::string text(status.message().substr(0, kMaxStatusMessageBytes));
  const uint32_t head[2] = {static_cast<uint32_t>(status.code()),
                            static_cast<uint32_t>(text.size())};
  iovec iov[2] = {{const_cast<uint32_t*>(head), sizeof(head)},
                  {const_cast<char*>(text.data()), text.size()}};
  return WriteAll(fd, iov, text.empty() ? 1 : 2);
}

// In a process bound to one CPU, returns once fd is readable (or closed),
// or after kBoundSpin; elsewhere at once.
void SpinUntilReadable(int fd) {
  if (!devices::BoundToOneCpu()) return;
  const absl::Time until = absl::Now() + kBoundSpin;
  do {
    pollfd ready{fd, POLLIN, 0};
    if (poll(&ready, 1, 0) != 0) return;
    sched_yield();
  } while (absl::Now() < until);
}

// Waits, for at most kPollMillis, until fd is readable.
void AwaitReadable(int fd) {
  SpinUntilReadable(fd);
  pollfd wait{fd, POLLIN, 0};
  poll(&wait, 1, kPollMillis);
}

// Reads exactly n bytes (blocking: the socket's own timeout applies).
bool ReadAllBlocking(int fd, void* data, size_t n) {
  char* at = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t got = recv(fd, at, n, MSG_WAITALL);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    at += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

// Reads exactly n bytes, polling so that `stopping` and `deadline` are
// seen. False when the peer closed or failed the connection, the server is
// stopping, or the deadline passed (every caller then drops the
// connection: there is nobody to tell why).
bool ReadAll(int fd, void* data, size_t n, absl::Time deadline,
             const std::atomic<bool>& stopping) {
  char* at = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t got = recv(fd, at, n, MSG_DONTWAIT);
    if (got > 0) {
      at += got;
      n -= static_cast<size_t>(got);
      continue;
    }
    if (got == 0) return false;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return false;
    }
    if (stopping.load(std::memory_order_acquire) || absl::Now() >= deadline) {
      return false;
    }
    AwaitReadable(fd);
  }
  return true;
}

// Waits, as ReadAll does, until n bytes have arrived, and copies them
// without taking them from the socket.
bool PeekAll(int fd, void* data, size_t n, absl::Time deadline,
             const std::atomic<bool>& stopping) {
  while (true) {
    const ssize_t got = recv(fd, data, n, MSG_PEEK | MSG_DONTWAIT);
    if (got == static_cast<ssize_t>(n)) return true;
    if (got == 0) return false;
    if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return false;
    }
    if (stopping.load(std::memory_order_acquire) || absl::Now() >= deadline) {
      return false;
    }
    if (got > 0) {
      // Fewer than n: the socket stays readable, so poll() would not wait.
      absl::SleepFor(absl::Milliseconds(1));
    } else {
      AwaitReadable(fd);
    }
  }
}

// Reads and drops what arrives until the peer closes the connection,
// `deadline` passes or `stopping` is set.
void DrainUntilClosed(int fd, absl::Time deadline,
                      const std::atomic<bool>& stopping) {
  char sink[4096];
  while (!stopping.load(std::memory_order_acquire) && absl::Now() < deadline) {
    const ssize_t got = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
    if (got == 0) return;
    if (got < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return;
      AwaitReadable(fd);
    }
  }
}

// Waits, for at most kPollMillis and until `deadline`, for what `tls`'s
// last Read (or Write) that found nothing to do waits for; a read for
// bytes spins first as SpinUntilReadable does.
void AwaitTls(const TlsStream& tls, bool write, absl::Time deadline) {
  if (!write && tls.wants(/*write=*/false) == POLLIN) {
    SpinUntilReadable(tls.fd());
  }
  tls.Await(write,
            std::min(deadline - absl::Now(), absl::Milliseconds(kPollMillis)));
}

// Reads exactly n bytes through `tls`. False when the connection closed or
// failed (tls.failure() says why), `deadline` passed or `stopping` (when
// given) was set.
bool TlsReadAll(TlsStream& tls, void* data, size_t n, absl::Time deadline,
                const std::atomic<bool>* stopping) {
  char* at = static_cast<char*>(data);
  while (n > 0) {
    const int64_t got = tls.Read(at, n);
    if (got > 0) {
      at += got;
      n -= static_cast<size_t>(got);
      continue;
    }
    if (got < 0) return false;
    if ((stopping != nullptr && stopping->load(std::memory_order_acquire)) ||
        absl::Now() >= deadline) {
      return false;
    }
    AwaitTls(tls, /*write=*/false, deadline);
  }
  return true;
}

// Writes all n bytes through `tls`; false when the connection failed
// (tls.failure() says why) or `deadline` passed.
bool TlsWriteAll(TlsStream& tls, const void* data, size_t n,
                 absl::Time deadline) {
  const char* at = static_cast<const char*>(data);
  while (n > 0) {
    const int64_t sent = tls.Write(at, n);
    if (sent > 0) {
      at += sent;
      n -= static_cast<size_t>(sent);
      continue;
    }
    if (sent < 0 || absl::Now() >= deadline) return false;
    AwaitTls(tls, /*write=*/true, deadline);
  }
  while (true) {  // What the socket did not take yet.
    const int flushed = tls.Flush();
    if (flushed != 0) return flushed > 0;
    if (absl::Now() >= deadline) return false;
    AwaitTls(tls, /*write=*/true, deadline);
  }
}

// A status frame's bytes (see the header comment).
std::string EncodeStatus(const absl::Status& status) {
  const std::string text(status.message().substr(0, kMaxStatusMessageBytes));
  const uint32_t head[2] = {static_cast<uint32_t>(status.code()),
                            static_cast<uint32_t>(text.size())};
  return std::string(reinterpret_cast<const char*>(head), sizeof(head)) + text;
}

// An accepted connection's byte stream: the socket's own, or that of a TLS
// session over it.
struct Link {
  int fd = -1;
  TlsStream* tls = nullptr;  // Null: plaintext.
};

bool ReadAll(const Link& link, void* data, size_t n, absl::Time deadline,
             const std::atomic<bool>& stopping) {
  if (link.tls == nullptr) return ReadAll(link.fd, data, n, deadline, stopping);
  return TlsReadAll(*link.tls, data, n, deadline, &stopping);
}

// Reads what has arrived, up to n bytes, without blocking: how many (0:
// none now), or -1 when the connection closed or failed.
int64_t ReadSome(const Link& link, void* data, size_t n) {
  if (link.tls != nullptr) return link.tls->Read(data, n);
  const ssize_t got = recv(link.fd, data, n, MSG_DONTWAIT);
  if (got > 0) return got;
  if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
    return -1;
  }
  return 0;
}

void AwaitReadable(const Link& link) {
  if (link.tls == nullptr) return AwaitReadable(link.fd);
  AwaitTls(*link.tls, /*write=*/false,
           absl::Now() + absl::Milliseconds(kPollMillis));
}

bool WriteStatus(const Link& link, const absl::Status& status) {
  if (link.tls == nullptr) return WriteStatus(link.fd, status);
  const std::string bytes = EncodeStatus(status);
  return TlsWriteAll(*link.tls, bytes.data(), bytes.size(),
                     absl::InfiniteFuture());
}

// "ipv4:1.2.3.4:5" / "ipv6:[::1]:5", the form PeerFilter reads.
std::string GrpcPeerString(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (address.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(address);
    inet_ntop(AF_INET, &v4.sin_addr, text, sizeof(text));
    return absl::StrCat("ipv4:", text, ":", ntohs(v4.sin_port));
  }
  const auto& v6 = reinterpret_cast<const sockaddr_in6&>(address);
  inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof(text));
  return absl::StrCat("ipv6:[", text, "]:", ntohs(v6.sin6_port));
}

struct AddrInfoDeleter {
  void operator()(addrinfo* info) const { freeaddrinfo(info); }
};

absl::StatusOr<std::unique_ptr<addrinfo, AddrInfoDeleter>> Resolve(
    const std::string& host, int port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  const int error = getaddrinfo(host.empty() ? nullptr : host.c_str(),
                                service.c_str(), &hints, &found);
  if (error != 0 || found == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("cannot resolve \"", host, "\": ", gai_strerror(error)));
  }
  return std::unique_ptr<addrinfo, AddrInfoDeleter>(found);
}

}  // namespace

std::string EncodeDataPlaneHello(const server::DataPlaneHello& hello) {
  const std::string bytes = hello.SerializeAsString();
  const uint32_t length = static_cast<uint32_t>(bytes.size());
  std::string wire(sizeof(length), '\0');
  for (size_t i = 0; i < sizeof(length); ++i) {
    wire[i] = static_cast<char>((length >> (8 * i)) & 0xff);
  }
  return wire + bytes;
}

absl::Status CheckDataPlaneHelloLength(uint32_t length) {
  if (length == 0 || length > kMaxHelloBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a grpc+tcp hello of ", length,
                     " bytes; it must be in [1, ", kMaxHelloBytes, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<server::DataPlaneHello> DecodeDataPlaneHello(
    absl::string_view bytes, const std::optional<std::string>& cluster_token,
    absl::string_view task) {
  server::DataPlaneHello hello;
  if (!hello.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("the grpc+tcp hello does not parse");
  }
  if (cluster_token.has_value() &&
      !TokensMatch(hello.cluster_token(), *cluster_token)) {
    return absl::UnauthenticatedError(absl::StrCat(
        "task ", task,
        hello.cluster_token().empty()
            ? " requires a cluster token and the grpc+tcp hello carries none"
            : " refused the grpc+tcp hello: wrong cluster token"));
  }
  RETURN_IF_ERROR(CheckMessageHeader(hello.header()));
  return hello;
}

// ---------------------------------------------------------------------------
// TcpDataPlane

absl::StatusOr<std::unique_ptr<TcpDataPlane>> TcpDataPlane::Start(
    const std::string& host, TcpDataPlaneConfig config) {
  absl::StatusOr<std::unique_ptr<addrinfo, AddrInfoDeleter>> found =
      Resolve(host, 0, /*passive=*/true);
  RETURN_IF_ERROR(found.status());
  std::string last_error = "no address";
  for (addrinfo* info = found->get(); info != nullptr; info = info->ai_next) {
    const int fd = socket(info->ai_family, info->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last_error = Errno("socket");
      continue;
    }
    if (bind(fd, info->ai_addr, info->ai_addrlen) != 0 || listen(fd, 64) != 0) {
      last_error = Errno("bind/listen");
      close(fd);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t length = sizeof(bound);
    getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length);
    const int port =
        bound.ss_family == AF_INET
            ? ntohs(reinterpret_cast<sockaddr_in&>(bound).sin_port)
            : ntohs(reinterpret_cast<sockaddr_in6&>(bound).sin6_port);
    std::unique_ptr<TcpDataPlane> plane(
        new TcpDataPlane(fd, port, std::move(config)));
    plane->acceptor_ = std::thread([raw = plane.get()] { raw->AcceptLoop(); });
    return plane;
  }
  return absl::UnavailableError(
      absl::StrCat("task ", config.task, " cannot listen for grpc+tcp data on ",
                   host, ": ", last_error));
}

TcpDataPlane::TcpDataPlane(int listen_fd, int port, TcpDataPlaneConfig config)
    : listen_fd_(listen_fd), port_(port), config_(std::move(config)) {}

TcpDataPlane::~TcpDataPlane() {
  Stop();
  close(listen_fd_);
}

void TcpDataPlane::Stop() {
  std::vector<std::unique_ptr<Connection>> connections;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    stopping_.store(true, std::memory_order_release);
    // Wakes accept() (Linux returns EINVAL on a shut-down listener).
    shutdown(listen_fd_, SHUT_RDWR);
  }
  if (acceptor_.joinable()) acceptor_.join();
  {
    absl::MutexLock lock(&mu_);
    connections.swap(connections_);
  }
  // A message whose receive has completed is still to be answered: a task
  // that stops right after its last collective must not fail its peers'
  // sends of that collective.
  const absl::Time grace = absl::Now() + kStopGrace;
  while (absl::Now() < grace &&
         std::any_of(connections.begin(), connections.end(),
                     [](const std::unique_ptr<Connection>& c) {
                       return c->busy.load(std::memory_order_acquire);
                     })) {
    absl::SleepFor(absl::Microseconds(200));
  }
  for (auto& connection : connections) shutdown(connection->fd, SHUT_RDWR);
  for (auto& connection : connections) {
    if (connection->thread.joinable()) connection->thread.join();
    close(connection->fd);
  }
}

void TcpDataPlane::Reap() {
  auto ended = std::partition(
      connections_.begin(), connections_.end(),
      [](const std::unique_ptr<Connection>& c) { return !c->done.load(); });
  for (auto it = ended; it != connections_.end(); ++it) {
    (*it)->thread.join();
    close((*it)->fd);
  }
  connections_.erase(ended, connections_.end());
}

void TcpDataPlane::AcceptLoop() {
  while (!stopping_.load(std::memory_order_acquire)) {
    sockaddr_storage from{};
    socklen_t length = sizeof(from);
    const int fd = accept4(listen_fd_, reinterpret_cast<sockaddr*>(&from),
                           &length, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (stopping_.load(std::memory_order_acquire)) return;
      // EMFILE and the like: back off rather than spin.
      absl::SleepFor(absl::Milliseconds(10));
      continue;
    }
    const std::string peer = GrpcPeerString(from);
    if (config_.peer_filter != nullptr && !config_.peer_filter->Allowed(peer)) {
      // Same rule as the gRPC services: outsiders get nothing.
      close(fd);
      continue;
    }
    SetNoDelay(fd);
    absl::MutexLock lock(&mu_);
    if (stopped_) {
      close(fd);
      return;
    }
    Reap();
    // A connection costs a thread before its hello shows the token: bound
    // how many may wait for theirs, so that callers who never send one
    // (anyone who can reach the port) cannot use up the task's threads.
    const auto waiting = std::count_if(
        connections_.begin(), connections_.end(),
        [](const std::unique_ptr<Connection>& c) {
          return !c->greeted.load(std::memory_order_acquire) && !c->done.load();
        });
    if (waiting >= config_.max_connections_before_hello) {
      close(fd);
      continue;
    }
    auto connection = std::make_unique<Connection>();
    connection->fd = fd;
    Connection* raw = connection.get();
    try {
      connection->thread =
          std::thread([this, raw, peer] { Serve(*raw, peer); });
    } catch (const std::system_error&) {
      close(fd);  // No thread to be had: refuse this one, keep serving.
      continue;
    }
    connections_.push_back(std::move(connection));
  }
}

void TcpDataPlane::Serve(Connection& connection, std::string peer) {
  const int fd = connection.fd;
  // However it ends, the peer sees the connection close at once (the fd
  // itself is closed when the thread is reaped).
  struct Done {
    Connection& c;
    ~Done() {
      shutdown(c.fd, SHUT_RDWR);
      c.busy.store(false);  // Stop need not wait for a broken message.
      c.done.store(true);
    }
  } done{connection};

  const absl::Time hello_deadline = absl::Now() + config_.hello_timeout;
  // Destroyed before `done` shuts the socket down.
  std::unique_ptr<TlsStream> tls;
  if (config_.tls != nullptr) {
    tls = AcceptTls(fd, hello_deadline);
    if (tls == nullptr) return;
  }
  const Link link{fd, tls.get()};

  // The hello: who sends, to which group and rank.
  uint32_t length = 0;
  if (!ReadAll(link, &length, sizeof(length), hello_deadline, stopping_)) {
    return;
  }
  if (link.tls == nullptr &&
      StartsTlsHandshake(absl::string_view(
          reinterpret_cast<const char*>(&length), sizeof(length)))) {
    // A sender with TLS options: it will not read this answer (it reads
    // the plaintext as a broken handshake and says so), but a client that
    // does learns what is wrong.
    WriteStatus(fd, absl::FailedPreconditionError(absl::StrCat(
                        "task ", config_.task,
                        " serves grpc+tcp without TLS (its server has no TLS "
                        "options) and this connection opened a TLS "
                        "handshake; give every server of the cluster the "
                        "same TLS options")));
    // Let the sender read that before the connection closes: a close with
    // its handshake unread would reset the connection, and the reset can
    // overtake the answer.
    shutdown(fd, SHUT_WR);
    DrainUntilClosed(fd,
                     std::min(hello_deadline, absl::Now() + kRefusedTlsGrace),
                     stopping_);
    return;
  }
  if (absl::Status valid = CheckDataPlaneHelloLength(length); !valid.ok()) {
    WriteStatus(link, valid);
    return;
  }
  std::string bytes(length, '\0');
  if (!ReadAll(link, bytes.data(), length, hello_deadline, stopping_)) {
    return;
  }
  absl::StatusOr<server::DataPlaneHello> hello =
      DecodeDataPlaneHello(bytes, config_.cluster_token, config_.task);
  if (!hello.ok()) {
    WriteStatus(link, hello.status());
    return;
  }
  const server::MessageHeader& who = hello->header();
  if (config_.caller_check != nullptr) {
    absl::Status admitted = config_.caller_check->Check(
        who.src_task(), hello->cluster_fingerprint(), peer);
    if (!admitted.ok()) {
      WriteStatus(link, admitted);
      return;
    }
  }
  absl::StatusOr<std::shared_ptr<GroupMailbox>> mailbox =
      config_.mailboxes->ForIncoming(who.group_key(), who.dst_rank());
  if (!mailbox.ok()) {
    WriteStatus(link, mailbox.status());
    return;
  }
  if (!WriteStatus(link, absl::OkStatus())) return;
  connection.greeted.store(true, std::memory_order_release);

  const std::string lost_prefix =
      absl::StrCat("the grpc+tcp connection from ", who.src_task(), " (", peer,
                   ") to ", config_.task, " broke: ");
  while (true) {
    MessageFrame frame{};
    if (!ReadAll(link, &frame, sizeof(frame), absl::InfiniteFuture(),
                 stopping_)) {
      return;  // Between messages: a clean end.
    }
    if (frame.size > static_cast<uint64_t>(INT64_MAX)) {
      WriteStatus(link, absl::InvalidArgumentError(
                            absl::StrCat("a grpc+tcp message of ", frame.size,
                                         " bytes; sizes must fit in 63 bits")));
      return;
    }
    connection.busy.store(true, std::memory_order_release);
    server::MessageHeader header = who;
    header.set_tag(frame.tag);
    header.set_total_bytes(static_cast<int64_t>(frame.size));
    absl::StatusOr<std::shared_ptr<Inbound>> message =
        (*mailbox)->BeginMessage(header);
    absl::Status outcome = message.status();
    if (message.ok() && frame.size == 0) {
      outcome = (*mailbox)->AddChunk(**message, 0, absl::string_view());
    }
    uint64_t left = frame.size;
    bool broken = false;
    while (left > 0) {
      absl::StatusOr<size_t> got = 0;
      if (outcome.ok()) {
        bool closed = false;
        got = (*mailbox)->ReadChunk(**message, left,
                                    [&](std::byte* dst, size_t n) -> int64_t {
                                      const int64_t k = ReadSome(link, dst, n);
                                      if (k < 0) closed = true;
                                      return k;
                                    });
        if (!got.ok()) {
          if (closed) {
            broken = true;
            break;
          }
          outcome = got.status();  // Discard the rest, then answer it.
          continue;
        }
      } else {
        // Keep the stream in step: read the bytes and drop them.
        thread_local std::vector<std::byte> sink(size_t{1} << 20);
        const int64_t k =
            ReadSome(link, sink.data(), std::min<uint64_t>(left, sink.size()));
        if (k < 0) {
          broken = true;
          break;
        }
        got = static_cast<size_t>(k);
      }
      left -= *got;
      if (*got == 0) {
        // Stop() lets this message finish, then shuts the socket down,
        // which ends the wait.
        AwaitReadable(link);
      }
    }
    if (broken) {
      if (message.ok()) {
        (*mailbox)
            ->EndMessage(
                *message,
                absl::UnavailableError(absl::StrCat(
                    lost_prefix, stopping_.load() ? "the server stopped"
                                                  : "the sender went away")))
            .IgnoreError();
      }
      return;
    }
    if (message.ok()) {
      // Counted before EndMessage wakes the receiver.
      if (outcome.ok()) {
        config_.received->Message();
        config_.received->Chunk(static_cast<int64_t>(frame.size));
      }
      absl::Status ended = (*mailbox)->EndMessage(*message, outcome);
      if (outcome.ok()) outcome = ended;
    }
    if (!WriteStatus(link, outcome)) return;
    connection.busy.store(false, std::memory_order_release);
  }
}

std::unique_ptr<TlsStream> TcpDataPlane::AcceptTls(int fd,
                                                   absl::Time deadline) {
  char first[3];
  if (!PeekAll(fd, first, sizeof(first), deadline, stopping_)) return nullptr;
  if (!StartsTlsHandshake(absl::string_view(first, sizeof(first)))) {
    // A sender without TLS options. Take its hello first: a close with
    // bytes unread would reset the connection, and the reset can overtake
    // the answer.
    uint32_t length = 0;
    if (ReadAll(fd, &length, sizeof(length), deadline, stopping_) &&
        CheckDataPlaneHelloLength(length).ok()) {
      std::string ignored(length, '\0');
      ReadAll(fd, ignored.data(), length, deadline, stopping_);
    }
    WriteStatus(fd, absl::FailedPreconditionError(absl::StrCat(
                        "task ", config_.task,
                        " serves grpc+tcp over TLS (its server has TLS "
                        "options) and this connection sent its hello in "
                        "plaintext; give every server of the cluster the "
                        "same TLS options")));
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<TlsStream>> session =
      config_.tls->Accept(fd, deadline, stopping_);
  if (session.ok()) return *std::move(session);
  // OpenSSL has sent the sender an alert that says why where it could (a
  // certificate that the CA did not sign, say). Let the sender read it
  // before the connection closes: a TLS 1.3 sender writes its hello before
  // it learns that its certificate was refused, and a close with bytes
  // unread would reset the connection, which can overtake the alert.
  shutdown(fd, SHUT_WR);
  DrainUntilClosed(fd, std::min(deadline, absl::Now() + kRefusedTlsGrace),
                   stopping_);
  return nullptr;
}

// ---------------------------------------------------------------------------
// TcpPeerSender

TcpPeerSender::TcpPeerSender(std::string host, int port,
                             server::MessageHeader header,
                             std::optional<std::string> cluster_token,
                             std::string cluster_fingerprint, std::string peer,
                             absl::Duration connect_timeout,
                             std::shared_ptr<const DataPlaneTls> tls)
    : host_(std::move(host)),
      port_(port),
      header_(std::move(header)),
      cluster_token_(std::move(cluster_token)),
      cluster_fingerprint_(std::move(cluster_fingerprint)),
      peer_(std::move(peer)),
      connect_timeout_(connect_timeout),
      tls_context_(std::move(tls)) {}

TcpPeerSender::~TcpPeerSender() {
  Fail(absl::UnavailableError(
      absl::StrCat("the transport endpoint was destroyed before its send to ",
                   peer_, " was delivered")));
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (writer_.joinable()) writer_.join();
  if (answers_.joinable()) answers_.join();
  absl::MutexLock lock(&mu_);
  if (fd_ >= 0) close(fd_);
}

absl::Status TcpPeerSender::Post(std::shared_ptr<SendOp> op) {
  int fd = -1;
  TlsStream* tls = nullptr;
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(failed_);
    if (!connected_ || !queue_.empty() || writing_ != nullptr ||
        op->size > kMaxInlineWriteBytes) {
      queue_.push_back(std::move(op));
      if (!writer_.joinable()) writer_ = std::thread([this] { WriteLoop(); });
      return absl::OkStatus();
    }
    // A small message with nothing ahead of it: write what the socket takes
    // now from this thread (never blocking), which saves waking the writer
    // thread; the writer finishes a message the socket could not take
    // whole.
    writing_ = op;
    unanswered_.push_back(op);
    fd = fd_;
    tls = tls_.get();
  }
  const int64_t written = WriteSome(fd, tls, *op, 0, /*blocking=*/false);
  FinishWrite(op, written);
  return absl::OkStatus();
}

void TcpPeerSender::Cancel(const std::shared_ptr<SendOp>& op) {
  const absl::Status cancelled =
      absl::CancelledError("request destroyed before it completed");
  bool mid_write = false;
  {
    absl::MutexLock lock(&mu_);
    if (op->completion.done()) return;
    auto queued = std::find(queue_.begin(), queue_.end(), op);
    if (queued != queue_.end()) {
      queue_.erase(queued);
    } else if (writing_ == op) {
      mid_write = true;
    }
    // Otherwise it is written and awaits its answer (which will find it
    // complete): its buffer is no longer used.
  }
  if (mid_write) {
    Fail(absl::UnavailableError(
        absl::StrCat("a send to ", peer_, " tag ", op->tag,
                     " was cancelled while being written; the connection to ",
                     peer_, " is closed")));
    // The writer completes it once its write has returned.
    op->completion.WaitFor(absl::InfiniteDuration());
    return;
  }
  op->completion.Complete(cancelled);
}

void TcpPeerSender::Fail(const absl::Status& status) {
  std::deque<std::shared_ptr<SendOp>> failed;
  absl::Status reason;
  {
    absl::MutexLock lock(&mu_);
    if (failed_.ok()) failed_ = status;
    reason = failed_;
    failed.swap(queue_);
    // The op being written is the writer's to complete (FinishWrite), once
    // its write has returned: the caller's buffer is in use until then.
    for (auto& op : unanswered_) {
      if (op != writing_) failed.push_back(op);
    }
    unanswered_.clear();
    if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
  }
  for (auto& op : failed) op->completion.Complete(reason);
}

absl::Status TcpPeerSender::Connect() {
  const std::string where =
      absl::StrCat(peer_, "'s grpc+tcp data port ", host_, ":", port_);
  absl::StatusOr<std::unique_ptr<addrinfo, AddrInfoDeleter>> found =
      Resolve(host_, port_, /*passive=*/false);
  if (!found.ok()) {
    return absl::UnavailableError(
        absl::StrCat("cannot reach ", where, ": ", found.status().message()));
  }
  // Bounds connect() and the hello's exchange (and so how long a destructor
  // may wait for a connect in progress).
  const absl::Duration timeout = std::min(connect_timeout_, absl::Seconds(10));
  int fd = -1;
  std::string last_error;
  for (addrinfo* info = found->get(); info != nullptr; info = info->ai_next) {
    fd = socket(info->ai_family, info->ai_socktype | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      last_error = Errno("socket");
      continue;
    }
    SetTimeout(fd, SO_SNDTIMEO, timeout);
    SetTimeout(fd, SO_RCVTIMEO, timeout);
    if (connect(fd, info->ai_addr, info->ai_addrlen) == 0) break;
    last_error = Errno("connect");
    close(fd);
    fd = -1;
  }
  if (fd < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot connect to ", where, ": ", last_error));
  }
  SetNoDelay(fd);
  {
    absl::MutexLock lock(&mu_);
    fd_ = fd;
    // Fail() ran while connecting: it could not shut the socket down.
    RETURN_IF_ERROR(failed_);
  }
  // With TLS the session comes first: the hello carries the token.
  const absl::Time deadline = absl::Now() + timeout;
  TlsStream* tls = nullptr;
  if (tls_context_ != nullptr) {
    absl::StatusOr<std::unique_ptr<TlsStream>> session =
        tls_context_->Connect(fd, host_, deadline, where);
    RETURN_IF_ERROR(session.status());
    absl::MutexLock lock(&mu_);
    tls_ = *std::move(session);
    tls = tls_.get();
  }
  const auto send_all = [&](const std::string& bytes) {
    if (tls != nullptr) {
      return TlsWriteAll(*tls, bytes.data(), bytes.size(), deadline);
    }
    iovec iov[1] = {{const_cast<char*>(bytes.data()), bytes.size()}};
    return WriteAll(fd, iov, 1);
  };
  const auto receive_all = [&](void* data, size_t n) {
    return tls != nullptr ? TlsReadAll(*tls, data, n, deadline, nullptr)
                          : ReadAllBlocking(fd, data, n);
  };
  server::DataPlaneHello hello;
  if (cluster_token_.has_value()) hello.set_cluster_token(*cluster_token_);
  hello.set_cluster_fingerprint(cluster_fingerprint_);
  *hello.mutable_header() = header_;
  uint32_t head[2] = {0, 0};
  if (!send_all(EncodeDataPlaneHello(hello))) {
    return absl::UnavailableError(absl::StrCat(
        "cannot say hello to ", where, ": ",
        tls != nullptr ? tls->failure().message() : Errno("send")));
  }
  if (!receive_all(head, sizeof(head))) {
    if (tls != nullptr &&
        tls->failure().code() == absl::StatusCode::kUnauthenticated) {
      // Over TLS 1.3 a receiver refuses the sender's certificate only
      // after the sender's side of the handshake is done.
      return absl::UnauthenticatedError(absl::StrCat(
          where, " refused the connection: ", tls->failure().message()));
    }
    return absl::UnavailableError(absl::StrCat(
        where, " closed the connection or did not answer the hello within ",
        absl::FormatDuration(timeout),
        " (a server cuts off hosts that are not in its cluster spec)"));
  }
  if (head[0] != 0) {
    std::string text(std::min(head[1], kMaxStatusMessageBytes), '\0');
    if (!receive_all(text.data(), text.size())) {
      text = "(the reason was cut off)";
    }
    return absl::Status(static_cast<absl::StatusCode>(head[0]),
                        absl::StrCat(where, " refused the connection: ", text));
  }
  // From here on writes and the answers' reads may block for as long as
  // the peer takes; Fail() unblocks them.
  SetTimeout(fd, SO_SNDTIMEO, absl::ZeroDuration());
  SetTimeout(fd, SO_RCVTIMEO, absl::ZeroDuration());
  return absl::OkStatus();
}

int64_t TcpPeerSender::WriteSome(int fd, TlsStream* tls, const SendOp& op,
                                 size_t offset, bool blocking) {
  MessageFrame frame{op.tag, op.size};
  if (tls != nullptr) {
    const size_t total = sizeof(frame) + op.size;
    char staged[kTlsRecordBytes];
    while (offset < total) {
      absl::string_view pieces[2];
      const char* payload = reinterpret_cast<const char*>(op.data);
      if (offset < sizeof(frame)) {
        // The frame goes in one record with the payload's first bytes.
        const size_t head = sizeof(frame) - offset;
        const size_t body = std::min(op.size, kTlsRecordBytes - head);
        std::memcpy(staged, reinterpret_cast<const char*>(&frame) + offset,
                    head);
        if (body > 0) std::memcpy(staged + head, payload, body);
        pieces[0] = absl::string_view(staged, head + body);
        pieces[1] = absl::string_view(payload + body, op.size - body);
      } else {
        pieces[0] = absl::string_view(payload + (offset - sizeof(frame)),
                                      total - offset);
      }
      const int64_t sealed = tls->Write(pieces);
      if (sealed > 0) {
        offset += static_cast<size_t>(sealed);
        continue;
      }
      if (sealed < 0) return -1;
      if (!blocking) return static_cast<int64_t>(offset);
      // Fail() shuts the socket down, which ends the wait.
      AwaitTls(*tls, /*write=*/true, absl::InfiniteFuture());
    }
    // All sealed. Without `blocking` what the socket did not take is the
    // writer thread's to send (FinishWrite sees it pending).
    while (blocking) {
      const int flushed = tls->Flush();
      if (flushed < 0) return -1;
      if (flushed > 0) break;
      AwaitTls(*tls, /*write=*/true, absl::InfiniteFuture());
    }
    return static_cast<int64_t>(offset);
  }
  iovec iov[2] = {{&frame, sizeof(frame)},
                  {const_cast<std::byte*>(op.data), op.size}};
  int count = op.size > 0 ? 2 : 1;
  iovec* at = iov;
  Advance(at, count, offset);
  const int64_t written = Write(fd, at, count, blocking);
  return written < 0 ? -1 : static_cast<int64_t>(offset) + written;
}

bool TcpPeerSender::FinishWrite(const std::shared_ptr<SendOp>& op,
                                int64_t written) {
  const size_t total = sizeof(MessageFrame) + op->size;
  absl::Status failure;
  {
    absl::MutexLock lock(&mu_);
    // Over TLS a message may be all sealed with records still waiting for
    // the socket (which sends them from offset `total`).
    const bool unsent = failed_.ok() && written >= 0 &&
                        static_cast<size_t>(written) == total &&
                        tls_ != nullptr && tls_->pending();
    if (failed_.ok() && written >= 0 &&
        (static_cast<size_t>(written) < total || unsent)) {
      // The socket is full: the writer thread blocks for the rest.
      resume_ = op;
      resume_offset_ = static_cast<size_t>(written);
      return true;  // (Post writes inline only once the writer runs.)
    }
    writing_.reset();
    if (!failed_.ok()) {
      // Fail() left this op to us: no answer will come for it.
      failure = failed_;
    }
  }
  if (!failure.ok()) {
    op->completion.Complete(failure);
    return false;
  }
  if (written < 0) {
    std::string why = Errno("send");
    {
      absl::MutexLock lock(&mu_);
      if (tls_ != nullptr) why = std::string(tls_->failure().message());
    }
    Fail(absl::UnavailableError(absl::StrCat(
        "the grpc+tcp connection to ", peer_, " broke while sending tag ",
        op->tag, " (", op->size, " bytes): ", why)));
    op->completion.Complete(absl::UnavailableError(
        absl::StrCat("Send to ", peer_, " tag ", op->tag,
                     " failed: the grpc+tcp connection broke")));
    return false;
  }
  return true;
}

void TcpPeerSender::WriteLoop() {
  absl::Status connected = Connect();
  if (!connected.ok()) {
    Fail(connected);
    return;
  }
  answers_ = std::thread([this] { AnswerLoop(); });
  int fd = -1;
  TlsStream* tls = nullptr;
  {
    absl::MutexLock lock(&mu_);
    fd = fd_;
    tls = tls_.get();
    connected_ = true;
  }
  while (true) {
    std::shared_ptr<SendOp> op;
    size_t offset = 0;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](TcpPeerSender* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
            return self->stopping_ || !self->failed_.ok() ||
                   self->resume_ != nullptr ||
                   (self->writing_ == nullptr && !self->queue_.empty());
          },
          this));
      if (resume_ != nullptr) {
        // A message Post began: finish it, failed or not (its op is ours).
        op = std::move(resume_);
        offset = resume_offset_;
      } else {
        if (!failed_.ok() || queue_.empty()) return;
        op = std::move(queue_.front());
        queue_.pop_front();
        writing_ = op;
        unanswered_.push_back(op);
      }
    }
    const int64_t written = WriteSome(fd, tls, *op, offset, /*blocking=*/true);
    if (!FinishWrite(op, written)) return;
  }
}

void TcpPeerSender::AnswerLoop() {
  int fd = -1;
  TlsStream* tls = nullptr;
  {
    absl::MutexLock lock(&mu_);
    fd = fd_;
    tls = tls_.get();
  }
  // Blocks until the bytes come or Fail() shuts the socket down.
  const auto receive_all = [&](void* data, size_t n) {
    return tls != nullptr
               ? TlsReadAll(*tls, data, n, absl::InfiniteFuture(), nullptr)
               : ReadAllBlocking(fd, data, n);
  };
  while (true) {
    uint32_t head[2] = {0, 0};
    std::string text;
    if (tls == nullptr) SpinUntilReadable(fd);  // TlsReadAll spins itself.
    bool ok =
        receive_all(head, sizeof(head)) && head[1] <= kMaxStatusMessageBytes;
    if (ok && head[1] > 0) {
      text.resize(std::min(head[1], kMaxStatusMessageBytes));
      ok = receive_all(text.data(), text.size());
    }
    if (!ok) {
      Fail(absl::UnavailableError(absl::StrCat(
          "the grpc+tcp connection to ", peer_,
          " was closed; the peer's server may have stopped or its task "
          "died")));
      return;
    }
    std::shared_ptr<SendOp> op;
    {
      absl::MutexLock lock(&mu_);
      // After Fail every op is completed or the writer's: an answer still
      // buffered in the socket belongs to none of them.
      if (!failed_.ok()) return;
      if (!unanswered_.empty()) {
        // The peer answers once it holds the whole message, which may be
        // before the write that sent it has returned: the op (and so its
        // buffer) is released only once the writer is done with it.
        mu_.Await(absl::Condition(
            +[](TcpPeerSender* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
              return !self->failed_.ok() || self->unanswered_.empty() ||
                     self->writing_ != self->unanswered_.front();
            },
            this));
        if (!failed_.ok()) return;
      }
      if (!unanswered_.empty()) {
        op = std::move(unanswered_.front());
        unanswered_.pop_front();
      }
    }
    if (op == nullptr) {
      Fail(absl::InternalError(absl::StrCat(
          "the grpc+tcp peer ", peer_,
          " answered a message that was not sent; closing the connection")));
      return;
    }
    if (head[0] == 0) {
      op->completion.Complete(absl::OkStatus());
    } else {
      op->completion.Complete(
          absl::Status(static_cast<absl::StatusCode>(head[0]),
                       absl::StrCat("Send to ", peer_, " tag ", op->tag, " (",
                                    op->size, " bytes) failed: ", text)));
    }
  }
}

}  // namespace server_internal
}  // namespace distribute
