// The training kernels on GPU tensors: the CUDA counterparts of
// devices/training_kernels.h (bias add and its gradient, the averaged loss,
// row scaling, SGD and Adam updates), with the same arguments, argument
// errors (the host kernels' Check*Args) and KernelCosts. Results are the
// host kernels' bit for bit, except AverageLoss, whose double sum runs in a
// fixed tree order instead of index order (training_kernels.cu). The
// functions launch on device.stream() and return without waiting for the
// GPU; call them from a function given to device.Enqueue() to order them
// with the device's other work. All tensors must be on `device`.
//
// Example:
//   gpu.Enqueue(devices::BiasAddCost(DType::kFloat32, batch, out), [&] {
//     return devices::cuda::BiasAdd(gpu, bias, y).status();
//   });
#ifndef DEVICES_CUDA_TRAINING_OPS_H_
#define DEVICES_CUDA_TRAINING_OPS_H_

#include "absl/status/statusor.h"
#include "devices/cuda/cuda_device.h"
#include "devices/kernel_costs.h"
#include "devices/tensor.h"

namespace devices {
namespace cuda {

// Errors beyond the host kernels' argument errors: INVALID_ARGUMENT for a
// tensor on another device, FAILED_PRECONDITION for a tensor without data,
// INTERNAL/UNAVAILABLE for CUDA errors.

absl::StatusOr<KernelCost> BiasAdd(CudaDevice& device, const Tensor& bias,
                                   Tensor& x);
absl::StatusOr<KernelCost> BiasAddGrad(CudaDevice& device, const Tensor& dy,
                                       Tensor& db);
absl::StatusOr<KernelCost> AverageLoss(CudaDevice& device, const Tensor& loss,
                                       const Tensor* weight, double divisor,
                                       Tensor& out);
absl::StatusOr<KernelCost> RowScale(CudaDevice& device, const Tensor& in,
                                    const Tensor& row_weights, double alpha,
                                    Tensor& out);
absl::StatusOr<KernelCost> SgdUpdate(CudaDevice& device, Tensor& var,
                                     const Tensor& grad, Tensor* m,
                                     double learning_rate, double momentum,
                                     bool nesterov);
absl::StatusOr<KernelCost> AdamUpdate(CudaDevice& device, Tensor& var,
                                      const Tensor& grad, Tensor& m, Tensor& v,
                                      double alpha, double beta_1,
                                      double beta_2, double epsilon);

}  // namespace cuda
}  // namespace devices

#endif  // DEVICES_CUDA_TRAINING_OPS_H_
