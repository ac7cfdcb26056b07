// CudaKernelLibrary: the kernels of one GPU behind devices::KernelLibrary
// (what CudaDevice::kernels() hands out on the CUDA platform). Each method
// checks its arguments as the Tensor-level CUDA kernel does (devices/cuda/
// ops.h: the host kernels' semantics, errors and KernelCosts; every tensor
// must be on this GPU) and queues the kernel on the device's stream,
// ordered after the work enqueued before, returning once it is launched:
// the GPU runs it while the caller goes on to queue the next, and every
// later use of the result on this device (kernels, copies out, which wait
// for the stream, NCCL collectives) is ordered after it. Argument errors
// come back from the call; a fault of the GPU itself from the device's next
// wait (a copy out, Synchronize).
//
// Do not call it from a function running on the same device's queue (the
// wait for the launch would never end): call it from replica threads or the
// main thread.
//
// Example:
//   std::unique_ptr<devices::KernelLibrary> k =
//       devices::cuda::MakeCudaKernelLibrary(gpu);
//   absl::StatusOr<devices::KernelCost> c = k->BiasAdd(bias_on_gpu, y_on_gpu);
#ifndef DEVICES_CUDA_CUDA_KERNEL_LIBRARY_H_
#define DEVICES_CUDA_CUDA_KERNEL_LIBRARY_H_

#include <memory>

#include "devices/cuda/cuda_device.h"
#include "devices/kernel_library.h"

namespace devices {
namespace cuda {

// The library of `device`, which must outlive it. DEADLINE_EXCEEDED from a
// kernel that the queue has not run within kCopyTimeout.
std::unique_ptr<KernelLibrary> MakeCudaKernelLibrary(CudaDevice& device);

}  // namespace cuda
}  // namespace devices

#endif  // DEVICES_CUDA_CUDA_KERNEL_LIBRARY_H_
