#include "devices/cuda/cuda_ops_util.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "devices/cuda/cuda_status.h"
#include "devices/cuda/kernel_math.h"
#include "devices/status_macros.h"

namespace devices {
namespace cuda {

// The raw interface passes DType and ReduceOp values as ints.
static_assert(static_cast<int>(DType::kFloat32) == math::kFloat32);
static_assert(static_cast<int>(DType::kFloat64) == math::kFloat64);
static_assert(static_cast<int>(DType::kFloat16) == math::kFloat16);
static_assert(static_cast<int>(DType::kBFloat16) == math::kBFloat16);
static_assert(static_cast<int>(DType::kInt32) == math::kInt32);
static_assert(static_cast<int>(DType::kInt64) == math::kInt64);
static_assert(static_cast<int>(DType::kUInt8) == math::kUInt8);
static_assert(static_cast<int>(DType::kBool) == math::kBool);
static_assert(static_cast<int>(ReduceOp::kSum) == math::kSum);
static_assert(static_cast<int>(ReduceOp::kMean) == math::kMean);
static_assert(static_cast<int>(ReduceOp::kMin) == math::kMin);
static_assert(static_cast<int>(ReduceOp::kMax) == math::kMax);
static_assert(static_cast<int>(ReduceOp::kProd) == math::kProd);
static_assert(sizeof(math::HalfBits) == sizeof(Float16));
static_assert(sizeof(math::BFloatBits) == sizeof(BFloat16));

int DTypeCode(DType dtype) { return static_cast<int>(dtype); }
int ReduceOpCode(ReduceOp op) { return static_cast<int>(op); }

absl::Status CheckOnDevice(const CudaDevice& device, absl::string_view kernel,
                           absl::string_view role, const Tensor& tensor) {
  if (tensor.device() != device.name()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kernel, " on ", device.name(), ": ", role, " ", tensor.DebugString(),
        " is not on this GPU; copy it here first (CopyToDevice or "
        "CopyFromHost)"));
  }
  if (!tensor.has_data()) {
    return absl::FailedPreconditionError(absl::StrCat(
        kernel, ": ", role, " ", tensor.DebugString(), " has no data"));
  }
  return absl::OkStatus();
}

absl::Status CheckShapeAndType(absl::string_view kernel, absl::string_view role,
                               const Tensor& tensor, DType dtype,
                               const Shape& shape) {
  if (tensor.dtype() != dtype || tensor.shape() != shape) {
    return absl::InvalidArgumentError(
        absl::StrCat(kernel, ": ", role, " is ", DTypeName(tensor.dtype()),
                     tensor.shape().DebugString(), " but must be ",
                     DTypeName(dtype), shape.DebugString()));
  }
  return absl::OkStatus();
}

absl::Status CheckOperands(
    const CudaDevice& device, absl::string_view kernel,
    std::initializer_list<std::pair<const char*, const Tensor*>> tensors) {
  const Tensor& first = *tensors.begin()->second;
  for (const auto& [role, tensor] : tensors) {
    absl::Status s =
        CheckShapeAndType(kernel, role, *tensor, first.dtype(), first.shape());
    if (s.ok()) s = CheckOnDevice(device, kernel, role, *tensor);
    RETURN_IF_ERROR(s);
  }
  return absl::OkStatus();
}

absl::Status UnsupportedDType(absl::string_view kernel, DType dtype,
                              absl::string_view supported) {
  return absl::InvalidArgumentError(
      absl::StrCat(kernel, " does not support ", DTypeName(dtype),
                   " tensors; supported: ", supported));
}

absl::Status LaunchStatus(cudaError_t error, absl::string_view kernel,
                          const CudaDevice& device) {
  return CudaStatus(error,
                    absl::StrCat("launching ", kernel, " on ", device.name()));
}

absl::StatusOr<uint64_t> RunWithMinFlag(
    CudaDevice& device, absl::string_view kernel,
    absl::FunctionRef<cudaError_t(unsigned long long*)> launch) {
  cudaStream_t stream = device.stream();
  // From the device's own allocator (not cudaMallocAsync, which GPUs
  // without memory pools, such as some virtual GPUs, refuse); freed when
  // this returns, after the stream is synchronized.
  ASSIGN_OR_RETURN(Tensor flag_tensor,
                   device.Allocate(DType::kInt64, Shape({1})));
  auto* flag = static_cast<unsigned long long*>(flag_tensor.raw_data());
  absl::Status s =
      CudaStatus(cudaMemsetAsync(flag, 0xff, sizeof(*flag), stream),
                 absl::StrCat("cudaMemsetAsync of ", kernel, "'s error flag"));
  if (s.ok()) s = LaunchStatus(launch(flag), kernel, device);
  unsigned long long value = ~0ull;
  if (s.ok()) {
    s = CudaStatus(cudaMemcpyAsync(&value, flag, sizeof(value),
                                   cudaMemcpyDeviceToHost, stream),
                   absl::StrCat("reading ", kernel, "'s error flag"));
  }
  const absl::Status synced =
      CudaStatus(cudaStreamSynchronize(stream),
                 absl::StrCat("cudaStreamSynchronize after ", kernel, " on ",
                              device.name()));
  RETURN_IF_ERROR(s);
  RETURN_IF_ERROR(synced);
  return static_cast<uint64_t>(value);
}

}  // namespace cuda
}  // namespace devices
