#include "devices/host_device.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "devices/status_macros.h"

namespace devices {

HostDevice::HostDevice(std::string name, int64_t memory_capacity)
    : name_(std::move(name)),
      allocator_(std::make_shared<HostAllocator>(name_, memory_capacity)),
      worker_([this] { WorkerLoop(); }) {}

HostDevice::~HostDevice() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  worker_.join();
}

void HostDevice::WorkerLoop() {
  while (true) {
    Work work;
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || stopping_;
      };
      mu_.Await(absl::Condition(&has_work));
      if (queue_.empty()) return;  // Stopping and drained.
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    absl::Status status = work.fn();
    if (!status.ok()) {
      absl::MutexLock lock(&mu_);
      if (first_error_.ok()) first_error_ = status;
    }
    work.event->Complete(std::move(status));
  }
}

absl::StatusOr<Tensor> HostDevice::Allocate(DType dtype, const Shape& shape) {
  return Tensor::Allocate(allocator_, dtype, shape, name_);
}

std::shared_ptr<Event> HostDevice::Enqueue(
    KernelCost cost, absl::AnyInvocable<absl::Status()> fn) {
  auto event =
      std::make_shared<CompletionEvent>(absl::StrCat(cost.name, " on ", name_));
  absl::MutexLock lock(&mu_);
  queue_.push_back(Work{std::move(fn), event});
  return event;
}

absl::Status HostDevice::Synchronize(absl::Duration timeout) {
  std::shared_ptr<Event> marker =
      Enqueue(KernelCost{"Synchronize", 0, 0}, [] { return absl::OkStatus(); });
  absl::Status waited = marker->Wait(timeout);
  if (!waited.ok()) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "device %s did not finish its queued work within %gs; a kernel may "
        "be blocked (e.g. waiting for a peer) or the timeout is too short",
        name_, absl::ToDoubleSeconds(timeout)));
  }
  absl::MutexLock lock(&mu_);
  return std::exchange(first_error_, absl::OkStatus());
}

absl::Status HostDevice::CheckOwnTensor(const Tensor& tensor,
                                        absl::string_view what) const {
  if (tensor.device() != name_) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " on ", name_, " was given a tensor on '", tensor.device(),
        "'; allocate it with this device's Allocate()"));
  }
  if (!tensor.host_accessible()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " on ", name_, " was given ", tensor.DebugString(),
                     ", which has no data"));
  }
  return absl::OkStatus();
}

absl::Status HostDevice::RunCopy(absl::string_view what, int64_t bytes,
                                 absl::AnyInvocable<absl::Status()> copy) {
  // If the wait times out the caller may free its host buffer, so the queued
  // copy must then never run: it checks `abandoned` under the guard's lock,
  // and the caller sets it under the same lock (waiting out a copy already
  // running).
  struct Guard {
    absl::Mutex mu;
    bool abandoned ABSL_GUARDED_BY(mu) = false;
  };
  auto guard = std::make_shared<Guard>();
  KernelCost cost = MemcpyCost(bytes);
  cost.name = std::string(what);
  std::shared_ptr<Event> done =
      Enqueue(std::move(cost), [guard, copy = std::move(copy)]() mutable {
        absl::MutexLock lock(&guard->mu);
        if (guard->abandoned) {
          return absl::CancelledError(
              "copy abandoned after its caller timed out");
        }
        return copy();
      });
  absl::Status status = done->Wait(kCopyTimeout);
  if (absl::IsDeadlineExceeded(status) && !done->IsReady()) {
    absl::MutexLock lock(&guard->mu);
    guard->abandoned = true;
  }
  return status;
}

absl::Status HostDevice::CopyFromHost(const void* src, Tensor& dst) {
  RETURN_IF_ERROR(CheckOwnTensor(dst, "CopyFromHost"));
  if (src == nullptr && dst.bytes() > 0) {
    return absl::InvalidArgumentError("CopyFromHost got a null source");
  }
  void* out = dst.raw_data();
  const size_t bytes = dst.bytes();
  return RunCopy("CopyFromHost", static_cast<int64_t>(bytes), [=] {
    if (bytes > 0) std::memcpy(out, src, bytes);
    return absl::OkStatus();
  });
}

absl::Status HostDevice::CopyToHost(const Tensor& src, void* dst) {
  RETURN_IF_ERROR(CheckOwnTensor(src, "CopyToHost"));
  if (dst == nullptr && src.bytes() > 0) {
    return absl::InvalidArgumentError("CopyToHost got a null destination");
  }
  const void* in = src.raw_data();
  const size_t bytes = src.bytes();
  return RunCopy("CopyToHost", static_cast<int64_t>(bytes), [=] {
    if (bytes > 0) std::memcpy(dst, in, bytes);
    return absl::OkStatus();
  });
}

absl::Status HostDevice::CopyToDevice(const Tensor& src, Tensor& dst) {
  RETURN_IF_ERROR(CheckOwnTensor(src, "CopyToDevice"));
  if (!src.SameShapeAndType(dst)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CopyToDevice from ", src.DebugString(), " to ",
                     dst.DebugString(), ": shapes and dtypes must match"));
  }
  if (!dst.host_accessible()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "CopyToDevice on ", name_, " cannot write ", dst.DebugString(),
        ": it has no host data; copy with the destination device's "
        "CopyFromHost instead"));
  }
  const void* in = src.raw_data();
  void* out = dst.raw_data();
  const size_t bytes = src.bytes();
  return RunCopy("CopyToDevice", static_cast<int64_t>(bytes), [=] {
    if (bytes > 0) std::memcpy(out, in, bytes);
    return absl::OkStatus();
  });
}

}  // namespace devices
