#include "devices/cuda/cuda_status.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "devices/cuda/cuda_blas.h"

namespace devices {
namespace cuda {

absl::Status CudaStatus(cudaError_t error, absl::string_view call) {
  if (error == cudaSuccess) return absl::OkStatus();
  // The runtime also keeps the error as the thread's last error, which the
  // next launch's cudaGetLastError() would report again, blaming a kernel
  // that launched fine. It is reported here, so it is cleared (a sticky
  // error, one that corrupts the context, stays and fails later calls).
  cudaGetLastError();
  const std::string message =
      absl::StrCat(call, " failed: ", cudaGetErrorName(error), ": ",
                   cudaGetErrorString(error));
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(
          absl::StrCat(message, "; free tensors or use a smaller batch"));
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorDeviceUninitialized:
    case cudaErrorInitializationError:
      return absl::UnavailableError(
          absl::StrCat(message,
                       "; check that a GPU is visible (CUDA_VISIBLE_DEVICES) "
                       "and that the NVIDIA driver is installed and recent "
                       "enough"));
    default:
      return absl::InternalError(message);
  }
}

absl::Status CublasStatus(int status, absl::string_view call) {
  if (status == kBlasSuccess) return absl::OkStatus();
  const std::string message =
      absl::StrCat(call, " failed: ", BlasStatusName(status), ": ",
                   BlasStatusString(status));
  switch (status) {
    case kBlasAllocFailed:
      return absl::ResourceExhaustedError(message);
    case kBlasNotInitialized:
      return absl::UnavailableError(message);
    default:
      return absl::InternalError(message);
  }
}

absl::StatusOr<int> CudaDeviceCount() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no CUDA GPU found (cudaGetDeviceCount: ", cudaGetErrorString(error),
        ")"));
  }
  if (count <= 0) {
    return absl::FailedPreconditionError(
        "no CUDA GPU found (cudaGetDeviceCount: 0 devices)");
  }
  return count;
}

ScopedCudaDevice::ScopedCudaDevice(int ordinal) {
  int current = -1;
  status_ = CudaStatus(cudaGetDevice(&current), "cudaGetDevice");
  if (!status_.ok()) return;
  if (current == ordinal) return;
  status_ = CudaStatus(cudaSetDevice(ordinal),
                       absl::StrCat("cudaSetDevice(", ordinal, ")"));
  if (status_.ok()) previous_ = current;
}

ScopedCudaDevice::~ScopedCudaDevice() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

}  // namespace cuda
}  // namespace devices
