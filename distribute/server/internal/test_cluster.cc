#include "distribute/server/internal/test_cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "devices/status_macros.h"
#include "distribute/server/grpc_transport.h"
#include "distribute/server/local_ports.h"

namespace distribute {
namespace server_internal {

sockaddr_in LoopbackAddress(int port) {
  sockaddr_in addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  return addr;
}

absl::StatusOr<std::vector<int>> PickFreePorts(int n) {
  return UnusedLocalPorts(n);
}

absl::StatusOr<TestCluster> TestCluster::Start(int n, ServerOptions options) {
  // A port picked free may be taken before the server binds it (by another
  // test, or as a client's ephemeral port); then pick again.
  absl::Status last;
  for (int attempt = 0; attempt < 5; ++attempt) {
    ASSIGN_OR_RETURN(std::vector<int> ports, PickFreePorts(n));
    TestCluster cluster;
    for (int port : ports) {
      cluster.addresses.push_back(absl::StrCat("127.0.0.1:", port));
    }
    ASSIGN_OR_RETURN(
        cluster::ClusterSpec spec,
        cluster::ClusterSpec::Create({{"worker", cluster.addresses}}));
    cluster.spec = std::move(spec);
    last = absl::OkStatus();
    for (int i = 0; i < n && last.ok(); ++i) {
      absl::StatusOr<std::unique_ptr<Server>> server =
          Server::Create(cluster.spec, "worker", i, options);
      if (server.ok()) {
        cluster.servers.push_back(*std::move(server));
      } else {
        last = server.status();
      }
    }
    if (last.ok()) return cluster;
    if (last.code() != absl::StatusCode::kUnavailable) return last;
  }
  return last;
}

absl::StatusOr<std::vector<std::unique_ptr<devices::Transport>>>
GrpcTransportGroup(const TestCluster& cluster, const std::string& key) {
  std::vector<std::unique_ptr<devices::Transport>> endpoints;
  for (size_t r = 0; r < cluster.servers.size(); ++r) {
    GrpcTransportOptions transport;
    transport.group_key = key;
    transport.rank_targets = cluster.addresses;
    transport.rank = static_cast<int>(r);
    transport.connect_timeout = absl::Seconds(10);
    ASSIGN_OR_RETURN(std::unique_ptr<devices::Transport> endpoint,
                     GrpcTransport::Create(*cluster.servers[r], transport));
    endpoints.push_back(std::move(endpoint));
  }
  return endpoints;
}

}  // namespace server_internal
}  // namespace distribute
