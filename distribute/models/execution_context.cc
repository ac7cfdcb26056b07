#include "distribute/models/execution_context.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace distribute {
namespace models {

absl::StatusOr<devices::Tensor> ExecutionContext::NewTensor(
    devices::DType dtype, devices::Shape shape) const {
  const devices::MemorySpace space = kernels().memory_space();
  if (allocator == nullptr) {
    if (timing_only) {
      return devices::Tensor::ShapeOnly(dtype, std::move(shape), device);
    }
    if (space != devices::MemorySpace::kHost) {
      return compute_device->Allocate(dtype, shape);
    }
    return devices::Tensor::Host(dtype, std::move(shape));
  }
  if (!timing_only && allocator->memory_space() != space) {
    return absl::FailedPreconditionError(
        absl::StrCat("the execution context's allocator \"", allocator->name(),
                     "\" does not hand out the memory that its kernels (\"",
                     kernels().name(),
                     "\") compute in; use an allocator of that memory or set "
                     "timing_only"));
  }
  return devices::Tensor::Allocate(allocator, dtype, std::move(shape), device);
}

std::function<void(const devices::KernelCost&)> CostRecorder::Sink() {
  return [this](const devices::KernelCost& cost) { Record(cost); };
}

ExecutionContext CostRecorder::Context(bool timing_only) {
  ExecutionContext ctx;
  ctx.timing_only = timing_only;
  ctx.cost_sink = Sink();
  return ctx;
}

void CostRecorder::Record(const devices::KernelCost& cost) {
  absl::MutexLock lock(&mu_);
  costs_.push_back(cost);
  total_flops_ += cost.flops;
  total_bytes_ += cost.bytes;
}

int64_t CostRecorder::count() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(costs_.size());
}

double CostRecorder::total_flops() const {
  absl::MutexLock lock(&mu_);
  return total_flops_;
}

double CostRecorder::total_bytes() const {
  absl::MutexLock lock(&mu_);
  return total_bytes_;
}

std::vector<devices::KernelCost> CostRecorder::costs() const {
  absl::MutexLock lock(&mu_);
  return costs_;
}

int64_t CostRecorder::CountOf(const std::string& name) const {
  absl::MutexLock lock(&mu_);
  int64_t n = 0;
  for (const devices::KernelCost& cost : costs_) {
    if (cost.name == name) ++n;
  }
  return n;
}

void CostRecorder::Clear() {
  absl::MutexLock lock(&mu_);
  costs_.clear();
  total_flops_ = 0;
  total_bytes_ = 0;
}

}  // namespace models
}  // namespace distribute
