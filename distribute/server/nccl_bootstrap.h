// NCCL communicators across processes, bootstrapped over the tasks' gRPC
// Servers: the chief makes an ncclUniqueId and publishes it (BlobKey: the
// group's name and instance), every other task fetches it from the chief
// (blob_exchange.h), and each process then joins the NCCL group with its own
// GPU at its global rank (NcclCommunicator::CreateRank, ncclCommInitRank).
// Built only where CUDA is configured.
//
// Example (task t of n, one GPU each; task 0 is the chief):
//   absl::StatusOr<std::unique_ptr<devices::cuda::NcclCommunicator>> comm =
//       distribute::CreateNcclRankOverGrpc(
//           *server, /*chief_target=*/addresses[0], {"nccl-grads", 0},
//           *platform->gpu(0), /*rank=*/t, device_names, absl::Minutes(2));
#ifndef DISTRIBUTE_SERVER_NCCL_BOOTSTRAP_H_
#define DISTRIBUTE_SERVER_NCCL_BOOTSTRAP_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/nccl_communicator.h"
#include "distribute/server/blob_exchange.h"
#include "distribute/server/server.h"

namespace distribute {

// Rank `rank` of an NCCL group of device_names.size() ranks, one per
// calling process, on `device`. Rank 0 is the chief: it makes the unique id
// and publishes it on `local` (which must be the server at chief_target);
// the others fetch it from `chief_target`. Every other task first
// publishes how many ranks it counts; a chief given `other_tasks` (their
// servers' addresses) fetches those counts in parallel, within `timeout`,
// before it makes the id, and on a disagreement (as soon as it sees one) or
// a task whose count did not come publishes a refusal instead. Where every task
// is up, they all fail at once (FAILED_PRECONDITION naming both counts) rather
// than in ncclCommInitRank's wait. A task waits for the chief's blob `timeout`
// plus 10 s (the chief may spend `timeout` on a task that never comes); the
// wait for every rank to join is bounded by `timeout` again. Tasks of a
// build before this format fail with INVALID_ARGUMENT. Errors: FetchBlob's
// (DEADLINE_EXCEEDED when the chief's id or a task's count does not come,
// UNAUTHENTICATED / PERMISSION_DENIED when the chief refuses us), the chief's
// refusal (with its code), INVALID_ARGUMENT for a rank outside the group or a
// blob that is neither the chief's id and group size nor a refusal,
// FAILED_PRECONDITION when the chief's group has another size, and
// CreateRank's.
absl::StatusOr<std::unique_ptr<devices::cuda::NcclCommunicator>>
CreateNcclRankOverGrpc(Server& local, absl::string_view chief_target,
                       const BlobKey& key, devices::cuda::CudaDevice& device,
                       int rank, std::vector<std::string> device_names,
                       absl::Duration timeout,
                       std::vector<std::string> other_tasks = {});

// The same for a process that drives several GPUs: ranks first_rank ..
// first_rank + devices.size() - 1 on `devices`, in order
// (NcclCommunicator::CreateRanks). The process holding rank 0 is the chief.
absl::StatusOr<std::unique_ptr<devices::cuda::NcclCommunicator>>
CreateNcclRanksOverGrpc(Server& local, absl::string_view chief_target,
                        const BlobKey& key,
                        std::vector<devices::cuda::CudaDevice*> devices,
                        int first_rank, std::vector<std::string> device_names,
                        absl::Duration timeout,
                        std::vector<std::string> other_tasks = {});

// What the chief publishes under the group's key: a tag byte, the unique
// id and the group's size as 8 little-endian bytes (so that a task that
// counts the group otherwise fails at once instead of waiting in
// ncclCommInitRank for ranks that never come); or, when it will not form
// the group, a refusal carrying why.
std::string EncodeNcclGroupBlob(absl::string_view unique_id, int group_size);
std::string EncodeNcclRefusal(const absl::Status& why);
// The id of a blob EncodeNcclGroupBlob made, checked against this task's
// group size: FAILED_PRECONDITION naming both sizes when they differ; a
// refusal's status (its code, and its reason naming the group); and
// INVALID_ARGUMENT when the blob is neither (`key` names it in errors).
absl::StatusOr<std::string> DecodeNcclGroupBlob(absl::string_view blob,
                                                int group_size,
                                                const BlobKey& key);

}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_NCCL_BOOTSTRAP_H_
