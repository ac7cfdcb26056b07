#include "distribute/models/ops.h"

#include <cmath>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "devices/elementwise_kernels.h"
#include "devices/kernel_costs.h"
#include "devices/kernel_library.h"
#include "devices/status_macros.h"
#include "distribute/models/checks.h"

namespace distribute {
namespace models {
namespace {

using devices::DType;
using devices::KernelCost;
using devices::Shape;
using devices::Tensor;

// Reports `cost` in timing-only mode; otherwise runs the kernel and reports
// the cost it returns (the same formula).
absl::Status Run(const ExecutionContext& ctx, KernelCost cost,
                 absl::FunctionRef<absl::StatusOr<KernelCost>()> kernel) {
  if (!ctx.timing_only) {
    ASSIGN_OR_RETURN(cost, kernel());
  }
  ctx.Report(cost);
  return absl::OkStatus();
}

absl::Status CheckSameShapeAndDType(absl::string_view op,
                                    absl::string_view role, const Tensor& t,
                                    const Tensor& like) {
  return CheckShapeAndDType(op, role, t, like.dtype(), like.shape());
}

}  // namespace

absl::StatusOr<Tensor> MatMulOp(const ExecutionContext& ctx, const Tensor& a,
                                const Tensor& b, bool transpose_a,
                                bool transpose_b) {
  RETURN_IF_ERROR(CheckModelDType("MatMul", "a", a.dtype()));
  RETURN_IF_ERROR(CheckRank("MatMul", "a", a, 2));
  RETURN_IF_ERROR(CheckRank("MatMul", "b", b, 2));
  if (b.dtype() != a.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "MatMul: operands have different dtypes ",
        devices::DTypeName(a.dtype()), " and ", devices::DTypeName(b.dtype())));
  }
  const int64_t m = a.shape().dim(transpose_a ? 1 : 0);
  const int64_t k = a.shape().dim(transpose_a ? 0 : 1);
  const int64_t kb = b.shape().dim(transpose_b ? 1 : 0);
  const int64_t n = b.shape().dim(transpose_b ? 0 : 1);
  if (k != kb) {
    return absl::InvalidArgumentError(
        absl::StrCat("MatMul: inner dimensions differ: op(a) is [", m, ",", k,
                     "] and op(b) is [", kb, ",", n, "]"));
  }
  ASSIGN_OR_RETURN(Tensor out, ctx.NewTensor(a.dtype(), Shape({m, n})));
  RETURN_IF_ERROR(Run(ctx, devices::MatMulCost(a.dtype(), m, n, k), [&] {
    return ctx.kernels().MatMul(a, b, transpose_a, transpose_b, out);
  }));
  return out;
}

absl::Status BiasAddOp(const ExecutionContext& ctx, const Tensor& bias,
                       Tensor& x) {
  RETURN_IF_ERROR(CheckModelDType("BiasAdd", "x", x.dtype()));
  RETURN_IF_ERROR(CheckRank("BiasAdd", "x", x, 2));
  const int64_t batch = x.shape().dim(0);
  const int64_t features = x.shape().dim(1);
  RETURN_IF_ERROR(CheckShapeAndDType("BiasAdd", "bias", bias, x.dtype(),
                                     Shape({features})));
  return Run(ctx, devices::BiasAddCost(x.dtype(), batch, features),
             [&] { return ctx.kernels().BiasAdd(bias, x); });
}

absl::StatusOr<Tensor> BiasAddGradOp(const ExecutionContext& ctx,
                                     const Tensor& dy) {
  RETURN_IF_ERROR(CheckModelDType("BiasAddGrad", "dy", dy.dtype()));
  RETURN_IF_ERROR(CheckRank("BiasAddGrad", "dy", dy, 2));
  const int64_t batch = dy.shape().dim(0);
  const int64_t features = dy.shape().dim(1);
  ASSIGN_OR_RETURN(Tensor db, ctx.NewTensor(dy.dtype(), Shape({features})));
  RETURN_IF_ERROR(Run(ctx,
                      devices::BiasAddGradCost(dy.dtype(), batch, features),
                      [&] { return ctx.kernels().BiasAddGrad(dy, db); }));
  return db;
}

absl::StatusOr<Tensor> ReluOp(const ExecutionContext& ctx, const Tensor& x) {
  RETURN_IF_ERROR(CheckModelDType("Relu", "features", x.dtype()));
  ASSIGN_OR_RETURN(Tensor y, ctx.NewTensor(x.dtype(), x.shape()));
  RETURN_IF_ERROR(Run(ctx, devices::ReluCost(x.dtype(), x.num_elements()),
                      [&] { return ctx.kernels().Relu(x, y); }));
  return y;
}

absl::StatusOr<Tensor> ReluGradOp(const ExecutionContext& ctx, const Tensor& dy,
                                  const Tensor& features) {
  RETURN_IF_ERROR(CheckModelDType("ReluGrad", "features", features.dtype()));
  RETURN_IF_ERROR(
      CheckSameShapeAndDType("ReluGrad", "gradients", dy, features));
  ASSIGN_OR_RETURN(Tensor dx,
                   ctx.NewTensor(features.dtype(), features.shape()));
  RETURN_IF_ERROR(
      Run(ctx, devices::ReluGradCost(features.dtype(), features.num_elements()),
          [&] { return ctx.kernels().ReluGrad(dy, features, dx); }));
  return dx;
}

absl::StatusOr<Tensor> ScaleOp(const ExecutionContext& ctx, const Tensor& x,
                               double alpha) {
  RETURN_IF_ERROR(CheckModelDType("Scale", "input", x.dtype()));
  ASSIGN_OR_RETURN(Tensor y, ctx.NewTensor(x.dtype(), x.shape()));
  RETURN_IF_ERROR(Run(ctx, devices::ScaleCost(x.dtype(), x.num_elements()),
                      [&] { return ctx.kernels().Scale(x, alpha, y); }));
  return y;
}

absl::StatusOr<Tensor> RowScaleOp(const ExecutionContext& ctx, const Tensor& x,
                                  const Tensor& row_weights, double alpha) {
  RETURN_IF_ERROR(CheckModelDType("RowScale", "input", x.dtype()));
  RETURN_IF_ERROR(CheckRank("RowScale", "input", x, 2));
  const int64_t rows = x.shape().dim(0);
  const int64_t cols = x.shape().dim(1);
  RETURN_IF_ERROR(CheckShapeAndDType("RowScale", "row weights", row_weights,
                                     x.dtype(), Shape({rows})));
  ASSIGN_OR_RETURN(Tensor y, ctx.NewTensor(x.dtype(), x.shape()));
  RETURN_IF_ERROR(Run(ctx, devices::RowScaleCost(x.dtype(), rows, cols), [&] {
    return ctx.kernels().RowScale(x, row_weights, alpha, y);
  }));
  return y;
}

absl::StatusOr<Tensor> FilledOp(const ExecutionContext& ctx, DType dtype,
                                const Shape& shape, double value) {
  RETURN_IF_ERROR(CheckModelDType("Fill", "output", dtype));
  ASSIGN_OR_RETURN(Tensor out, ctx.NewTensor(dtype, shape));
  RETURN_IF_ERROR(Run(ctx, devices::FillCost(dtype, shape.num_elements()),
                      [&] { return ctx.kernels().Fill(value, out); }));
  return out;
}

absl::StatusOr<Tensor> RandomUniformOp(const ExecutionContext& ctx, DType dtype,
                                       const Shape& shape, uint64_t seed,
                                       double low, double high) {
  RETURN_IF_ERROR(CheckModelDType("RandomUniform", "output", dtype));
  if (!(low < high)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "RandomUniform needs low < high, got [", low, ", ", high, ")"));
  }
  ASSIGN_OR_RETURN(Tensor out, ctx.NewTensor(dtype, shape));
  RETURN_IF_ERROR(
      Run(ctx, devices::RandomUniformCost(dtype, shape.num_elements()),
          [&] { return ctx.kernels().RandomUniform(seed, low, high, out); }));
  return out;
}

absl::StatusOr<SoftmaxCrossEntropyOutputs> SoftmaxCrossEntropyOp(
    const ExecutionContext& ctx, const Tensor& logits, const Tensor& labels) {
  constexpr absl::string_view kOp = "SparseSoftmaxCrossEntropy";
  RETURN_IF_ERROR(CheckModelDType(kOp, "logits", logits.dtype()));
  RETURN_IF_ERROR(CheckRank(kOp, "logits", logits, 2));
  const int64_t batch = logits.shape().dim(0);
  const int64_t classes = logits.shape().dim(1);
  if (labels.dtype() != DType::kInt32 && labels.dtype() != DType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat(kOp, ": labels are ", devices::DTypeName(labels.dtype()),
                     " but must be int32 or int64 class indices"));
  }
  RETURN_IF_ERROR(CheckShapeAndDType(kOp, "labels", labels, labels.dtype(),
                                     Shape({batch})));
  if (classes == 0 && batch > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kOp, ": logits ", logits.shape().DebugString(),
                     " have no classes; every example needs at least one"));
  }
  SoftmaxCrossEntropyOutputs out;
  ASSIGN_OR_RETURN(out.loss, ctx.NewTensor(logits.dtype(), Shape({batch})));
  ASSIGN_OR_RETURN(out.dlogits, ctx.NewTensor(logits.dtype(), logits.shape()));
  RETURN_IF_ERROR(Run(ctx,
                      devices::SoftmaxCrossEntropyCost(
                          logits.dtype(), labels.dtype(), batch, classes),
                      [&] {
                        return ctx.kernels().SoftmaxCrossEntropy(
                            logits, labels, out.loss, out.dlogits);
                      }));
  return out;
}

absl::StatusOr<Tensor> AverageLossOp(const ExecutionContext& ctx,
                                     const Tensor& loss, const Tensor* weight,
                                     double divisor) {
  RETURN_IF_ERROR(CheckModelDType("AverageLoss", "loss", loss.dtype()));
  if (!(divisor > 0) || !std::isfinite(divisor)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AverageLoss: the divisor must be a positive number, got ", divisor));
  }
  int64_t weight_count = 0;
  if (weight != nullptr) {
    if (weight->num_elements() != 1) {
      RETURN_IF_ERROR(
          CheckSameShapeAndDType("AverageLoss", "weight", *weight, loss));
    } else if (weight->dtype() != loss.dtype()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "AverageLoss: weight is ", devices::DTypeName(weight->dtype()),
          " but must be ", devices::DTypeName(loss.dtype())));
    }
    weight_count = weight->num_elements();
  }
  ASSIGN_OR_RETURN(Tensor out, ctx.NewTensor(loss.dtype(), Shape()));
  RETURN_IF_ERROR(Run(
      ctx,
      devices::AverageLossCost(loss.dtype(), loss.num_elements(), weight_count),
      [&] { return ctx.kernels().AverageLoss(loss, weight, divisor, out); }));
  return out;
}

absl::Status SgdUpdateOp(const ExecutionContext& ctx, Tensor& var,
                         const Tensor& grad, Tensor* m, double learning_rate,
                         double momentum, bool nesterov) {
  RETURN_IF_ERROR(CheckModelDType("SGDUpdate", "variable", var.dtype()));
  RETURN_IF_ERROR(CheckSameShapeAndDType("SGDUpdate", "gradient", grad, var));
  if ((m != nullptr) != (momentum != 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SGDUpdate: a momentum slot is needed exactly when momentum != 0 "
        "(momentum is ",
        momentum, ", slot ", m == nullptr ? "missing" : "given", ")"));
  }
  if (m != nullptr) {
    RETURN_IF_ERROR(
        CheckSameShapeAndDType("SGDUpdate", "momentum slot", *m, var));
  }
  return Run(ctx,
             devices::SgdUpdateCost(var.dtype(), var.num_elements(),
                                    m != nullptr, nesterov),
             [&] {
               return ctx.kernels().SgdUpdate(var, grad, m, learning_rate,
                                              momentum, nesterov);
             });
}

absl::Status AdamUpdateOp(const ExecutionContext& ctx, Tensor& var,
                          const Tensor& grad, Tensor& m, Tensor& v,
                          double alpha, double beta_1, double beta_2,
                          double epsilon) {
  RETURN_IF_ERROR(CheckModelDType("AdamUpdate", "variable", var.dtype()));
  RETURN_IF_ERROR(CheckSameShapeAndDType("AdamUpdate", "gradient", grad, var));
  RETURN_IF_ERROR(CheckSameShapeAndDType("AdamUpdate", "m slot", m, var));
  RETURN_IF_ERROR(CheckSameShapeAndDType("AdamUpdate", "v slot", v, var));
  return Run(ctx, devices::AdamUpdateCost(var.dtype(), var.num_elements()),
             [&] {
               return ctx.kernels().AdamUpdate(var, grad, m, v, alpha, beta_1,
                                               beta_2, epsilon);
             });
}

}  // namespace models
}  // namespace distribute
