// RoutedTransport: one rank's endpoint in a group that spans processes,
// where each process holds a block of consecutive ranks. Messages between
// two ranks of this process take `local` (the platform's in-process
// transport group: memory copies, no sockets); messages to other processes
// take `remote` (e.g. GrpcTransport over the whole group). The hierarchical
// all-reduce of a multi-device worker then reduces within the worker in
// memory and sends only the leaders' data across.
//
// Example (worker 1 of 2, each with 2 host devices; this is its rank 3):
//   auto local = platform.CreateTransportGroup({"...CPU:0", "...CPU:1"});
//   auto remote = GrpcTransport::Create(server, options);  // rank 3 of 4
//   auto endpoint = RoutedTransport::Create(
//       std::move((*local)[1]), /*first_rank=*/2, *std::move(remote));
//   (*endpoint)->Send(2, tag, data);  // rank 2: same process, in memory
//   (*endpoint)->Send(0, tag, data);  // rank 0: worker 0, over gRPC
//
// Both sides of a message route it the same way, since every process holds
// consecutive ranks. Abort aborts both groups: the local ranks fail at once,
// and the remote transport tells the other processes.
#ifndef DISTRIBUTE_COLLECTIVE_ROUTED_TRANSPORT_H_
#define DISTRIBUTE_COLLECTIVE_ROUTED_TRANSPORT_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "devices/transport.h"

namespace distribute {
namespace collective {

class RoutedTransport : public devices::Transport {
 public:
  // `local`: this process's endpoint of its own group, whose local rank r is
  // global rank first_rank + r; `remote`: this rank's endpoint of the whole
  // group. INVALID_ARGUMENT when either is null or they disagree (remote's
  // rank is not first_rank + local's rank, or the local block does not fit
  // in the group).
  static absl::StatusOr<std::unique_ptr<devices::Transport>> Create(
      std::unique_ptr<devices::Transport> local, int first_rank,
      std::unique_ptr<devices::Transport> remote);

  RoutedTransport(const RoutedTransport&) = delete;
  RoutedTransport& operator=(const RoutedTransport&) = delete;

  int rank() const override { return remote_->rank(); }
  int size() const override { return remote_->size(); }
  const std::string& device(int rank) const override {
    return remote_->device(rank);
  }
  absl::StatusOr<std::unique_ptr<devices::Request>> Send(
      int peer, uint64_t tag, absl::Span<const std::byte> data) override;
  absl::StatusOr<std::unique_ptr<devices::Request>> Recv(
      int peer, uint64_t tag, absl::Span<std::byte> data) override;
  // Aborts the local group and the remote one; the first error, if any.
  absl::Status Abort(absl::Status reason) override;
  // The group spans processes: no direct access.
  devices::DirectAccessGroup* direct_access() override { return nullptr; }
  bool prefers_early_receives() const override {
    return remote_->prefers_early_receives();
  }

  // Whether messages with `peer` travel in memory.
  bool IsLocal(int peer) const {
    return peer >= first_rank_ && peer < first_rank_ + local_->size();
  }

 private:
  RoutedTransport(std::unique_ptr<devices::Transport> local, int first_rank,
                  std::unique_ptr<devices::Transport> remote)
      : local_(std::move(local)),
        remote_(std::move(remote)),
        first_rank_(first_rank) {}

  const std::unique_ptr<devices::Transport> local_;
  const std::unique_ptr<devices::Transport> remote_;
  const int first_rank_;
};

}  // namespace collective
}  // namespace distribute

#endif  // DISTRIBUTE_COLLECTIVE_ROUTED_TRANSPORT_H_
