#include "distribute/server/remote_function_client.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/server/internal/tensor_codec.h"
#include "distribute/server/worker_service.grpc.pb.h"
#include "grpcpp/channel.h"

namespace distribute {

RemoteFunctionClient::RemoteFunctionClient(ChannelOptions options)
    : options_(std::move(options)) {}

RemoteFunctionClient::~RemoteFunctionClient() = default;

absl::StatusOr<std::shared_ptr<grpc::Channel>> RemoteFunctionClient::Channel(
    absl::string_view address) {
  absl::MutexLock lock(&mu_);
  auto it = channels_.find(address);
  if (it != channels_.end()) return it->second;
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                   CreateChannel(address, options_));
  channels_.emplace(std::string(address), channel);
  return channel;
}

absl::StatusOr<std::vector<devices::Tensor>> RemoteFunctionClient::Call(
    absl::string_view target, absl::string_view name,
    const std::vector<devices::Tensor>& args, absl::Duration timeout) {
  const absl::string_view address = StripGrpcScheme(target);
  server::RunFunctionRequest request;
  request.set_name(std::string(name));
  for (size_t i = 0; i < args.size(); ++i) {
    RETURN_IF_ERROR(server_internal::TensorToProto(
        args[i], absl::StrCat("argument ", i, " of function \"", name, "\""),
        *request.add_args()));
  }
  const size_t bytes = request.ByteSizeLong();
  if (bytes > static_cast<size_t>(options_.max_message_bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the arguments of function \"", name, "\" are ", bytes,
        " bytes, more than max_message_bytes (", options_.max_message_bytes,
        "); send less data or raise the bound on both sides"));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, Channel(address));
  std::unique_ptr<server::WorkerService::Stub> stub =
      server::WorkerService::NewStub(channel);
  grpc::ClientContext context;
  PrepareClientContext(options_, timeout, context);
  server::RunFunctionResponse response;
  grpc::Status rpc = stub->RunFunction(&context, request, &response);
  if (!rpc.ok()) {
    return absl::Status(
        static_cast<absl::StatusCode>(rpc.error_code()),
        absl::StrCat("calling function \"", name, "\" on ", address,
                     " failed: ", rpc.error_message()));
  }
  if (response.error_code() != 0) {
    return absl::Status(static_cast<absl::StatusCode>(response.error_code()),
                        response.error_message());
  }
  std::vector<devices::Tensor> outputs;
  outputs.reserve(static_cast<size_t>(response.outputs_size()));
  for (int i = 0; i < response.outputs_size(); ++i) {
    ASSIGN_OR_RETURN(
        devices::Tensor output,
        server_internal::TensorFromProto(
            response.outputs(i), absl::StrCat("output ", i, " of function \"",
                                              name, "\" from ", address)));
    outputs.push_back(std::move(output));
  }
  return outputs;
}

}  // namespace distribute
