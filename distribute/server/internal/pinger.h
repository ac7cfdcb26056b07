// Pings many servers at once (gRPC's callback API) and waits for all the
// answers: the rendezvous of GrpcTransport and the heartbeats of
// PeerMonitor are built on it.
//
// Example:
//   std::vector<server_internal::PingResult> results =
//   server_internal::PingAll(
//       {stub_a.get(), stub_b.get()}, channel_options, absl::Seconds(1),
//       /*wait_for_ready=*/false);
//   if (results[0].status.ok()) results[0].response.incarnation();
#ifndef DISTRIBUTE_SERVER_INTERNAL_PINGER_H_
#define DISTRIBUTE_SERVER_INTERNAL_PINGER_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "distribute/server/channel.h"
#include "distribute/server/worker_service.grpc.pb.h"

namespace distribute {
namespace server_internal {

struct PingResult {
  absl::Status status;
  server::PingResponse response;
};

// Pings every stub concurrently with `request`, each call bounded by
// `timeout`, and returns the results in the stubs' order. With
// wait_for_ready a server that is not up yet is waited for (until the
// timeout) instead of failing at once.
std::vector<PingResult> PingAll(
    const std::vector<server::WorkerService::Stub*>& stubs,
    const ChannelOptions& options, absl::Duration timeout, bool wait_for_ready,
    const server::PingRequest& request = server::PingRequest());

}  // namespace server_internal
}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_INTERNAL_PINGER_H_
