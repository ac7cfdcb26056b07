// Host kernels for training beyond elementwise arithmetic and MatMul: adding
// a bias to every row and its gradient, the averaged (optionally weighted)
// loss sum, scaling the rows of a matrix, and the fused SGD and Adam updates
// (the model library's kernels; devices/cuda/training_ops.h has their CUDA
// counterparts). Each checks its arguments, does the work on host tensors and
// returns its KernelCost (formulas in kernel_costs.h). float32 and float64
// only. The Check*Args functions are the argument checks alone (dtypes and
// shapes, not where the data is), shared with the CUDA kernels so that both
// reject the same arguments with the same messages.
//
// Example:
//   // y [batch, out] += bias [out]
//   absl::StatusOr<devices::KernelCost> cost = devices::BiasAdd(bias, y);
//   // cost->flops == batch * out
#ifndef DEVICES_TRAINING_KERNELS_H_
#define DEVICES_TRAINING_KERNELS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devices/dtype.h"
#include "devices/kernel_costs.h"
#include "devices/tensor.h"

namespace devices {

// Errors common to the kernels below: INVALID_ARGUMENT for dtypes other than
// float32/float64 or mismatched dtypes or shapes (naming the tensor);
// FAILED_PRECONDITION for a tensor without host data.

// x [batch, features] += bias [features], in place.
absl::StatusOr<KernelCost> BiasAdd(const Tensor& bias, Tensor& x);
absl::Status CheckBiasAddArgs(const Tensor& bias, const Tensor& x);

// db [features] = sum over rows of dy [batch, features], rows added in
// order.
absl::StatusOr<KernelCost> BiasAddGrad(const Tensor& dy, Tensor& db);
absl::Status CheckBiasAddGradArgs(const Tensor& dy, const Tensor& db);

// out (a scalar) = sum_i(loss[i] * weight[i]) / divisor, summed in index
// order in double and rounded once. `weight` is null (all ones), a tensor
// of one element, or of loss's shape. INVALID_ARGUMENT also for divisor <= 0
// or a non-finite divisor.
absl::StatusOr<KernelCost> AverageLoss(const Tensor& loss, const Tensor* weight,
                                       double divisor, Tensor& out);
absl::Status CheckAverageLossArgs(const Tensor& loss, const Tensor* weight,
                                  double divisor, const Tensor& out);

// out [rows, cols] = in * (alpha * row_weights[i]) row by row, where the
// scale is rounded to the dtype once per row; out may be in. row_weights is
// [rows] of in's dtype.
absl::StatusOr<KernelCost> RowScale(const Tensor& in, const Tensor& row_weights,
                                    double alpha, Tensor& out);
absl::Status CheckRowScaleArgs(const Tensor& in, const Tensor& row_weights,
                               const Tensor& out);

// Keras' SGD step, in the variable's dtype (the scalars are rounded to it):
//   without momentum: var -= grad * lr
//   with momentum:    m = m * momentum - grad * lr
//                     var += m                               (classical)
//                     var += m * momentum - grad * lr        (Nesterov)
// `m` is null exactly when momentum == 0 (INVALID_ARGUMENT otherwise).
absl::StatusOr<KernelCost> SgdUpdate(Tensor& var, const Tensor& grad, Tensor* m,
                                     double learning_rate, double momentum,
                                     bool nesterov);
absl::Status CheckSgdUpdateArgs(const Tensor& var, const Tensor& grad,
                                const Tensor* m, double momentum);

// Keras' Adam step, in the variable's dtype (the scalars are rounded to it):
//   m += (grad - m) * (1 - beta_1)
//   v += (grad^2 - v) * (1 - beta_2)
//   var -= m * alpha / (sqrt(v) + epsilon)
// where the caller computes alpha = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t).
absl::StatusOr<KernelCost> AdamUpdate(Tensor& var, const Tensor& grad,
                                      Tensor& m, Tensor& v, double alpha,
                                      double beta_1, double beta_2,
                                      double epsilon);
absl::Status CheckAdamUpdateArgs(const Tensor& var, const Tensor& grad,
                                 const Tensor& m, const Tensor& v);

}  // namespace devices

#endif  // DEVICES_TRAINING_KERNELS_H_
