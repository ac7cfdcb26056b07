#include "distribute/server/blob_exchange.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/server/internal/grpc_status.h"
#include "distribute/server/worker_service.grpc.pb.h"
#include "grpcpp/client_context.h"

namespace distribute {
namespace {

absl::Status CheckKey(const BlobKey& key) {
  if (key.group.empty()) {
    return absl::InvalidArgumentError(
        "BlobKey::group is empty; name the group whose value is exchanged");
  }
  if (key.instance < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "BlobKey::instance is ", key.instance, "; it must be >= 0"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string BlobKey::ToString() const {
  return absl::StrCat(group, "/", instance);
}

absl::Status PublishBlob(Server& local, const BlobKey& key, std::string value) {
  RETURN_IF_ERROR(CheckKey(key));
  return local.PublishBlob(key.ToString(), std::move(value));
}

absl::StatusOr<std::string> FetchBlob(const ChannelOptions& options,
                                      absl::string_view target,
                                      const BlobKey& key,
                                      absl::Duration timeout) {
  RETURN_IF_ERROR(CheckKey(key));
  if (timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "FetchBlob's timeout must be positive; it bounds the wait for the "
        "task that publishes the value");
  }
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                   CreateChannel(target, options));
  std::unique_ptr<server::WorkerService::Stub> stub =
      server::WorkerService::NewStub(channel);
  grpc::ClientContext context;
  PrepareClientContext(options, timeout, context);
  // The task may not be listening yet: wait for it within the deadline.
  context.set_wait_for_ready(true);
  server::FetchBlobRequest request;
  request.set_key(key.ToString());
  server::FetchBlobResponse response;
  const absl::Status status = server_internal::FromGrpcStatus(
      stub->FetchBlob(&context, request, &response));
  if (status.ok()) return std::move(*response.mutable_value());
  if (status.code() == absl::StatusCode::kDeadlineExceeded) {
    return absl::DeadlineExceededError(absl::StrCat(
        "no value for \"", key.ToString(), "\" came from the task at ",
        StripGrpcScheme(target), " within ", absl::FormatDuration(timeout),
        "; check that the task is running and publishes this group and "
        "instance"));
  }
  return absl::Status(
      status.code(),
      absl::StrCat("fetching \"", key.ToString(), "\" from the task at ",
                   StripGrpcScheme(target), " failed: ", status.message()));
}

absl::StatusOr<std::string> BroadcastBlob(
    Server& local, absl::string_view chief_target, bool is_chief,
    const BlobKey& key, absl::FunctionRef<absl::StatusOr<std::string>()> make,
    absl::Duration timeout) {
  if (!is_chief) {
    return FetchBlob(local.channel_options(), chief_target, key, timeout);
  }
  RETURN_IF_ERROR(CheckKey(key));
  ASSIGN_OR_RETURN(std::string value, make());
  RETURN_IF_ERROR(PublishBlob(local, key, value));
  return value;
}

}  // namespace distribute
