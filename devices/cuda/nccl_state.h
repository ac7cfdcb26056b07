// Internal to NcclCommunicator (nccl_communicator.cc, nccl_collectives.cc):
// the per-rank and per-group state shared with work queued on the devices,
// and NCCL results as absl::Status.
//
// Example:
//   absl::Status s = NcclStatus(result, "NCCL AllReduce on rank 0", comm);
#ifndef DEVICES_CUDA_NCCL_STATE_H_
#define DEVICES_CUDA_NCCL_STATE_H_

#include <atomic>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/nccl_api.h"
#include "devices/cuda/nccl_communicator.h"

namespace devices {
namespace cuda {

// One local rank. Queued work holds it by shared_ptr, so it outlives the
// communicator; `aborted` tells such work not to touch `comm`.
namespace internal {

struct NcclRankState {
  NcclRankState(int rank, CudaDevice* device, ncclComm* comm)
      : rank(rank), device(device), comm(comm) {}
  NcclRankState(const NcclRankState&) = delete;
  NcclRankState& operator=(const NcclRankState&) = delete;

  const int rank;
  CudaDevice* const device;
  // A non-blocking communicator: its calls may return kNcclInProgress and
  // finish enqueueing later (AwaitEnqueued).
  ncclComm* const comm;
  // Held while NCCL calls are made on `comm` from the device's queue.
  absl::Mutex mu;
  // Set once `comm` was aborted or destroyed: nothing may use it again.
  std::atomic<bool> aborted{false};
};

struct NcclGroupState {
  std::atomic<bool> aborted{false};
  absl::Mutex mu;
  absl::Status reason ABSL_GUARDED_BY(mu);
};

// OK for kNcclSuccess. Otherwise names `what` and carries NCCL's error
// string and last error message: UNAVAILABLE for system and remote errors
// (a peer or the network is gone), INVALID_ARGUMENT / FAILED_PRECONDITION
// for invalid arguments / usage, INTERNAL otherwise. `comm` may be null.
absl::Status NcclStatus(int result, absl::string_view what, ncclComm* comm);

// Waits, polling ncclCommGetAsyncError, while a non-blocking communicator
// reports kNcclInProgress after a call that returned `result`; gives up at
// `deadline` (DEADLINE_EXCEEDED) or when `state`, or the group through
// `group_aborted` (when given), is aborted (UNAVAILABLE). Returns the final
// result as a Status.
absl::Status AwaitEnqueued(NcclRankState& state, int result,
                           absl::string_view what, absl::Time deadline,
                           const std::atomic<bool>* group_aborted = nullptr);

// Aborts the NCCL communicator of `state` once (later calls do nothing).
// Waits up to a second for a launch in progress on it to finish first.
void AbortRank(NcclRankState& state);

}  // namespace internal

}  // namespace cuda
}  // namespace devices

#endif  // DEVICES_CUDA_NCCL_STATE_H_
