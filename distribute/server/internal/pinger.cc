#include "distribute/server/internal/pinger.h"

#include <memory>

#include "distribute/server/internal/grpc_status.h"
#include "grpcpp/completion_queue.h"

namespace distribute {
namespace server_internal {
namespace {

struct Call {
  grpc::ClientContext context;
  server::PingResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<server::PingResponse>> reader;
};

}  // namespace

// The calls complete on a completion queue drained by this thread, not on
// gRPC's callback threads: a callback that dropped the last reference to a
// channel would destroy the channel on the thread that serves it.
std::vector<PingResult> PingAll(
    const std::vector<server::WorkerService::Stub*>& stubs,
    const ChannelOptions& options, absl::Duration timeout, bool wait_for_ready,
    const server::PingRequest& request) {
  grpc::CompletionQueue queue;
  std::vector<std::unique_ptr<Call>> calls;
  calls.reserve(stubs.size());
  for (size_t i = 0; i < stubs.size(); ++i) {
    calls.push_back(std::make_unique<Call>());
    Call& call = *calls.back();
    PrepareClientContext(options, timeout, call.context);
    call.context.set_wait_for_ready(wait_for_ready);
    call.reader = stubs[i]->AsyncPing(&call.context, request, &queue);
    call.reader->Finish(&call.response, &call.status,
                        reinterpret_cast<void*>(i));
  }
  // Every call has a deadline, so every tag comes back.
  for (size_t done = 0; done < stubs.size(); ++done) {
    void* tag = nullptr;
    bool ok = false;
    if (!queue.Next(&tag, &ok)) break;
  }
  queue.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) {
  }
  std::vector<PingResult> results(stubs.size());
  for (size_t i = 0; i < stubs.size(); ++i) {
    results[i].status = FromGrpcStatus(calls[i]->status);
    if (results[i].status.ok()) results[i].response = calls[i]->response;
  }
  return results;
}

}  // namespace server_internal
}  // namespace distribute
