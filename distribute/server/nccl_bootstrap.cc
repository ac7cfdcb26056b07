#include "distribute/server/nccl_bootstrap.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/cuda/nccl_api.h"

namespace distribute {

absl::StatusOr<std::unique_ptr<devices::cuda::NcclCommunicator>>
CreateNcclRankOverGrpc(Server& local, absl::string_view chief_target,
                       const BlobKey& key, devices::cuda::CudaDevice& device,
                       int rank, std::vector<std::string> device_names,
                       absl::Duration timeout) {
  return CreateNcclRanksOverGrpc(local, chief_target, key, {&device}, rank,
                                 std::move(device_names), timeout);
}

absl::StatusOr<std::unique_ptr<devices::cuda::NcclCommunicator>>
CreateNcclRanksOverGrpc(Server& local, absl::string_view chief_target,
                        const BlobKey& key,
                        std::vector<devices::cuda::CudaDevice*> devices,
                        int first_rank, std::vector<std::string> device_names,
                        absl::Duration timeout) {
  const int size = static_cast<int>(device_names.size());
  const int count = static_cast<int>(devices.size());
  if (count < 1 || first_rank < 0 || first_rank + count > size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NCCL ranks ", first_rank, "..", first_rank + count - 1,
        " (one per local GPU) are not all inside the group's ranks [0, ", size,
        ") given by device_names"));
  }
  absl::StatusOr<std::string> id = BroadcastBlob(
      local, chief_target, /*is_chief=*/first_rank == 0, key,
      [] { return devices::cuda::NcclCommunicator::NewUniqueId(); }, timeout);
  if (!id.ok()) return id.status();
  if (id->size() != static_cast<size_t>(devices::cuda::kNcclUniqueIdBytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the NCCL unique id published under \"", key.ToString(), "\" is ",
        id->size(), " bytes, not ", devices::cuda::kNcclUniqueIdBytes,
        "; the chief must publish what NcclCommunicator::NewUniqueId made"));
  }
  return devices::cuda::NcclCommunicator::CreateRanks(
      std::move(devices), *id, first_rank, std::move(device_names), timeout);
}

}  // namespace distribute
