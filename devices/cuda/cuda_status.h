// CUDA and cuBLAS error codes as absl::Status, GPU discovery, and a scoped
// current device: the small helpers every CUDA source of this package uses.
//
// Example:
//   absl::StatusOr<int> gpus = devices::cuda::CudaDeviceCount();
//   if (!gpus.ok()) return gpus.status();  // FAILED_PRECONDITION, no GPU
//   devices::cuda::ScopedCudaDevice on_gpu1(1);
//   if (!on_gpu1.status().ok()) return on_gpu1.status();
//   absl::Status s = devices::cuda::CudaStatus(
//       cudaMemsetAsync(ptr, 0, bytes, stream), "cudaMemsetAsync");
#ifndef DEVICES_CUDA_CUDA_STATUS_H_
#define DEVICES_CUDA_CUDA_STATUS_H_

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devices {
namespace cuda {

// OK for cudaSuccess. Otherwise clears the thread's last error (so a later
// launch's check does not report it again) and the error names `call` and
// CUDA's own name
// and description of the error, with the most specific code:
// RESOURCE_EXHAUSTED for out of memory, UNAVAILABLE when there is no usable
// GPU or driver (the device is gone, in use exclusively, or the driver is
// missing or too old), INTERNAL for everything else (a failed launch, a
// fault in a kernel).
absl::Status CudaStatus(cudaError_t error, absl::string_view call);

// A cuBLAS status (cublasStatus_t as int, see cuda_blas.h) as a Status
// naming `call`: RESOURCE_EXHAUSTED for
// CUBLAS_STATUS_ALLOC_FAILED, UNAVAILABLE when cuBLAS could not initialize,
// INTERNAL otherwise.
absl::Status CublasStatus(int status, absl::string_view call);

// The number of visible GPUs (at least 1). FAILED_PRECONDITION "no CUDA GPU
// found (cudaGetDeviceCount: <CUDA's reason>)" when cudaGetDeviceCount fails
// or finds none.
absl::StatusOr<int> CudaDeviceCount();

// Makes `ordinal` the calling thread's current device and restores the
// previous one when destroyed. status() says whether the switch worked.
class ScopedCudaDevice {
 public:
  explicit ScopedCudaDevice(int ordinal);
  ~ScopedCudaDevice();
  ScopedCudaDevice(const ScopedCudaDevice&) = delete;
  ScopedCudaDevice& operator=(const ScopedCudaDevice&) = delete;

  const absl::Status& status() const { return status_; }

 private:
  int previous_ = -1;  // -1: nothing to restore.
  absl::Status status_;
};

}  // namespace cuda
}  // namespace devices

#endif  // DEVICES_CUDA_CUDA_STATUS_H_
