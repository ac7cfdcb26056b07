#include "distribute/collective/routed_transport.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace distribute {
namespace collective {

absl::StatusOr<std::unique_ptr<devices::Transport>> RoutedTransport::Create(
    std::unique_ptr<devices::Transport> local, int first_rank,
    std::unique_ptr<devices::Transport> remote) {
  if (local == nullptr || remote == nullptr) {
    return absl::InvalidArgumentError(
        "RoutedTransport needs both a local and a remote endpoint");
  }
  if (first_rank < 0 || first_rank + local->size() > remote->size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RoutedTransport: the local ranks [", first_rank, ", ",
        first_rank + local->size(), ") do not fit in the group of ",
        remote->size(), " ranks"));
  }
  if (remote->rank() != first_rank + local->rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RoutedTransport: the remote endpoint is rank ", remote->rank(),
        " but the local one is local rank ", local->rank(),
        " of the block from rank ", first_rank, " (global rank ",
        first_rank + local->rank(), "); pair the endpoints of one rank"));
  }
  return std::unique_ptr<devices::Transport>(
      new RoutedTransport(std::move(local), first_rank, std::move(remote)));
}

absl::StatusOr<std::unique_ptr<devices::Request>> RoutedTransport::Send(
    int peer, uint64_t tag, absl::Span<const std::byte> data) {
  if (IsLocal(peer)) return local_->Send(peer - first_rank_, tag, data);
  return remote_->Send(peer, tag, data);
}

absl::StatusOr<std::unique_ptr<devices::Request>> RoutedTransport::Recv(
    int peer, uint64_t tag, absl::Span<std::byte> data) {
  if (IsLocal(peer)) return local_->Recv(peer - first_rank_, tag, data);
  return remote_->Recv(peer, tag, data);
}

absl::Status RoutedTransport::Abort(absl::Status reason) {
  if (reason.ok()) {
    return absl::InvalidArgumentError("Transport::Abort needs a non-OK reason");
  }
  absl::Status local = local_->Abort(reason);
  absl::Status remote = remote_->Abort(std::move(reason));
  return local.ok() ? remote : local;
}

}  // namespace collective
}  // namespace distribute
