// All-reduces of tensors in device memory (GPUs), which packing and the
// schedule executor's host-pointer reductions cannot touch: CrossDeviceOps
// reduces them tensor by tensor, and ReductionToOneDevice meets the
// replicas in a Round where the root copies every input to the reduce
// device and reduces them there with that device's kernels
// (Device::kernels()); each replica copies the result back to its device.
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "devices/device.h"
#include "devices/kernel_costs.h"
#include "devices/kernel_library.h"
#include "devices/platform.h"
#include "devices/status_macros.h"
#include "distribute/cross_device_ops.h"
#include "distribute/reduce_op.h"

namespace distribute {

absl::StatusOr<std::vector<devices::Tensor>>
CrossDeviceOps::AllReduceInDeviceMemory(
    int replica, ReduceOp op, const std::vector<devices::Tensor>& values,
    devices::Device& device, absl::Duration timeout) {
  const bool own_memory =
      device.allocator().memory_space() == devices::MemorySpace::kDevice;
  const bool takes_host = PackAcceptsHostMemory();
  std::vector<devices::Tensor> outputs;
  outputs.reserve(values.size());
  for (const devices::Tensor& v : values) {
    devices::Tensor in = TimedAs(device, v);
    // A host tensor on a device with memory of its own: given as it is
    // where AllReducePack takes host memory (its result in host memory
    // too), else copied in and its result copied back.
    const bool host_value = own_memory && in.host_accessible();
    const bool stage = host_value && !takes_host;
    if (stage) {
      ASSIGN_OR_RETURN(devices::Tensor staged,
                       devices::CopyTensorTo(platform(), in, device));
      in = std::move(staged);
    }
    ASSIGN_OR_RETURN(devices::Tensor out,
                     host_value && !stage
                         ? devices::Tensor::Host(v.dtype(), v.shape())
                         : device.Allocate(v.dtype(), v.shape()));
    RETURN_IF_ERROR(AllReducePack(replica, op, in, out, timeout));
    if (stage) {
      ASSIGN_OR_RETURN(out, devices::ToHostTensor(platform(), out));
    }
    outputs.push_back(std::move(out));
  }
  return outputs;
}

absl::StatusOr<devices::Tensor> ReductionToOneDevice::ReduceAtRoot(
    ReduceOp op, const std::vector<devices::Tensor>& inputs) {
  ASSIGN_OR_RETURN(devices::Device * root,
                   outside_ != nullptr
                       ? absl::StatusOr<devices::Device*>(outside_)
                       : platform().FindDevice(replica_devices()[root_]));
  std::vector<devices::Tensor> local;
  local.reserve(inputs.size());
  for (const devices::Tensor& t : inputs) {
    ASSIGN_OR_RETURN(devices::Tensor readable,
                     devices::ReadableOn(platform(), t, *root));
    local.push_back(std::move(readable));
  }
  ASSIGN_OR_RETURN(devices::Tensor result,
                   root->Allocate(inputs[0].dtype(), inputs[0].shape()));
  // Timing-only tensors carry no values: only the cost is charged.
  ASSIGN_OR_RETURN(
      devices::KernelCost cost,
      result.has_data()
          ? root->kernels().ReduceInto(ToDevicesReduceOp(op), local, result)
          : devices::ReduceIntoCost(ToDevicesReduceOp(op), result.dtype(),
                                    result.num_elements(),
                                    static_cast<int64_t>(local.size())));
  // The reduction ran; the device's clock pays for it (a simulated device
  // computes on the host and charges nothing by itself).
  RETURN_IF_ERROR((root)
                      ->Enqueue(cost, [] { return absl::OkStatus(); })
                      ->Wait(absl::InfiniteDuration()));
  return result;
}

absl::Status ReductionToOneDevice::ReduceOnDevice(int replica, ReduceOp op,
                                                  const devices::Tensor& in,
                                                  devices::Tensor& out,
                                                  absl::Duration timeout) {
  const int n = num_replicas();
  if (group_size() != n) {
    return absl::UnimplementedError(absl::StrCat(
        name(),
        " reduces device-memory tensors within one process only; across "
        "workers use CollectiveAllReduce or NCCL"));
  }
  const absl::Time deadline = absl::Now() + timeout;
  std::shared_ptr<Round> round;
  {
    absl::MutexLock lock(&round_mu_);
    if (aborted()) {
      return absl::UnavailableError(
          absl::StrCat(name(), " was aborted: ", abort_reason_.message(),
                       "; no collective runs until it recovers"));
    }
    if (round_ == nullptr) round_ = std::make_shared<Round>(n);
    round = round_;
    absl::MutexLock round_lock(&round->mu);
    round->inputs[replica] = in;
    if (++round->arrived == n) round_ = nullptr;  // The next call starts anew.
  }
  absl::Status status = WaitForRound(*round, replica, op, deadline, timeout);
  if (absl::IsDeadlineExceeded(status)) {
    // A round given up on takes no more values: late replicas start anew
    // (and time out in turn) instead of mixing with this call's values.
    absl::MutexLock lock(&round_mu_);
    if (round_ == round) round_ = nullptr;
  }
  RETURN_IF_ERROR(status);
  devices::Tensor result;
  {
    absl::MutexLock lock(&round->mu);
    result = round->result;
  }
  return devices::CopyTensor(platform(), result, out);
}

namespace {

// Copies `src` into `dst` as the replica holds them: a plain copy where
// both are in host memory (what packing does), else through `device`.
absl::Status PlainCopy(const devices::Tensor& src, devices::Tensor& dst,
                       devices::Device& device) {
  if (!src.has_data() || !dst.has_data()) return absl::OkStatus();
  if (src.host_accessible() && dst.host_accessible()) {
    std::memcpy(dst.raw_data(), src.raw_data(), src.bytes());
    return absl::OkStatus();
  }
  if (dst.host_accessible()) return device.CopyToHost(src, dst.raw_data());
  return device.CopyFromHost(src.raw_data(), dst);
}

}  // namespace

absl::Status ReductionToOneDevice::Meet(int replica, absl::Duration timeout) {
  ASSIGN_OR_RETURN(
      devices::Tensor flag,
      devices::Tensor::Host(devices::DType::kInt32, devices::Shape({1})));
  flag.data<int32_t>()[0] = 1;
  ASSIGN_OR_RETURN(
      devices::Tensor sum,
      devices::Tensor::Host(devices::DType::kInt32, devices::Shape({1})));
  return communicator().AllReduce(replica, flag, sum,
                                  {devices::ReduceOp::kSum, timeout});
}

absl::Status ReductionToOneDevice::ReduceOutside(int replica, ReduceOp op,
                                                 const devices::Tensor& in,
                                                 devices::Tensor& out,
                                                 absl::Duration timeout) {
  const int n = num_replicas();
  if (group_size() != n) {
    return absl::UnimplementedError(absl::StrCat(
        name(), " reduces on ", outside_->name(),
        ", which runs no replica, within one process only; across workers "
        "reduce to a replica's device or use CollectiveAllReduce"));
  }
  ASSIGN_OR_RETURN(
      devices::Device * device,
      platform().FindDevice(replica_devices()[static_cast<size_t>(replica)]));
  // The value leaves from the replica's device (a packed value is in host
  // memory: it is put there first, as the replica holds it).
  ASSIGN_OR_RETURN(devices::Tensor local, devices::AsDeviceValue(in, *device));
  ASSIGN_OR_RETURN(devices::Tensor mine,
                   devices::CopyTensorTo(platform(), local, *outside_));
  {
    absl::MutexLock lock(&outside_mu_);
    staged_.resize(static_cast<size_t>(n));
    staged_[static_cast<size_t>(replica)] = std::move(mine);
  }
  RETURN_IF_ERROR(Meet(replica, timeout));
  absl::Status reduced;
  if (replica == 0) {
    std::vector<devices::Tensor> inputs;
    {
      absl::MutexLock lock(&outside_mu_);
      inputs = staged_;
    }
    absl::StatusOr<devices::Tensor> result = ReduceAtRoot(op, inputs);
    absl::MutexLock lock(&outside_mu_);
    staged_failed_ = !result.ok();
    if (result.ok()) staged_result_ = *std::move(result);
    reduced = result.status();
  }
  RETURN_IF_ERROR(Meet(replica, timeout));
  devices::Tensor result;
  {
    absl::MutexLock lock(&outside_mu_);
    if (staged_failed_) {
      return replica == 0 ? reduced
                          : absl::AbortedError(
                                absl::StrCat(name(), ": the reduction on ",
                                             outside_->name(), " failed"));
    }
    result = staged_result_;
  }
  // Back to the replica's device, then where `out` is.
  ASSIGN_OR_RETURN(devices::Tensor back,
                   devices::CopyTensorTo(platform(), result, *device));
  if (out.device() == device->name() || !out.has_data()) {
    return devices::CopyTensor(platform(), back, out);
  }
  return PlainCopy(back, out, *device);
}

absl::Status ReductionToOneDevice::AbortCollectives(absl::Status reason) {
  std::shared_ptr<Round> round;
  absl::Status s;
  {
    absl::MutexLock lock(&round_mu_);
    // Under round_mu_, so that a reduction starting now either sees the
    // abort or is in the round failed below.
    s = CrossDeviceOps::AbortCollectives(reason);
    abort_reason_ = reason;
    round = std::move(round_);
    round_ = nullptr;
  }
  if (round != nullptr && !reason.ok()) {
    absl::MutexLock lock(&round->mu);
    if (!round->done) {
      round->status = absl::UnavailableError(
          absl::StrCat(name(), " was aborted: ", reason.message()));
      round->done = true;
    }
  }
  return s;
}

absl::Status ReductionToOneDevice::WaitForRound(Round& round, int replica,
                                                ReduceOp op,
                                                absl::Time deadline,
                                                absl::Duration timeout) {
  absl::MutexLock lock(&round.mu);
  if (replica == root_) {
    auto all_arrived = [&round]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(round.mu) {
      return round.done ||
             round.arrived == static_cast<int>(round.inputs.size());
    };
    if (!round.mu.AwaitWithDeadline(absl::Condition(&all_arrived), deadline)) {
      round.status = absl::DeadlineExceededError(absl::StrCat(
          name(), ": replica ", replica, " waited ",
          absl::FormatDuration(timeout),
          " for the other replicas' values; every replica must reduce the "
          "same values"));
    } else if (round.done) {
      return round.status;  // Aborted.
    } else {
      absl::StatusOr<devices::Tensor> result = ReduceAtRoot(op, round.inputs);
      if (result.ok()) {
        round.result = *std::move(result);
      } else {
        round.status = result.status();
      }
    }
    round.done = true;
    return round.status;
  }
  auto done = [&round]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(round.mu) {
    return round.done;
  };
  if (!round.mu.AwaitWithDeadline(absl::Condition(&done), deadline)) {
    round.status = absl::DeadlineExceededError(
        absl::StrCat(name(), ": replica ", replica, " waited ",
                     absl::FormatDuration(timeout), " for the reduction on ",
                     replica_devices()[root_]));
    round.done = true;  // The root, if it comes, fails too.
  }
  return round.status;
}

}  // namespace distribute
