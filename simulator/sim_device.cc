// A simulated device; see sim_device.h.
#include "simulator/sim_device.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "devices/status_macros.h"

namespace simulator {
namespace {

devices::DeviceKind KindOf(DeviceDef::Kind kind) {
  switch (kind) {
    case DeviceDef::GPU:
      return devices::DeviceKind::kGPU;
    case DeviceDef::TPU_CORE:
      return devices::DeviceKind::kTPU;
    default:
      return devices::DeviceKind::kCPU;
  }
}

std::shared_ptr<devices::Allocator> MakeAllocator(const std::string& name,
                                                  int64_t capacity,
                                                  bool functional) {
  if (functional) {
    return std::make_shared<devices::HostAllocator>(name, capacity);
  }
  return std::make_shared<devices::AccountingAllocator>(name, capacity);
}

}  // namespace

SimDevice::SimDevice(std::shared_ptr<SimContext> context, int index)
    : context_(std::move(context)),
      index_(index),
      name_(context_->device_name(index)),
      kind_(KindOf(context_->topology().device(index).kind)),
      allocator_(MakeAllocator(
          name_,
          context_->topology().device(index).spec.memory_capacity_bytes(),
          context_->functional())) {}

absl::StatusOr<devices::Tensor> SimDevice::Allocate(
    devices::DType dtype, const devices::Shape& shape) {
  return devices::Tensor::Allocate(allocator_, dtype, shape, name_);
}

absl::Status SimDevice::RunKernel(const std::string& kernel, double flops,
                                  double bytes) {
  const std::string what = absl::StrCat(kernel, " on ", name_);
  SimActor actor(*context_, what);
  SimContext* context = context_.get();
  const int index = index_;
  ParkOutcome outcome = actor.Park(
      what,
      [context, index, kernel, flops, bytes](ActorWakeup wake) {
        absl::Status launched = context->simulation().LaunchKernel(
            index, kernel, flops, bytes,
            [wake](absl::Status status) { wake(std::move(status)); });
        if (!launched.ok()) wake(std::move(launched));
      },
      context_->wall_timeout());
  return ParkStatus(outcome, what);
}

absl::Status SimDevice::RunCopy(const std::string& what, int src, int dst,
                                int64_t bytes) {
  if (src < 0 || dst < 0 || src == dst) {
    // Within one memory: read and write every byte.
    const devices::KernelCost memcpy = devices::MemcpyCost(bytes);
    return RunKernel(what, memcpy.flops, memcpy.bytes);
  }
  absl::StatusOr<std::vector<int>> route = context_->Route(src, dst);
  RETURN_IF_ERROR(route.status());
  const std::string description = absl::StrCat(
      what, " of ", bytes, " bytes from ", context_->device_name(src), " to ",
      context_->device_name(dst));
  SimActor actor(*context_, description);
  SimContext* context = context_.get();
  ParkOutcome outcome = actor.Park(
      description,
      [context, src, dst, bytes, what,
       route = *std::move(route)](ActorWakeup wake) {
        absl::Status started = context->simulation().StartTransfer(
            src, dst, route, bytes, what,
            [wake](absl::Status status) { wake(std::move(status)); });
        if (!started.ok()) wake(std::move(started));
      },
      context_->wall_timeout());
  absl::Status status = ParkStatus(outcome, description);
  if (!status.ok() && outcome.reason == WakeReason::kCompleted) {
    return absl::Status(
        status.code(),
        absl::StrCat(description, " failed: ", status.message()));
  }
  return status;
}

void SimDevice::FinishWork(const absl::Status& status) {
  std::vector<ActorWakeup> waiters;
  {
    absl::MutexLock lock(&mu_);
    if (!status.ok() && first_error_.ok()) first_error_ = status;
    if (--in_flight_ == 0) waiters.swap(synchronize_waiters_);
  }
  for (const ActorWakeup& wake : waiters) wake();
}

std::shared_ptr<devices::Event> SimDevice::Enqueue(
    devices::KernelCost cost, absl::AnyInvocable<absl::Status()> fn) {
  auto event = std::make_shared<devices::CompletionEvent>(
      absl::StrCat(cost.name, " on ", name_));
  {
    absl::MutexLock lock(&mu_);
    ++in_flight_;
  }
  absl::Status status = RunKernel(cost.name, cost.flops, cost.bytes);
  if (status.ok() && functional() && fn) status = fn();
  fn = nullptr;
  FinishWork(status);
  event->Complete(std::move(status));
  return event;
}

absl::Status SimDevice::Synchronize(absl::Duration timeout) {
  bool idle = false;
  {
    absl::MutexLock lock(&mu_);
    idle = in_flight_ == 0;
  }
  if (!idle) {
    const std::string what = absl::StrCat("Synchronize of ", name_);
    SimActor actor(*context_, what);
    ParkOutcome outcome = actor.Park(
        what,
        [this](ActorWakeup wake) {
          {
            absl::MutexLock lock(&mu_);
            if (in_flight_ > 0) {
              synchronize_waiters_.push_back(wake);
              return;
            }
          }
          wake();
        },
        timeout);
    if (outcome.reason != WakeReason::kCompleted) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "device %s did not finish its queued work within %gs: %s", name_,
          absl::ToDoubleSeconds(timeout), outcome.status.message()));
    }
  }
  absl::MutexLock lock(&mu_);
  return std::exchange(first_error_, absl::OkStatus());
}

absl::Status SimDevice::CheckOwnTensor(const devices::Tensor& tensor,
                                       absl::string_view what) const {
  if (tensor.device() != name_) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " on ", name_, " was given a tensor on '", tensor.device(),
        "'; allocate it with this device's Allocate()"));
  }
  if (functional() && !tensor.host_accessible()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " on ", name_, " was given ", tensor.DebugString(),
                     ", which has no data"));
  }
  return absl::OkStatus();
}

absl::Status SimDevice::CopyFromHost(const void* src, devices::Tensor& dst) {
  RETURN_IF_ERROR(CheckOwnTensor(dst, "CopyFromHost"));
  const size_t bytes = dst.bytes();
  if (functional() && src == nullptr && bytes > 0) {
    return absl::InvalidArgumentError("CopyFromHost got a null source");
  }
  absl::Status copied = RunCopy("CopyFromHost", context_->HostCpu(index_),
                                index_, static_cast<int64_t>(bytes));
  if (copied.ok() && functional() && bytes > 0) {
    std::memcpy(dst.raw_data(), src, bytes);
  }
  return copied;
}

absl::Status SimDevice::CopyToHost(const devices::Tensor& src, void* dst) {
  RETURN_IF_ERROR(CheckOwnTensor(src, "CopyToHost"));
  const size_t bytes = src.bytes();
  if (functional() && dst == nullptr && bytes > 0) {
    return absl::InvalidArgumentError("CopyToHost got a null destination");
  }
  absl::Status copied = RunCopy("CopyToHost", index_, context_->HostCpu(index_),
                                static_cast<int64_t>(bytes));
  if (copied.ok() && functional() && bytes > 0) {
    std::memcpy(dst, src.raw_data(), bytes);
  }
  return copied;
}

absl::Status SimDevice::CopyToDevice(const devices::Tensor& src,
                                     devices::Tensor& dst) {
  RETURN_IF_ERROR(CheckOwnTensor(src, "CopyToDevice"));
  if (!src.SameShapeAndType(dst)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CopyToDevice from ", src.DebugString(), " to ",
                     dst.DebugString(), ": shapes and dtypes must match"));
  }
  const int target = context_->FindDevice(dst.device());
  if (target < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CopyToDevice from ", name_, " to ", dst.DebugString(),
        ": the destination is not a device of platform ",
        context_->platform_name(), "; copy through the host instead"));
  }
  if (functional() && !dst.host_accessible()) {
    return absl::FailedPreconditionError(
        absl::StrCat("CopyToDevice on ", name_, " cannot write ",
                     dst.DebugString(), ", which has no data"));
  }
  const size_t bytes = src.bytes();
  absl::Status copied =
      RunCopy("CopyToDevice", index_, target, static_cast<int64_t>(bytes));
  if (copied.ok() && functional() && bytes > 0) {
    std::memcpy(dst.raw_data(), src.raw_data(), bytes);
  }
  return copied;
}

std::unique_ptr<devices::ThreadBinding> SimDevice::BindThread() {
  const uint64_t binding = bindings_.fetch_add(1);
  const ActorId actor = (static_cast<ActorId>(index_) << 32) + binding;
  return SimThreadBinding::Bind(
      context_, actor,
      absl::StrCat("thread bound to ", name_, " (binding ", binding, ")"));
}

}  // namespace simulator
