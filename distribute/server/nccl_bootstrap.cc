#include "distribute/server/nccl_bootstrap.h"

#include <cstdint>
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
  absl::StatusOr<std::string> blob = BroadcastBlob(
      local, chief_target, /*is_chief=*/first_rank == 0, key,
      [size]() -> absl::StatusOr<std::string> {
        absl::StatusOr<std::string> made =
            devices::cuda::NcclCommunicator::NewUniqueId();
        if (!made.ok()) return made.status();
        return EncodeNcclGroupBlob(*made, size);
      },
      timeout);
  if (!blob.ok()) return blob.status();
  absl::StatusOr<std::string> id = DecodeNcclGroupBlob(*blob, size, key);
  if (!id.ok()) return id.status();
  return devices::cuda::NcclCommunicator::CreateRanks(
      std::move(devices), *id, first_rank, std::move(device_names), timeout);
}

std::string EncodeNcclGroupBlob(absl::string_view unique_id, int group_size) {
  std::string blob(unique_id);
  uint64_t size = static_cast<uint64_t>(group_size);
  for (int i = 0; i < 8; ++i) {
    blob.push_back(static_cast<char>(size & 0xff));
    size >>= 8;
  }
  return blob;
}

absl::StatusOr<std::string> DecodeNcclGroupBlob(absl::string_view blob,
                                                int group_size,
                                                const BlobKey& key) {
  const size_t id_bytes =
      static_cast<size_t>(devices::cuda::kNcclUniqueIdBytes);
  if (blob.size() != id_bytes + 8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the NCCL group published under \"", key.ToString(), "\" is ",
        blob.size(), " bytes, not ", id_bytes + 8,
        " (the unique id and the group size); the chief must publish what "
        "EncodeNcclGroupBlob made"));
  }
  uint64_t size = 0;
  for (int i = 7; i >= 0; --i) {
    size = (size << 8) | static_cast<unsigned char>(blob[id_bytes + i]);
  }
  if (size != static_cast<uint64_t>(group_size)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the chief's NCCL group \"", key.ToString(), "\" has ", size,
        " ranks but this task counts ", group_size,
        "; every task must count the same ranks (a MultiWorkerMirroredStrategy "
        "needs as many GPUs on every worker)"));
  }
  return std::string(blob.substr(0, id_bytes));
}

}  // namespace distribute
