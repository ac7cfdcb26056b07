#include "distribute/models/dense.h"

#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/models/checks.h"
#include "distribute/models/ops.h"

namespace distribute {
namespace models {

using devices::Shape;
using devices::Tensor;

absl::StatusOr<Dense> Dense::Create(int64_t input_size, int64_t output_size,
                                    bool use_bias, devices::DType dtype) {
  if (input_size < 1 || output_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Dense needs at least one input and one output feature, got "
        "input_size ",
        input_size, " and output_size ", output_size));
  }
  RETURN_IF_ERROR(CheckModelDType("Dense", "the layer's dtype", dtype));
  return Dense(input_size, output_size, use_bias, dtype);
}

std::vector<Shape> Dense::ParamShapes() const {
  std::vector<Shape> shapes = {Shape({input_size_, output_size_})};
  if (use_bias_) shapes.push_back(Shape({output_size_}));
  return shapes;
}

int64_t Dense::NumParams() const {
  return input_size_ * output_size_ + (use_bias_ ? output_size_ : 0);
}

absl::StatusOr<std::vector<Tensor>> Dense::InitParams(
    const ExecutionContext& ctx, uint64_t seed) const {
  const double limit =
      std::sqrt(6.0 / static_cast<double>(input_size_ + output_size_));
  std::vector<Tensor> params;
  ASSIGN_OR_RETURN(
      Tensor kernel,
      RandomUniformOp(ctx, dtype_, Shape({input_size_, output_size_}), seed,
                      -limit, limit));
  params.push_back(std::move(kernel));
  if (use_bias_) {
    ASSIGN_OR_RETURN(Tensor bias,
                     FilledOp(ctx, dtype_, Shape({output_size_}), 0.0));
    params.push_back(std::move(bias));
  }
  return params;
}

absl::Status Dense::CheckParams(absl::Span<const Tensor> params) const {
  const std::vector<Shape> shapes = ParamShapes();
  if (params.size() != shapes.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Dense: got ", params.size(), " parameter tensors but the layer has ",
        shapes.size(), use_bias_ ? " (kernel, bias)" : " (kernel)"));
  }
  RETURN_IF_ERROR(
      CheckShapeAndDType("Dense", "the kernel", params[0], dtype_, shapes[0]));
  if (use_bias_) {
    RETURN_IF_ERROR(
        CheckShapeAndDType("Dense", "the bias", params[1], dtype_, shapes[1]));
  }
  return absl::OkStatus();
}

absl::Status Dense::CheckBatch(const char* role, const Tensor& t,
                               int64_t features) const {
  RETURN_IF_ERROR(CheckRank("Dense", role, t, 2));
  return CheckShapeAndDType("Dense", role, t, dtype_,
                            Shape({t.shape().dim(0), features}));
}

absl::StatusOr<Tensor> Dense::Forward(const ExecutionContext& ctx,
                                      absl::Span<const Tensor> params,
                                      const Tensor& x) const {
  RETURN_IF_ERROR(CheckParams(params));
  RETURN_IF_ERROR(CheckBatch("the input x", x, input_size_));
  ASSIGN_OR_RETURN(Tensor y, MatMulOp(ctx, x, params[0],
                                      /*transpose_a=*/false,
                                      /*transpose_b=*/false));
  if (use_bias_) RETURN_IF_ERROR(BiasAddOp(ctx, params[1], y));
  return y;
}

absl::StatusOr<DenseGradients> Dense::Backward(const ExecutionContext& ctx,
                                               absl::Span<const Tensor> params,
                                               const Tensor& x,
                                               const Tensor& dy,
                                               bool compute_dx) const {
  RETURN_IF_ERROR(CheckParams(params));
  RETURN_IF_ERROR(CheckBatch("the input x", x, input_size_));
  RETURN_IF_ERROR(CheckBatch("the output gradient dy", dy, output_size_));
  if (dy.shape().dim(0) != x.shape().dim(0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Dense: the input x has ", x.shape().dim(0),
        " examples but the output gradient dy has ", dy.shape().dim(0),
        "; pass the x of the forward pass that produced dy's output"));
  }
  DenseGradients grads;
  if (compute_dx) {
    ASSIGN_OR_RETURN(grads.dx, MatMulOp(ctx, dy, params[0],
                                        /*transpose_a=*/false,
                                        /*transpose_b=*/true));
  }
  ASSIGN_OR_RETURN(grads.dw, MatMulOp(ctx, x, dy, /*transpose_a=*/true,
                                      /*transpose_b=*/false));
  if (use_bias_) {
    ASSIGN_OR_RETURN(grads.db, BiasAddGradOp(ctx, dy));
  }
  return grads;
}

double Dense::ForwardFlopsPerExample() const {
  const double in = static_cast<double>(input_size_);
  const double out = static_cast<double>(output_size_);
  return 2 * in * out + (use_bias_ ? out : 0);
}

double Dense::BackwardFlopsPerExample(bool compute_dx) const {
  const double in = static_cast<double>(input_size_);
  const double out = static_cast<double>(output_size_);
  return (compute_dx ? 2 * in * out : 0) + 2 * in * out + (use_bias_ ? out : 0);
}

}  // namespace models
}  // namespace distribute
