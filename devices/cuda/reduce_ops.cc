#include "devices/cuda/reduce_ops.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devices/cuda/cuda_kernels.h"
#include "devices/cuda/cuda_ops_util.h"
#include "devices/cuda/cuda_status.h"
#include "devices/status_macros.h"

namespace devices {
namespace cuda {
namespace {

absl::Status CheckBuffers(absl::string_view kernel, const void* a,
                          const void* b, int64_t count) {
  if (count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kernel, ": count must be >= 0, not ", count));
  }
  if (count > 0 && (a == nullptr || b == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kernel, ": null buffer for ", count, " elements"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<KernelCost> Accumulate(CudaDevice& device, ReduceOp op,
                                      const void* src, void* dst, int64_t count,
                                      DType dtype) {
  RETURN_IF_ERROR(CheckBuffers("Accumulate", src, dst, count));
  if (dtype == DType::kBool && op == ReduceOp::kMean) {
    return absl::InvalidArgumentError(
        "Accumulate: MEAN is not defined for bool; use SUM (logical or) or "
        "PROD (logical and)");
  }
  ScopedCudaDevice on_device(device.ordinal());
  RETURN_IF_ERROR(on_device.status());
  RETURN_IF_ERROR(
      LaunchStatus(LaunchAccumulate(ReduceOpCode(op), DTypeCode(dtype), src,
                                    dst, count, device.stream()),
                   "Accumulate", device));
  return AccumulateCost(dtype, count);
}

absl::StatusOr<KernelCost> FinalizeMean(CudaDevice& device, void* data,
                                        int64_t count, DType dtype,
                                        int64_t divisor) {
  RETURN_IF_ERROR(CheckBuffers("FinalizeMean", data, data, count));
  if (divisor < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FinalizeMean: divisor must be >= 1 (the number of contributions), "
        "not ",
        divisor));
  }
  if (dtype == DType::kBool) {
    return absl::InvalidArgumentError(
        "FinalizeMean: MEAN is not defined for bool");
  }
  ScopedCudaDevice on_device(device.ordinal());
  RETURN_IF_ERROR(on_device.status());
  RETURN_IF_ERROR(LaunchStatus(LaunchFinalizeMean(DTypeCode(dtype), data, count,
                                                  divisor, device.stream()),
                               "FinalizeMean", device));
  return FinalizeMeanCost(dtype, count);
}

absl::StatusOr<KernelCost> ReduceInto(CudaDevice& device, ReduceOp op,
                                      absl::Span<const Tensor> inputs,
                                      Tensor& out) {
  if (inputs.empty()) {
    return absl::InvalidArgumentError("ReduceInto needs at least one input");
  }
  absl::Status valid = CheckOnDevice(device, "ReduceInto", "output", out);
  RETURN_IF_ERROR(valid);
  if (op == ReduceOp::kMean && out.dtype() == DType::kBool) {
    return absl::InvalidArgumentError(
        "ReduceInto: MEAN is not defined for bool");
  }
  // If out aliases an input, start from that input so it is read before it
  // is overwritten (every ReduceOp is commutative).
  size_t first = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string role = absl::StrCat("input ", i);
    valid = CheckShapeAndType("ReduceInto", role, inputs[i], out.dtype(),
                              out.shape());
    if (valid.ok())
      valid = CheckOnDevice(device, "ReduceInto", role, inputs[i]);
    RETURN_IF_ERROR(valid);
    if (inputs[i].raw_data() == out.raw_data()) first = i;
  }
  ScopedCudaDevice on_device(device.ordinal());
  RETURN_IF_ERROR(on_device.status());
  const int64_t count = out.num_elements();
  // inputs[first], then the others in order: one pass over memory for up to
  // kMaxReduceInputs of them, each further pass folding up to
  // kMaxReduceInputs - 1 more into `out`.
  std::vector<const void*> order = {inputs[first].raw_data()};
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i != first) order.push_back(inputs[i].raw_data());
  }
  size_t next = 0;
  while (next < order.size()) {
    ReduceInputs pass{};
    if (next > 0) pass.data[pass.count++] = out.raw_data();
    while (pass.count < kMaxReduceInputs && next < order.size()) {
      pass.data[pass.count++] = order[next++];
    }
    const bool last = next == order.size();
    const int64_t divisor =
        last && op == ReduceOp::kMean ? static_cast<int64_t>(inputs.size()) : 0;
    RETURN_IF_ERROR(LaunchStatus(
        LaunchReduceInputs(ReduceOpCode(op), DTypeCode(out.dtype()), pass,
                           out.raw_data(), count, divisor, device.stream()),
        "ReduceInto", device));
  }
  return ReduceIntoCost(op, out.dtype(), count,
                        static_cast<int64_t>(inputs.size()));
}

}  // namespace cuda
}  // namespace devices
