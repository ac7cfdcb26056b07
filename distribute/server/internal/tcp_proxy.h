// For tests: a TCP proxy on 127.0.0.1 that forwards every connection it
// accepts to a target port, and can freeze. A frozen proxy stops reading
// what clients send but keeps every socket open, and still passes on what
// the target sends. A client then sees what a peer that stopped reading
// (SIGSTOP, a partition) looks like from the network: the connection stays
// up, what the target granted before (acknowledgements, HTTP/2 flow
// control) arrives, and once the socket buffers fill, nothing moves;
// nothing the client sends after that (a keepalive ping) is answered.
//
// Example:
//   absl::StatusOr<std::unique_ptr<server_internal::TcpProxy>> proxy =
//       server_internal::TcpProxy::Start(/*target_port=*/2223);
//   channel_to((*proxy)->address());        // "127.0.0.1:<port>"
//   (*proxy)->FreezeAfterClientBytes((*proxy)->client_bytes() + (1 << 20));
//   (*proxy)->WaitUntilFrozen(absl::Seconds(10));
#ifndef DISTRIBUTE_SERVER_INTERNAL_TCP_PROXY_H_
#define DISTRIBUTE_SERVER_INTERNAL_TCP_PROXY_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace distribute {
namespace server_internal {

class TcpProxy {
 public:
  // Listens on a free port of 127.0.0.1 and forwards to
  // 127.0.0.1:target_port.
  static absl::StatusOr<std::unique_ptr<TcpProxy>> Start(int target_port);

  TcpProxy(const TcpProxy&) = delete;
  TcpProxy& operator=(const TcpProxy&) = delete;
  // Closes every connection and joins the proxy's threads.
  ~TcpProxy();

  // "127.0.0.1:<port>", where clients connect.
  const std::string& address() const { return address_; }

  // Bytes forwarded so far from clients to the target, over every
  // connection.
  int64_t client_bytes() const;
  // The first kRecordedBytes of what clients sent, over every connection
  // in the order forwarded: what crossed the wire toward the target.
  static constexpr size_t kRecordedBytes = size_t{4} << 20;
  std::string client_stream() const;
  // Forwards clients' bytes until `client_bytes()` reaches `limit`, then
  // freezes. A limit already reached freezes at once.
  void FreezeAfterClientBytes(int64_t limit);
  // Whether the proxy is frozen now.
  bool frozen() const;
  // Waits until the proxy is frozen; false when `timeout` passed first.
  bool WaitUntilFrozen(absl::Duration timeout) const;
  // Forwards again (and forgets the limit).
  void Thaw();
  // Bytes clients sent that the proxy has not read yet (what waits in its
  // sockets' receive queues), over every connection.
  int64_t QueuedClientBytes() const;
  // Frozen: waits until the clients' bytes queued at the proxy stopped
  // growing (no change over `quiet`, at least one byte queued): the
  // proxy's receive buffers are full and the clients' sockets can hand
  // nothing more on, so a client with more to send is blocked in its
  // write. False when `timeout` passed first.
  bool WaitUntilClientsStall(absl::Duration quiet,
                             absl::Duration timeout) const;

 private:
  TcpProxy(int listen_fd, int target_port, std::string address);

  void AcceptLoop();
  // Forwards between `client` and a new connection to the target until
  // either side closes or the proxy stops.
  void Forward(int client);
  // How many bytes a read from a client may take now (0: frozen).
  int64_t ClientAllowance() const;
  // Frozen: the clients' bytes reached the limit.
  bool FrozenLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return client_bytes_ >= limit_;
  }

  const int listen_fd_;
  const int target_port_;
  const std::string address_;

  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int64_t client_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  std::string client_stream_ ABSL_GUARDED_BY(mu_);
  int64_t limit_ ABSL_GUARDED_BY(mu_) = std::numeric_limits<int64_t>::max();
  std::vector<std::thread> forwarders_ ABSL_GUARDED_BY(mu_);
  // The client sockets open now.
  std::vector<int> clients_ ABSL_GUARDED_BY(mu_);
  std::thread acceptor_;
};

}  // namespace server_internal
}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_INTERNAL_TCP_PROXY_H_
