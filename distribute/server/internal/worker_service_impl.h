// The WorkerService RPC handlers of a Server (see worker_service.proto):
// every call is admitted by peer address and cluster token before it has
// any effect, then Ping answers the task's identity, RunFunction runs a
// registered function, Deliver hands a message to the transport mailboxes,
// AbortGroup aborts a transport group's mailbox, and FetchBlob answers a
// published blob (waiting for it until the call's deadline).
//
// Example (what Server does):
//   server_internal::WorkerServiceImpl service(config);
//   builder.RegisterService(&service);
//   service.set_address("127.0.0.1:41234");  // Once the port is bound.
#ifndef DISTRIBUTE_SERVER_INTERNAL_WORKER_SERVICE_IMPL_H_
#define DISTRIBUTE_SERVER_INTERNAL_WORKER_SERVICE_IMPL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "distribute/server/function_registry.h"
#include "distribute/server/internal/blob_store.h"
#include "distribute/server/internal/mailbox.h"
#include "distribute/server/internal/raw_chunk.h"
#include "distribute/server/internal/receive_counters.h"
#include "distribute/server/internal/server_security.h"
#include "distribute/server/worker_service.grpc.pb.h"

namespace distribute {
namespace server_internal {

struct WorkerServiceConfig {
  std::string job;
  int64_t task_index = 0;
  uint64_t incarnation = 0;
  std::optional<std::string> cluster_token;
  int64_t max_message_bytes = 0;
  // Owned by the Server, which outlives the service.
  FunctionRegistry* functions = nullptr;
  PeerFilter* peer_filter = nullptr;
  // Refuses tasks of other clusters; may be null (no check).
  const CallerCheck* caller_check = nullptr;
  std::shared_ptr<MailboxRegistry> mailboxes;
  std::shared_ptr<BlobStore> blobs;
  // Counts what Deliver streams bring (the Server reads it).
  std::shared_ptr<ReceiveCounters> received =
      std::make_shared<ReceiveCounters>();
};

class WorkerServiceImpl final : public server::WorkerService::Service {
 public:
  explicit WorkerServiceImpl(WorkerServiceConfig config);
  WorkerServiceImpl(const WorkerServiceImpl&) = delete;
  WorkerServiceImpl& operator=(const WorkerServiceImpl&) = delete;

  // The "host:port" Ping reports.
  void set_address(std::string address);
  // The grpc+tcp data plane's port that Ping advertises (0: none).
  void set_data_port(int port);

  grpc::Status Ping(grpc::ServerContext* context,
                    const server::PingRequest* request,
                    server::PingResponse* response) override;
  grpc::Status RunFunction(grpc::ServerContext* context,
                           const server::RunFunctionRequest* request,
                           server::RunFunctionResponse* response) override;
  grpc::Status Deliver(grpc::ServerContext* context,
                       grpc::ServerReader<server::DeliverChunk>* reader,
                       server::DeliverResponse* response) override;
  grpc::Status AbortGroup(grpc::ServerContext* context,
                          const server::AbortGroupRequest* request,
                          server::AbortGroupResponse* response) override;
  grpc::Status FetchBlob(grpc::ServerContext* context,
                         const server::FetchBlobRequest* request,
                         server::FetchBlobResponse* response) override;
  // kDeliverRawMethod: Deliver with chunks in raw_chunk.h's form.
  grpc::Status DeliverRaw(grpc::ServerContext* context,
                          grpc::ServerReader<InboundChunk>* reader);

 private:
  // PERMISSION_DENIED for a peer outside the cluster, UNAUTHENTICATED
  // without the right token.
  grpc::Status Authorize(grpc::ServerContext* context) const;
  std::string task_name() const;
  // The mailbox and message that a Deliver stream's first chunk opens.
  absl::StatusOr<
      std::pair<std::shared_ptr<GroupMailbox>, std::shared_ptr<Inbound>>>
  BeginDelivery(const server::DeliverChunk& first);
  // Decodes the arguments, runs the function and encodes its outputs.
  absl::Status Run(const server::RunFunctionRequest& request,
                   server::RunFunctionResponse& response);

  const WorkerServiceConfig config_;
  mutable absl::Mutex mu_;
  std::string address_ ABSL_GUARDED_BY(mu_);
  int data_port_ ABSL_GUARDED_BY(mu_) = 0;
};

// The service that carries kDeliverRawMethod (registered by hand: its
// messages are not protobuf-parsed), forwarding to a WorkerServiceImpl.
class BulkTransferService final : public grpc::Service {
 public:
  explicit BulkTransferService(WorkerServiceImpl* impl);
  BulkTransferService(const BulkTransferService&) = delete;
  BulkTransferService& operator=(const BulkTransferService&) = delete;

 private:
  WorkerServiceImpl* const impl_;
};

}  // namespace server_internal
}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_INTERNAL_WORKER_SERVICE_IMPL_H_
