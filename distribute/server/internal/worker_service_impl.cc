#include "distribute/server/internal/worker_service_impl.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "devices/transport.h"
#include "distribute/server/internal/grpc_status.h"
#include "distribute/server/internal/tensor_codec.h"
#include "grpcpp/impl/rpc_service_method.h"
#include "grpcpp/support/method_handler.h"

namespace distribute {
namespace server_internal {

WorkerServiceImpl::WorkerServiceImpl(WorkerServiceConfig config)
    : config_(std::move(config)) {}

void WorkerServiceImpl::set_address(std::string address) {
  absl::MutexLock lock(&mu_);
  address_ = std::move(address);
}

void WorkerServiceImpl::set_data_port(int port) {
  absl::MutexLock lock(&mu_);
  data_port_ = port;
}

std::string WorkerServiceImpl::task_name() const {
  return absl::StrCat("/job:", config_.job, "/task:", config_.task_index);
}

grpc::Status WorkerServiceImpl::Authorize(grpc::ServerContext* context) const {
  const std::string peer = context->peer();
  if (!config_.peer_filter->Allowed(peer)) {
    return grpc::Status(
        grpc::StatusCode::PERMISSION_DENIED,
        absl::StrCat("task ", task_name(), " refuses the call from ", peer,
                     ": it is not the address of a task of the cluster (only "
                     "the cluster's task hosts may call its servers)"));
  }
  absl::Status token =
      CheckClusterToken(context->client_metadata(), config_.cluster_token);
  if (!token.ok() || config_.caller_check == nullptr) {
    return ToGrpcStatus(token);
  }
  return ToGrpcStatus(
      config_.caller_check->CheckMetadata(context->client_metadata(), peer));
}

grpc::Status WorkerServiceImpl::Ping(grpc::ServerContext* context,
                                     const server::PingRequest* request,
                                     server::PingResponse* response) {
  grpc::Status admitted = Authorize(context);
  if (!admitted.ok()) return admitted;
  if (request->has_group()) {
    const server::GroupLayout& group = request->group();
    absl::Status agreed = config_.mailboxes->CheckLayout(
        group.group_key(),
        std::vector<std::string>(group.rank_tasks().begin(),
                                 group.rank_tasks().end()),
        absl::StrCat("rank ", group.rank(), " (", group.task(), ")"),
        task_name());
    if (!agreed.ok()) return ToGrpcStatus(agreed);
  }
  response->set_job(config_.job);
  response->set_task_index(config_.task_index);
  response->set_incarnation(config_.incarnation);
  absl::MutexLock lock(&mu_);
  response->set_address(address_);
  response->set_data_port(data_port_);
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::RunFunction(
    grpc::ServerContext* context, const server::RunFunctionRequest* request,
    server::RunFunctionResponse* response) {
  grpc::Status admitted = Authorize(context);
  if (!admitted.ok()) return admitted;
  absl::Status status = Run(*request, *response);
  if (!status.ok()) {
    response->Clear();
    response->set_error_code(static_cast<int32_t>(status.code()));
    response->set_error_message(std::string(status.message()));
  }
  return grpc::Status::OK;
}

absl::Status WorkerServiceImpl::Run(const server::RunFunctionRequest& request,
                                    server::RunFunctionResponse& response) {
  std::vector<devices::Tensor> args;
  args.reserve(static_cast<size_t>(request.args_size()));
  for (int i = 0; i < request.args_size(); ++i) {
    ASSIGN_OR_RETURN(
        devices::Tensor arg,
        TensorFromProto(request.args(i),
                        absl::StrCat("argument ", i, " of function \"",
                                     request.name(), "\"")));
    args.push_back(std::move(arg));
  }
  ASSIGN_OR_RETURN(std::vector<devices::Tensor> outputs,
                   config_.functions->Run(request.name(), std::move(args)));
  for (size_t i = 0; i < outputs.size(); ++i) {
    RETURN_IF_ERROR(TensorToProto(
        outputs[i],
        absl::StrCat("output ", i, " of function \"", request.name(), "\""),
        *response.add_outputs()));
  }
  const size_t bytes = response.ByteSizeLong();
  if (bytes > static_cast<size_t>(config_.max_message_bytes)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the outputs of function \"", request.name(), "\" are ", bytes,
        " bytes, more than max_message_bytes (", config_.max_message_bytes,
        "); return less data or raise the bound on both sides"));
  }
  return absl::OkStatus();
}

grpc::Status WorkerServiceImpl::Deliver(
    grpc::ServerContext* context,
    grpc::ServerReader<server::DeliverChunk>* reader,
    server::DeliverResponse* /*response*/) {
  grpc::Status admitted = Authorize(context);
  if (!admitted.ok()) return admitted;
  server::DeliverChunk chunk;
  if (!reader->Read(&chunk)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "Deliver stream carried no chunk");
  }
  auto begun = BeginDelivery(chunk);
  if (!begun.ok()) return ToGrpcStatus(begun.status());
  auto& [mailbox, message] = *begun;
  auto add = [&, &mailbox = mailbox, &message = message] {
    config_.received->Chunk(static_cast<int64_t>(chunk.data().size()));
    return mailbox->AddChunk(*message, chunk.offset(), chunk.data());
  };
  absl::Status status = add();
  while (status.ok() && reader->Read(&chunk)) status = add();
  if (status.ok() && context->IsCancelled()) {
    status = absl::CancelledError("the sender cancelled the message");
  }
  absl::Status ended = mailbox->EndMessage(message, status);
  return ToGrpcStatus(status.ok() ? ended : status);
}

grpc::Status WorkerServiceImpl::DeliverRaw(
    grpc::ServerContext* context, grpc::ServerReader<InboundChunk>* reader) {
  grpc::Status admitted = Authorize(context);
  if (!admitted.ok()) return admitted;
  InboundChunk chunk;
  if (!reader->Read(&chunk)) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "Deliver stream carried no chunk");
  }
  auto begun = BeginDelivery(chunk.meta);
  if (!begun.ok()) return ToGrpcStatus(begun.status());
  auto& [mailbox, message] = *begun;
  auto add = [&, &mailbox = mailbox, &message = message] {
    int64_t bytes = 0;
    for (absl::string_view piece : chunk.pieces) {
      bytes += static_cast<int64_t>(piece.size());
    }
    config_.received->Chunk(bytes);
    return mailbox->AddChunk(*message, chunk.meta.offset(), chunk.pieces);
  };
  absl::Status status = add();
  while (status.ok()) {
    chunk.HandBack();
    if (!reader->Read(&chunk)) break;
    status = add();
  }
  if (status.ok() && context->IsCancelled()) {
    status = absl::CancelledError("the sender cancelled the message");
  }
  absl::Status ended = mailbox->EndMessage(message, status);
  return ToGrpcStatus(status.ok() ? ended : status);
}

absl::StatusOr<
    std::pair<std::shared_ptr<GroupMailbox>, std::shared_ptr<Inbound>>>
WorkerServiceImpl::BeginDelivery(const server::DeliverChunk& first) {
  if (!first.has_header()) {
    return absl::InvalidArgumentError(
        "the first chunk of a Deliver stream has no header");
  }
  const server::MessageHeader& header = first.header();
  RETURN_IF_ERROR(CheckMessageHeader(header));
  ASSIGN_OR_RETURN(
      std::shared_ptr<GroupMailbox> mailbox,
      config_.mailboxes->ForIncoming(header.group_key(), header.dst_rank()));
  ASSIGN_OR_RETURN(std::shared_ptr<Inbound> message,
                   mailbox->BeginMessage(header));
  config_.received->Message();
  return std::make_pair(std::move(mailbox), std::move(message));
}

grpc::Status WorkerServiceImpl::AbortGroup(
    grpc::ServerContext* context, const server::AbortGroupRequest* request,
    server::AbortGroupResponse* /*response*/) {
  grpc::Status admitted = Authorize(context);
  if (!admitted.ok()) return admitted;
  if (request->group_key().empty() || request->dst_rank() < 0) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "AbortGroup needs a group key and a rank");
  }
  absl::StatusOr<std::shared_ptr<GroupMailbox>> mailbox =
      config_.mailboxes->ForIncoming(request->group_key(), request->dst_rank());
  // A stopped server or a departed endpoint has nothing left to abort.
  if (!mailbox.ok()) return grpc::Status::OK;
  const auto code = static_cast<absl::StatusCode>(request->code());
  if (code == absl::StatusCode::kFailedPrecondition) {
    // A layout refusal, passed on: it stays a FAILED_PRECONDITION (retrying
    // cannot help) and already names the group.
    (*mailbox)->Abort(absl::FailedPreconditionError(
        absl::StrCat("rank ", request->src_rank(), " (task ",
                     request->src_task(), ") passes on: ", request->reason())));
    return grpc::Status::OK;
  }
  (*mailbox)->Abort(absl::Status(
      devices::GroupAbortCode(code),
      absl::StrCat("transport group \"", request->group_key(),
                   "\" was aborted by rank ", request->src_rank(), " (task ",
                   request->src_task(), "): ", request->reason())));
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::FetchBlob(
    grpc::ServerContext* context, const server::FetchBlobRequest* request,
    server::FetchBlobResponse* response) {
  grpc::Status admitted = Authorize(context);
  if (!admitted.ok()) return admitted;
  if (request->key().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "FetchBlob needs a key");
  }
  // The client's deadline bounds the wait (none: until it cancels).
  const absl::Time deadline = absl::FromChrono(context->deadline());
  absl::StatusOr<std::string> value = config_.blobs->Wait(
      request->key(), deadline, [context] { return context->IsCancelled(); });
  if (!value.ok()) {
    return ToGrpcStatus(absl::Status(
        value.status().code(),
        absl::StrCat("task ", task_name(), ": ", value.status().message())));
  }
  response->set_value(*std::move(value));
  return grpc::Status::OK;
}

BulkTransferService::BulkTransferService(WorkerServiceImpl* impl)
    : impl_(impl) {
  AddMethod(new grpc::internal::RpcServiceMethod(
      kDeliverRawMethod, grpc::internal::RpcMethod::CLIENT_STREAMING,
      new grpc::internal::ClientStreamingHandler<
          BulkTransferService, InboundChunk, server::DeliverResponse>(
          [](BulkTransferService* service, grpc::ServerContext* context,
             grpc::ServerReader<InboundChunk>* reader,
             server::DeliverResponse* /*response*/) {
            return service->impl_->DeliverRaw(context, reader);
          },
          this)));
}

}  // namespace server_internal
}  // namespace distribute
