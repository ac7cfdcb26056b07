// All host kernels in one include: elementwise arithmetic, reductions for
// collectives, matrix product and softmax cross-entropy, and seeded random
// numbers, and the training kernels (bias, loss averaging, optimizer
// updates). Every kernel does its work on host Tensors (or raw host buffers)
// and returns its KernelCost; the cost formulas live in kernel_costs.h so
// that simulated and CUDA devices charge the same costs.
//
// Example:
//   #include "devices/kernels.h"
//   absl::StatusOr<devices::KernelCost> cost = devices::Add(a, b, out);
//   devices::ReduceInto(devices::ReduceOp::kMean, {g0, g1, g2, g3}, mean);
#ifndef DEVICES_KERNELS_H_
#define DEVICES_KERNELS_H_

#include "devices/elementwise_kernels.h"  // IWYU pragma: export
#include "devices/kernel_costs.h"         // IWYU pragma: export
#include "devices/nn_kernels.h"           // IWYU pragma: export
#include "devices/random_kernels.h"       // IWYU pragma: export
#include "devices/reduce_kernels.h"       // IWYU pragma: export
#include "devices/training_kernels.h"     // IWYU pragma: export

#endif  // DEVICES_KERNELS_H_
