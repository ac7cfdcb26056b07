// NcclCommunicator: the devices::Communicator of NVIDIA's collective
// library. Two ways to make one:
//  * CreateLocal: one process drives a group of its own GPUs (a unique id
//    of its own and every rank's init in one group call, as
//    ncclCommInitAll). Each rank calls the collectives from its own thread
//    (rank r's thread calls AllReduce(r, ...)), as the Communicator
//    interface says; a single thread may instead drive all ranks at once
//    with AllReduceAll, which issues every rank's all-reduce inside one
//    ncclGroupStart/ncclGroupEnd. (A single thread calling the per-rank
//    methods one rank after the other would wait for itself and time out.)
//  * CreateRank: one rank of a group spread over processes
//    (ncclCommInitRankConfig): rank 0's process makes NewUniqueId(), every
//    process gets it (the multi-worker layer sends it over gRPC) and calls
//    CreateRank with its own rank; only that rank is driven locally.
//    CreateRanks does the same for several consecutive ranks on several
//    local GPUs (a worker process with more than one GPU).
//
// Every collective is ordered after the work enqueued before it on the
// rank's CudaDevice: the NCCL call is made from the device's queue thread on
// device.stream(). The calling thread then polls the stream's event and
// ncclCommGetAsyncError until the collective is done. Past options.timeout
// it calls ncclCommAbort and returns DEADLINE_EXCEEDED naming the
// collective and the ranks; the communicator is then aborted for good (every
// later call, on any rank, returns UNAVAILABLE) and a new one must be made.
// NCCL errors, at launch or asynchronous (a peer gone, a network failure),
// return UNAVAILABLE, INTERNAL or INVALID_ARGUMENT with NCCL's own message
// (ncclGetErrorString and ncclGetLastError) and abort the group the same
// way, since the other ranks could not finish the collective either.
//
// MEAN maps to ncclAvg (floats: each input scaled by 1/size, then summed;
// integers: summed, then divided truncating toward zero, as the host's
// FinalizeMean does). bool reduces as bytes: SUM and MAX with ncclMax
// (logical or), PROD and MIN with ncclMin (logical and).
//
// Example (two GPUs, one thread per rank):
//   auto comm = devices::cuda::NcclCommunicator::CreateLocal({gpu0, gpu1});
//   // thread r:
//   devices::CollectiveOptions options;
//   options.op = devices::ReduceOp::kMean;
//   absl::Status s = (*comm)->AllReduce(r, grads[r], grads[r], options);
//
// The communicator holds its devices by pointer: it must not outlive them
// (nor the platform that owns them).
#ifndef DEVICES_CUDA_NCCL_COMMUNICATOR_H_
#define DEVICES_CUDA_NCCL_COMMUNICATOR_H_

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "devices/communicator.h"
#include "devices/cuda/cuda_device.h"
#include "devices/cuda/cuda_event.h"
#include "devices/cuda/nccl_api.h"
#include "devices/tensor.h"

namespace devices {
namespace cuda {
namespace internal {
struct NcclRankState;   // nccl_state.h
struct NcclGroupState;  // nccl_state.h
}  // namespace internal

class NcclCommunicator : public Communicator {
 public:
  // A group over `devices` (distinct GPUs), rank i being devices[i].
  // INVALID_ARGUMENT for an empty list, a null device or a GPU named twice
  // (NCCL does not allow two ranks on one GPU); DEADLINE_EXCEEDED when NCCL
  // has not set the group up within `timeout`; NCCL's errors otherwise.
  static absl::StatusOr<std::unique_ptr<NcclCommunicator>> CreateLocal(
      std::vector<CudaDevice*> devices,
      absl::Duration timeout = absl::Minutes(5));

  // A fresh ncclUniqueId, as kNcclUniqueIdBytes (128) raw bytes.
  static absl::StatusOr<std::string> NewUniqueId();

  // Rank `rank` of a group of device_names.size() ranks spread over
  // processes that all call this with the same `unique_id` (from
  // NewUniqueId); device_names[i] names rank i's device (for device() and
  // messages), `device` is this process's GPU for `rank`. Waits up to
  // `timeout` for the other ranks to join: DEADLINE_EXCEEDED (and the
  // half-made communicator aborted) if they do not. INVALID_ARGUMENT for a
  // unique_id of the wrong size or a rank outside the group.
  static absl::StatusOr<std::unique_ptr<NcclCommunicator>> CreateRank(
      CudaDevice& device, absl::string_view unique_id, int rank,
      std::vector<std::string> device_names,
      absl::Duration timeout = absl::Minutes(5));

  // Several consecutive ranks of such a group driven by this process:
  // ranks first_rank .. first_rank + devices.size() - 1 on `devices`
  // (distinct GPUs, in rank order), joined inside one NCCL group call as
  // NCCL requires of one thread that joins several ranks. Each local rank
  // is then called from its own thread, as with CreateLocal. The errors of
  // CreateRank, and INVALID_ARGUMENT for an empty device list, a null
  // device, a GPU named twice, or ranks that run past the group.
  static absl::StatusOr<std::unique_ptr<NcclCommunicator>> CreateRanks(
      std::vector<CudaDevice*> devices, absl::string_view unique_id,
      int first_rank, std::vector<std::string> device_names,
      absl::Duration timeout = absl::Minutes(5));

  // Destroys the communicators that were not aborted. No collective may be
  // in progress.
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  const std::string& name() const override { return name_; }
  int size() const override { return static_cast<int>(device_names_.size()); }
  const std::string& device(int rank) const override;

  // The collectives of devices::Communicator. In addition to its errors:
  // FAILED_PRECONDITION for a rank that this process does not drive,
  // INVALID_ARGUMENT for a tensor not on the rank's GPU or MEAN on bool,
  // UNAVAILABLE once the communicator was aborted. A rank may not Send to
  // or Recv from itself (INVALID_ARGUMENT).
  absl::Status AllReduce(int rank, const Tensor& input, Tensor& output,
                         const CollectiveOptions& options) override;
  absl::Status AllGather(int rank, const Tensor& input, Tensor& output,
                         const CollectiveOptions& options) override;
  absl::Status ReduceScatter(int rank, const Tensor& input, Tensor& output,
                             const CollectiveOptions& options) override;
  absl::Status Broadcast(int rank, int root, Tensor& tensor,
                         const CollectiveOptions& options) override;
  absl::Status Reduce(int rank, int root, const Tensor& input, Tensor& output,
                      const CollectiveOptions& options) override;
  absl::Status AllToAll(int rank, const Tensor& input, Tensor& output,
                        const CollectiveOptions& options) override;
  absl::Status Send(int rank, int peer, const Tensor& tensor,
                    const CollectiveOptions& options) override;
  absl::Status Recv(int rank, int peer, Tensor& tensor,
                    const CollectiveOptions& options) override;
  // Marks the group aborted; each local rank's thread calls ncclCommAbort
  // on its own communicator when it next polls (a waiting rank within
  // microseconds) or calls, and fails with UNAVAILABLE carrying `reason`.
  absl::Status Abort(absl::Status reason) override;

  // The all-reduce of every local rank from one thread, inside one NCCL
  // group call: inputs[i] and outputs[i] belong to the i-th local rank (all
  // ranks for CreateLocal). Same errors as AllReduce; INVALID_ARGUMENT if
  // the number of tensors is not the number of local ranks. Must not run
  // concurrently with per-rank calls.
  absl::Status AllReduceAll(const std::vector<const Tensor*>& inputs,
                            const std::vector<Tensor*>& outputs,
                            const CollectiveOptions& options);

  // Whether this process drives `rank`.
  bool IsLocal(int rank) const;
  // True once a timeout or an NCCL error has aborted the communicator.
  bool aborted() const;

 private:
  using RankState = internal::NcclRankState;
  using GroupState = internal::NcclGroupState;
  // Makes the NCCL call(s) of one rank's collective; returns an
  // ncclResult_t.
  using Launch = absl::AnyInvocable<int(ncclComm*, cudaStream_t)>;

  NcclCommunicator(std::vector<std::string> device_names,
                   std::vector<std::shared_ptr<RankState>> ranks);

  // The state of local rank `rank`, or the error for a bad or remote rank
  // or an aborted communicator.
  absl::StatusOr<std::shared_ptr<RankState>> Local(
      int rank, absl::string_view collective) const;
  // "NCCL AllReduce on rank 1 of 4 (<device>)".
  std::string Describe(absl::string_view collective, int rank) const;
  // Enqueues `launch` on the rank's device and waits for it.
  absl::Status Run(const std::shared_ptr<RankState>& state,
                   absl::string_view collective, int64_t bytes,
                   const CollectiveOptions& options, Launch launch);
  // Polls the events and the ranks' asynchronous errors until every event
  // is done, an error shows, or `deadline`; aborts on failure.
  absl::Status Await(const std::string& what,
                     const std::vector<std::shared_ptr<RankState>>& states,
                     const std::vector<std::shared_ptr<CudaEvent>>& events,
                     absl::Time deadline, absl::Duration timeout);
  // Marks the group aborted with `reason` (the first reason wins) and
  // aborts the NCCL communicators of `states`.
  void AbortGroup(const absl::Status& reason,
                  const std::vector<std::shared_ptr<RankState>>& states);
  // UNAVAILABLE for `what` on an aborted communicator, with the reason.
  absl::Status AbortedError(absl::string_view what) const;
  // INVALID_ARGUMENT unless `tensor` has data on the rank's GPU.
  absl::Status CheckTensor(const RankState& state, absl::string_view collective,
                           absl::string_view role, const Tensor& tensor) const;

  const std::string name_ = "nccl";
  const std::vector<std::string> device_names_;
  // By rank; null for ranks driven by other processes.
  const std::vector<std::shared_ptr<RankState>> ranks_;
  const std::shared_ptr<GroupState> group_;
};

}  // namespace cuda
}  // namespace devices

#endif  // DEVICES_CUDA_NCCL_COMMUNICATOR_H_
