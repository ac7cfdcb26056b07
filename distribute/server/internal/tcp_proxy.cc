#include "distribute/server/internal/tcp_proxy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "distribute/server/internal/test_cluster.h"

namespace distribute {
namespace server_internal {
namespace {

constexpr int kPollMs = 20;
constexpr int64_t kReadBytes = 64 << 10;

// Writes all of `data`; false once the socket failed or was shut down.
bool SendAll(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t sent = send(fd, data, n, MSG_NOSIGNAL);
    if (sent < 0 && errno == EINTR) continue;
    if (sent <= 0) return false;
    data += sent;
    n -= static_cast<size_t>(sent);
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<TcpProxy>> TcpProxy::Start(int target_port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
  }
  // Small receive buffers (accepted sockets inherit them): a frozen proxy
  // soon stops taking bytes, as a frozen task's full socket does.
  const int buffer_bytes = 64 << 10;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof(buffer_bytes));
  sockaddr_in addr = LoopbackAddress(0);
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(fd, 64) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const std::string error = std::strerror(errno);
    close(fd);
    return absl::InternalError(absl::StrCat("proxy listen: ", error));
  }
  auto proxy = std::unique_ptr<TcpProxy>(new TcpProxy(
      fd, target_port, absl::StrCat("127.0.0.1:", ntohs(addr.sin_port))));
  proxy->acceptor_ = std::thread([p = proxy.get()] { p->AcceptLoop(); });
  return proxy;
}

TcpProxy::TcpProxy(int listen_fd, int target_port, std::string address)
    : listen_fd_(listen_fd),
      target_port_(target_port),
      address_(std::move(address)) {}

TcpProxy::~TcpProxy() {
  std::vector<std::thread> forwarders;
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  acceptor_.join();  // Polls stopping_; no new forwarder after this.
  {
    absl::MutexLock lock(&mu_);
    forwarders.swap(forwarders_);
  }
  for (std::thread& t : forwarders) t.join();
  close(listen_fd_);
}

int64_t TcpProxy::client_bytes() const {
  absl::MutexLock lock(&mu_);
  return client_bytes_;
}

std::string TcpProxy::client_stream() const {
  absl::MutexLock lock(&mu_);
  return client_stream_;
}

void TcpProxy::FreezeAfterClientBytes(int64_t limit) {
  absl::MutexLock lock(&mu_);
  limit_ = limit;
}

bool TcpProxy::frozen() const {
  absl::MutexLock lock(&mu_);
  return FrozenLocked();
}

bool TcpProxy::WaitUntilFrozen(absl::Duration timeout) const {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithTimeout(absl::Condition(this, &TcpProxy::FrozenLocked),
                              timeout);
}

void TcpProxy::Thaw() {
  absl::MutexLock lock(&mu_);
  limit_ = std::numeric_limits<int64_t>::max();
}

int64_t TcpProxy::QueuedClientBytes() const {
  absl::MutexLock lock(&mu_);
  int64_t queued = 0;
  for (int client : clients_) {
    int n = 0;
    if (ioctl(client, FIONREAD, &n) == 0) queued += n;
  }
  return queued;
}

bool TcpProxy::WaitUntilClientsStall(absl::Duration quiet,
                                     absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  int64_t last = -1;
  absl::Time since = absl::Now();
  while (absl::Now() < deadline) {
    const int64_t queued = frozen() ? QueuedClientBytes() : -1;
    if (queued != last) {
      last = queued;
      since = absl::Now();
    } else if (queued > 0 && absl::Now() - since >= quiet) {
      return true;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  return false;
}

int64_t TcpProxy::ClientAllowance() const {
  absl::MutexLock lock(&mu_);
  return std::min(kReadBytes, limit_ - client_bytes_);
}

void TcpProxy::AcceptLoop() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    pollfd p{listen_fd_, POLLIN, 0};
    if (poll(&p, 1, kPollMs) <= 0) continue;
    const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    absl::MutexLock lock(&mu_);
    clients_.push_back(client);
    forwarders_.emplace_back([this, client] { Forward(client); });
  }
}

void TcpProxy::Forward(int client) {
  const int target = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = LoopbackAddress(target_port_);
  // The client's socket leaves clients_ before it is closed, so that
  // QueuedClientBytes never reads a number the system may reuse.
  const auto close_client = [this, client] {
    {
      absl::MutexLock lock(&mu_);
      clients_.erase(std::find(clients_.begin(), clients_.end(), client));
    }
    close(client);
  };
  if (target < 0 ||
      connect(target, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (target >= 0) close(target);
    close_client();
    return;
  }
  std::vector<char> buffer(kReadBytes);
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) break;
    }
    // Frozen, the client's bytes stay unread: its socket's buffers fill and
    // it stalls. The target's bytes still pass.
    const bool from_client = ClientAllowance() > 0;
    pollfd fds[2] = {{target, POLLIN, 0}, {client, POLLIN, 0}};
    if (poll(fds, from_client ? 2 : 1, kPollMs) <= 0) continue;
    if (from_client && fds[1].revents != 0) {
      const int64_t allowance = ClientAllowance();
      if (allowance > 0) {
        const ssize_t n = recv(client, buffer.data(), allowance, 0);
        if (n <= 0 || !SendAll(target, buffer.data(), n)) break;
        absl::MutexLock lock(&mu_);
        client_bytes_ += n;
        client_stream_.append(buffer.data(),
                              std::min(static_cast<size_t>(n),
                                       kRecordedBytes - client_stream_.size()));
      }
    }
    if (fds[0].revents != 0) {
      const ssize_t n = recv(target, buffer.data(), buffer.size(), 0);
      if (n <= 0 || !SendAll(client, buffer.data(), n)) break;
    }
  }
  close_client();
  close(target);
}

}  // namespace server_internal
}  // namespace distribute
