// The ops that layers, losses and optimizers are made of: each takes an
// ExecutionContext, checks shapes and dtypes the same way in both modes,
// allocates its output with ctx.NewTensor, runs the kernel of ctx.kernels()
// (functional mode: the host kernels, or a GPU's on its tensors) or nothing
// (timing-only mode), and reports the kernel's cost to
// ctx.Report -- the same cost in both modes. Every op computes in float32 or
// float64; INVALID_ARGUMENT for other dtypes and mismatched shapes (in both
// modes), FAILED_PRECONDITION for inputs without data in the memory the kernels
// compute in (functional mode).
//
// Example:
//   absl::StatusOr<devices::Tensor> y =
//       MatMulOp(ctx, x, w, /*transpose_a=*/false, /*transpose_b=*/false);
//   RETURN_IF_ERROR(BiasAddOp(ctx, b, *y));
#ifndef DISTRIBUTE_MODELS_OPS_H_
#define DISTRIBUTE_MODELS_OPS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "devices/dtype.h"
#include "devices/shape.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/models/execution_context.h"

namespace distribute {
namespace models {

// op(a) x op(b) (devices::MatMul).
absl::StatusOr<devices::Tensor> MatMulOp(const ExecutionContext& ctx,
                                         const devices::Tensor& a,
                                         const devices::Tensor& b,
                                         bool transpose_a, bool transpose_b);

// x [batch, features] += bias [features], in place.
absl::Status BiasAddOp(const ExecutionContext& ctx, const devices::Tensor& bias,
                       devices::Tensor& x);

// Column sums of dy [batch, features] -> [features].
absl::StatusOr<devices::Tensor> BiasAddGradOp(const ExecutionContext& ctx,
                                              const devices::Tensor& dy);

// max(x, 0) (devices::Relu).
absl::StatusOr<devices::Tensor> ReluOp(const ExecutionContext& ctx,
                                       const devices::Tensor& x);

// dy where features > 0, else 0 (devices::ReluGrad).
absl::StatusOr<devices::Tensor> ReluGradOp(const ExecutionContext& ctx,
                                           const devices::Tensor& dy,
                                           const devices::Tensor& features);

// alpha * x (devices::Scale).
absl::StatusOr<devices::Tensor> ScaleOp(const ExecutionContext& ctx,
                                        const devices::Tensor& x, double alpha);

// x [rows, cols] with row i scaled by alpha * row_weights[i].
absl::StatusOr<devices::Tensor> RowScaleOp(const ExecutionContext& ctx,
                                           const devices::Tensor& x,
                                           const devices::Tensor& row_weights,
                                           double alpha);

// A new dtype x shape tensor filled with `value` (devices::Fill).
absl::StatusOr<devices::Tensor> FilledOp(const ExecutionContext& ctx,
                                         devices::DType dtype,
                                         const devices::Shape& shape,
                                         double value);

// A new dtype x shape tensor of uniform values in [low, high) from `seed`
// (devices::RandomUniform: the same values on every machine).
absl::StatusOr<devices::Tensor> RandomUniformOp(const ExecutionContext& ctx,
                                                devices::DType dtype,
                                                const devices::Shape& shape,
                                                uint64_t seed, double low,
                                                double high);

// Per-example losses [batch] and dlogits [batch, classes] of sparse softmax
// cross-entropy (devices::SoftmaxCrossEntropy). Labels are checked against
// the classes only in functional mode (timing-only labels have no values).
struct SoftmaxCrossEntropyOutputs {
  devices::Tensor loss;
  devices::Tensor dlogits;
};
absl::StatusOr<SoftmaxCrossEntropyOutputs> SoftmaxCrossEntropyOp(
    const ExecutionContext& ctx, const devices::Tensor& logits,
    const devices::Tensor& labels);

// sum(loss * weight) / divisor as a scalar of loss's dtype
// (devices/training_kernels.h AverageLoss); `weight` may be null.
absl::StatusOr<devices::Tensor> AverageLossOp(const ExecutionContext& ctx,
                                              const devices::Tensor& loss,
                                              const devices::Tensor* weight,
                                              double divisor);

// Keras' SGD and Adam steps in place (devices/training_kernels.h
// SgdUpdate and AdamUpdate).
absl::Status SgdUpdateOp(const ExecutionContext& ctx, devices::Tensor& var,
                         const devices::Tensor& grad, devices::Tensor* m,
                         double learning_rate, double momentum, bool nesterov);
absl::Status AdamUpdateOp(const ExecutionContext& ctx, devices::Tensor& var,
                          const devices::Tensor& grad, devices::Tensor& m,
                          devices::Tensor& v, double alpha, double beta_1,
                          double beta_2, double epsilon);

}  // namespace models
}  // namespace distribute

#endif  // DISTRIBUTE_MODELS_OPS_H_
