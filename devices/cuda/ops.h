// All Tensor-level CUDA kernels in one include: elementwise arithmetic,
// reductions for collectives, matrix product (cuBLAS) and softmax
// cross-entropy, seeded random numbers, and the training kernels. Each is the
// counterpart of the host kernel of the same name (devices/kernels.h) with a
// CudaDevice& in front, the same semantics and the same KernelCost.
//
// Example:
//   #include "devices/cuda/ops.h"
//   gpu.Enqueue(devices::BinaryOpCost("Add", dtype, n), [&] {
//     return devices::cuda::Add(gpu, a, b, out).status();
//   });
#ifndef DEVICES_CUDA_OPS_H_
#define DEVICES_CUDA_OPS_H_

#include "devices/cuda/elementwise_ops.h"  // IWYU pragma: export
#include "devices/cuda/nn_ops.h"           // IWYU pragma: export
#include "devices/cuda/random_ops.h"       // IWYU pragma: export
#include "devices/cuda/reduce_ops.h"       // IWYU pragma: export
#include "devices/cuda/training_ops.h"     // IWYU pragma: export

#endif  // DEVICES_CUDA_OPS_H_
