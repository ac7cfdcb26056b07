// The collectives of NcclCommunicator: argument checks, then one NCCL call
// (or a group of them) made on the rank's device through Run().
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/cuda/cuda_ops_util.h"
#include "devices/cuda/cuda_status.h"
#include "devices/cuda/nccl_communicator.h"
#include "devices/cuda/nccl_state.h"
#include "devices/status_macros.h"

namespace devices {
namespace cuda {
namespace {

using internal::AbortRank;
using internal::AwaitEnqueued;
using internal::NcclStatus;

absl::Status CheckSameDtype(absl::string_view what, const Tensor& a,
                            const Tensor& b) {
  if (a.dtype() != b.dtype()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": input is ", DTypeName(a.dtype()),
                     " but output is ", DTypeName(b.dtype())));
  }
  return absl::OkStatus();
}

absl::Status CheckElements(absl::string_view what, absl::string_view role,
                           const Tensor& tensor, int64_t expected) {
  if (tensor.num_elements() != expected) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", role, " ", tensor.DebugString(), " has ",
        tensor.num_elements(), " elements but must have ", expected));
  }
  return absl::OkStatus();
}

absl::Status CheckReducible(absl::string_view what, DType dtype, ReduceOp op) {
  if (NcclRedOpOf(DTypeCode(dtype), ReduceOpCode(op)) < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", ReduceOpName(op), " is not defined for ", DTypeName(dtype),
        " (bool reduces with sum or max = or, prod or min = and)"));
  }
  return absl::OkStatus();
}

absl::Status CheckNoAliasing(absl::string_view what, const Tensor& input,
                             const Tensor& output) {
  if (input.num_elements() > 0 && input.raw_data() == output.raw_data()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": input and output share a buffer; use separate tensors"));
  }
  return absl::OkStatus();
}

size_t Count(const Tensor& tensor) {
  return static_cast<size_t>(tensor.num_elements());
}

}  // namespace

absl::Status NcclCommunicator::AllReduce(int rank, const Tensor& input,
                                         Tensor& output,
                                         const CollectiveOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<RankState> state, Local(rank, "AllReduce"));
  const std::string what = Describe("AllReduce", rank);
  absl::Status s = CheckTensor(*state, "AllReduce", "input", input);
  if (s.ok()) s = CheckTensor(*state, "AllReduce", "output", output);
  if (s.ok()) s = CheckSameDtype(what, input, output);
  if (s.ok()) s = CheckElements(what, "output", output, input.num_elements());
  if (s.ok()) s = CheckReducible(what, input.dtype(), options.op);
  RETURN_IF_ERROR(s);
  if (input.num_elements() == 0) return absl::OkStatus();
  const int dtype = DTypeCode(input.dtype());
  const int op = ReduceOpCode(options.op);
  return Run(state, "AllReduce", static_cast<int64_t>(input.bytes()), options,
             [input, output, dtype, op](ncclComm* comm, cudaStream_t stream) {
               return NcclAllReduce(input.raw_data(), output.raw_data(),
                                    Count(input), dtype, op, comm, stream);
             });
}

absl::Status NcclCommunicator::AllGather(int rank, const Tensor& input,
                                         Tensor& output,
                                         const CollectiveOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<RankState> state, Local(rank, "AllGather"));
  const std::string what = Describe("AllGather", rank);
  absl::Status s = CheckTensor(*state, "AllGather", "input", input);
  if (s.ok()) s = CheckTensor(*state, "AllGather", "output", output);
  if (s.ok()) s = CheckSameDtype(what, input, output);
  if (s.ok()) {
    s = CheckElements(what, "output", output, size() * input.num_elements());
  }
  if (s.ok()) s = CheckNoAliasing(what, input, output);
  RETURN_IF_ERROR(s);
  if (input.num_elements() == 0) return absl::OkStatus();
  const int dtype = DTypeCode(input.dtype());
  return Run(state, "AllGather", static_cast<int64_t>(output.bytes()), options,
             [input, output, dtype](ncclComm* comm, cudaStream_t stream) {
               return NcclAllGather(input.raw_data(), output.raw_data(),
                                    Count(input), dtype, comm, stream);
             });
}

absl::Status NcclCommunicator::ReduceScatter(int rank, const Tensor& input,
                                             Tensor& output,
                                             const CollectiveOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<RankState> state,
                   Local(rank, "ReduceScatter"));
  const std::string what = Describe("ReduceScatter", rank);
  absl::Status s = CheckTensor(*state, "ReduceScatter", "input", input);
  if (s.ok()) s = CheckTensor(*state, "ReduceScatter", "output", output);
  if (s.ok()) s = CheckSameDtype(what, input, output);
  if (s.ok()) {
    s = CheckElements(what, "input", input, size() * output.num_elements());
  }
  if (s.ok()) s = CheckNoAliasing(what, input, output);
  if (s.ok()) s = CheckReducible(what, input.dtype(), options.op);
  RETURN_IF_ERROR(s);
  if (output.num_elements() == 0) return absl::OkStatus();
  const int dtype = DTypeCode(input.dtype());
  const int op = ReduceOpCode(options.op);
  return Run(state, "ReduceScatter", static_cast<int64_t>(input.bytes()),
             options,
             [input, output, dtype, op](ncclComm* comm, cudaStream_t stream) {
               return NcclReduceScatter(input.raw_data(), output.raw_data(),
                                        Count(output), dtype, op, comm, stream);
             });
}

absl::Status NcclCommunicator::Broadcast(int rank, int root, Tensor& tensor,
                                         const CollectiveOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<RankState> state, Local(rank, "Broadcast"));
  if (root < 0 || root >= size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe("Broadcast", rank), ": root ", root,
                     " is outside the group of ", size(), " ranks"));
  }
  RETURN_IF_ERROR(CheckTensor(*state, "Broadcast", "tensor", tensor));
  if (tensor.num_elements() == 0) return absl::OkStatus();
  const int dtype = DTypeCode(tensor.dtype());
  return Run(state, "Broadcast", static_cast<int64_t>(tensor.bytes()), options,
             [tensor, dtype, root](ncclComm* comm, cudaStream_t stream) {
               return NcclBroadcast(tensor.raw_data(), tensor.raw_data(),
                                    Count(tensor), dtype, root, comm, stream);
             });
}

absl::Status NcclCommunicator::Reduce(int rank, int root, const Tensor& input,
                                      Tensor& output,
                                      const CollectiveOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<RankState> state, Local(rank, "Reduce"));
  const std::string what = Describe("Reduce", rank);
  if (root < 0 || root >= size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": root ", root, " is outside the group of ", size(), " ranks"));
  }
  absl::Status s = CheckTensor(*state, "Reduce", "input", input);
  if (s.ok() && rank == root) {
    s = CheckTensor(*state, "Reduce", "output", output);
    if (s.ok()) s = CheckSameDtype(what, input, output);
    if (s.ok()) s = CheckElements(what, "output", output, input.num_elements());
  }
  if (s.ok()) s = CheckReducible(what, input.dtype(), options.op);
  RETURN_IF_ERROR(s);
  if (input.num_elements() == 0) return absl::OkStatus();
  const int dtype = DTypeCode(input.dtype());
  const int op = ReduceOpCode(options.op);
  // Only the root writes its output; the others pass their input, which
  // NCCL does not touch as a receive buffer there.
  Tensor destination = rank == root ? output : input;
  return Run(state, "Reduce", static_cast<int64_t>(input.bytes()), options,
             [input, destination, dtype, op, root](ncclComm* comm,
                                                   cudaStream_t stream) {
               return NcclReduce(input.raw_data(), destination.raw_data(),
                                 Count(input), dtype, op, root, comm, stream);
             });
}

absl::Status NcclCommunicator::AllToAll(int rank, const Tensor& input,
                                        Tensor& output,
                                        const CollectiveOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<RankState> state, Local(rank, "AllToAll"));
  const std::string what = Describe("AllToAll", rank);
  absl::Status s = CheckTensor(*state, "AllToAll", "input", input);
  if (s.ok()) s = CheckTensor(*state, "AllToAll", "output", output);
  if (s.ok()) s = CheckSameDtype(what, input, output);
  if (s.ok() && input.num_elements() % size() != 0) {
    s = absl::InvalidArgumentError(
        absl::StrCat(what, ": the input's ", input.num_elements(),
                     " elements do not split into ", size(), " equal blocks"));
  }
  if (s.ok()) s = CheckElements(what, "output", output, input.num_elements());
  if (s.ok()) s = CheckNoAliasing(what, input, output);
  RETURN_IF_ERROR(s);
  if (input.num_elements() == 0) return absl::OkStatus();
  const int dtype = DTypeCode(input.dtype());
  const int ranks = size();
  const size_t block = Count(input) / static_cast<size_t>(ranks);
  const size_t block_bytes = block * DTypeSize(input.dtype());
  return Run(
      state, "AllToAll", static_cast<int64_t>(input.bytes()), options,
      [input, output, dtype, ranks, block, block_bytes](ncclComm* comm,
                                                        cudaStream_t stream) {
        const char* in = static_cast<const char*>(input.raw_data());
        char* out = static_cast<char*>(output.raw_data());
        int result = NcclGroupStart();
        for (int peer = 0; peer < ranks && result == kNcclSuccess; ++peer) {
          const size_t offset = static_cast<size_t>(peer) * block_bytes;
          result = NcclSend(in + offset, block, dtype, peer, comm, stream);
          if (result == kNcclSuccess) {
            result = NcclRecv(out + offset, block, dtype, peer, comm, stream);
          }
        }
        const int ended = NcclGroupEnd();
        return result != kNcclSuccess ? result : ended;
      });
}

absl::Status NcclCommunicator::Send(int rank, int peer, const Tensor& tensor,
                                    const CollectiveOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<RankState> state, Local(rank, "Send"));
  if (peer < 0 || peer >= size() || peer == rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe("Send", rank), ": peer ", peer,
                     " must be another rank of the group [0, ", size(), ")"));
  }
  RETURN_IF_ERROR(CheckTensor(*state, "Send", "tensor", tensor));
  if (tensor.num_elements() == 0) return absl::OkStatus();
  const int dtype = DTypeCode(tensor.dtype());
  return Run(state, "Send", static_cast<int64_t>(tensor.bytes()), options,
             [tensor, dtype, peer](ncclComm* comm, cudaStream_t stream) {
               return NcclSend(tensor.raw_data(), Count(tensor), dtype, peer,
                               comm, stream);
             });
}

absl::Status NcclCommunicator::Recv(int rank, int peer, Tensor& tensor,
                                    const CollectiveOptions& options) {
  ASSIGN_OR_RETURN(std::shared_ptr<RankState> state, Local(rank, "Recv"));
  if (peer < 0 || peer >= size() || peer == rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe("Recv", rank), ": peer ", peer,
                     " must be another rank of the group [0, ", size(), ")"));
  }
  RETURN_IF_ERROR(CheckTensor(*state, "Recv", "tensor", tensor));
  if (tensor.num_elements() == 0) return absl::OkStatus();
  const int dtype = DTypeCode(tensor.dtype());
  return Run(state, "Recv", static_cast<int64_t>(tensor.bytes()), options,
             [tensor, dtype, peer](ncclComm* comm, cudaStream_t stream) {
               return NcclRecv(tensor.raw_data(), Count(tensor), dtype, peer,
                               comm, stream);
             });
}

absl::Status NcclCommunicator::AllReduceAll(
    const std::vector<const Tensor*>& inputs,
    const std::vector<Tensor*>& outputs, const CollectiveOptions& options) {
  std::vector<std::shared_ptr<RankState>> states;
  for (const auto& state : ranks_) {
    if (state != nullptr) states.push_back(state);
  }
  if (inputs.size() != states.size() || outputs.size() != states.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "NCCL AllReduceAll takes one input and one output per local rank (",
        states.size(), "), got ", inputs.size(), " inputs and ", outputs.size(),
        " outputs"));
  }
  const std::string what = absl::StrCat(
      "NCCL AllReduceAll over the ", states.size(), " local ranks of ", size());
  if (group_->aborted.load()) {
    for (const auto& state : states) AbortRank(*state);
    return AbortedError(what);
  }
  for (size_t i = 0; i < states.size(); ++i) {
    if (inputs[i] == nullptr || outputs[i] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": tensor ", i, " is null"));
    }
    const Tensor& in = *inputs[i];
    const Tensor& out = *outputs[i];
    absl::Status s = CheckTensor(*states[i], "AllReduceAll", "input", in);
    if (s.ok()) s = CheckTensor(*states[i], "AllReduceAll", "output", out);
    if (s.ok()) s = CheckSameDtype(what, in, out);
    if (s.ok()) s = CheckSameDtype(what, *inputs[0], in);
    if (s.ok()) s = CheckElements(what, "output", out, in.num_elements());
    if (s.ok()) {
      s = CheckElements(what, "input", in, inputs[0]->num_elements());
    }
    RETURN_IF_ERROR(s);
  }
  RETURN_IF_ERROR(CheckReducible(what, inputs[0]->dtype(), options.op));
  const size_t count = Count(*inputs[0]);
  if (count == 0) return absl::OkStatus();
  const absl::Time deadline = absl::Now() + options.timeout;

  // Order the group after the work already queued on every device: wait
  // until each device's queue has reached a marker.
  std::vector<std::shared_ptr<CudaEvent>> markers;
  for (const auto& state : states) {
    markers.push_back(state->device->EnqueueCuda(
        KernelCost{"NcclGroupMarker", 0, 0}, [] { return absl::OkStatus(); }));
  }
  for (size_t i = 0; i < markers.size(); ++i) {
    if (!markers[i]->WaitLaunched(deadline)) {
      return absl::DeadlineExceededError(absl::StrCat(
          what, ": the work queued before it on ", states[i]->device->name(),
          " did not finish launching in time; nothing was started"));
    }
  }
  const int dtype = DTypeCode(inputs[0]->dtype());
  const int op = ReduceOpCode(options.op);
  std::vector<std::shared_ptr<CudaEvent>> events;
  absl::Status launched;
  {
    for (const auto& state : states) state->mu.Lock();
    int result = NcclGroupStart();
    for (size_t i = 0; i < states.size() && result == kNcclSuccess; ++i) {
      result = NcclAllReduce(inputs[i]->raw_data(), outputs[i]->raw_data(),
                             count, dtype, op, states[i]->comm,
                             states[i]->device->stream());
    }
    const int ended = NcclGroupEnd();
    if (result == kNcclSuccess) result = ended;
    // Non-blocking communicators may still be enqueueing (kNcclInProgress):
    // wait for each of them.
    for (const auto& state : states) {
      // This thread is the one waiting, so it watches the group's abort.
      launched =
          AwaitEnqueued(*state, result, what, deadline, &group_->aborted);
      if (!launched.ok()) break;
    }
    // An event after each rank's part, on its own device.
    for (size_t i = 0; i < states.size() && launched.ok(); ++i) {
      ScopedCudaDevice on_device(states[i]->device->ordinal());
      cudaEvent_t recorded = nullptr;
      launched = on_device.status();
      if (launched.ok()) {
        launched = CudaStatus(
            cudaEventCreateWithFlags(&recorded, cudaEventDisableTiming),
            "cudaEventCreateWithFlags");
      }
      if (launched.ok()) {
        launched =
            CudaStatus(cudaEventRecord(recorded, states[i]->device->stream()),
                       "cudaEventRecord");
        if (!launched.ok()) cudaEventDestroy(recorded);
      }
      if (launched.ok()) {
        auto event = std::make_shared<CudaEvent>(
            absl::StrCat(what, " on ", states[i]->device->name()));
        event->MarkLaunched(absl::OkStatus(), recorded);
        events.push_back(std::move(event));
      }
    }
    for (const auto& state : states) state->mu.Unlock();
  }
  if (!launched.ok()) {
    AbortGroup(launched, states);
    return launched;
  }
  return Await(what, states, events, deadline, options.timeout);
}

}  // namespace cuda
}  // namespace devices
