// For tests: a cluster of N tasks of job "worker" on 127.0.0.1 whose ports
// are chosen free by the system, with one started Server per task, all in
// this process.
//
// Example:
//   absl::StatusOr<server_internal::TestCluster> cluster =
//       server_internal::TestCluster::Start(3);
//   cluster->servers[1]->target();   // "grpc://127.0.0.1:<port>"
//   cluster->addresses;              // {"127.0.0.1:<p0>", ...}
#ifndef DISTRIBUTE_SERVER_INTERNAL_TEST_CLUSTER_H_
#define DISTRIBUTE_SERVER_INTERNAL_TEST_CLUSTER_H_

#include <netinet/in.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/transport.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/server/server.h"

namespace distribute {
namespace server_internal {

// 127.0.0.1:`port` as a socket address (port 0: any free port, for bind).
sockaddr_in LoopbackAddress(int port);

// `n` distinct TCP ports of 127.0.0.1 that were free a moment ago.
absl::StatusOr<std::vector<int>> PickFreePorts(int n);

struct TestCluster {
  // Creates and starts `n` servers of job "worker" (task i at addresses[i]).
  // `options` applies to every server. Picks new ports (a few times) when
  // one was taken before its server could bind it.
  static absl::StatusOr<TestCluster> Start(int n, ServerOptions options = {});

  cluster::ClusterSpec spec;
  std::vector<std::string> addresses;
  std::vector<std::unique_ptr<Server>> servers;
};

// One GrpcTransport endpoint per task of `cluster` (rank i on task i), for
// the transport group `key`; the errors of GrpcTransport::Create.
absl::StatusOr<std::vector<std::unique_ptr<devices::Transport>>>
GrpcTransportGroup(const TestCluster& cluster, const std::string& key);

}  // namespace server_internal
}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_INTERNAL_TEST_CLUSTER_H_
