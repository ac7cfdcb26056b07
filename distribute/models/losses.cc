#include "distribute/models/losses.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/shape.h"
#include "devices/status_macros.h"
#include "distribute/models/checks.h"
#include "distribute/models/ops.h"

namespace distribute {
namespace models {
namespace {

using devices::Tensor;

absl::Status CheckGlobalBatchSize(absl::string_view op,
                                  int64_t global_batch_size) {
  if (global_batch_size > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      op, ": global_batch_size must be positive, got ", global_batch_size,
      "; pass the number of examples in the batch over all replicas"));
}

}  // namespace

absl::StatusOr<SparseSoftmaxCrossEntropyResult> SparseSoftmaxCrossEntropy(
    const ExecutionContext& ctx, const Tensor& logits, const Tensor& labels) {
  ASSIGN_OR_RETURN(SoftmaxCrossEntropyOutputs out,
                   SoftmaxCrossEntropyOp(ctx, logits, labels));
  return SparseSoftmaxCrossEntropyResult{std::move(out.loss),
                                         std::move(out.dlogits)};
}

absl::StatusOr<Tensor> ComputeAverageLoss(
    const ExecutionContext& ctx, const Tensor& per_example_loss,
    int64_t global_batch_size, const std::optional<Tensor>& sample_weight) {
  RETURN_IF_ERROR(
      CheckGlobalBatchSize("ComputeAverageLoss", global_batch_size));
  if (per_example_loss.shape().rank() == 0) {
    return absl::InvalidArgumentError(
        "ComputeAverageLoss: per_example_loss is a scalar; pass the loss of "
        "each example (rank >= 1), not a loss already reduced");
  }
  return AverageLossOp(ctx, per_example_loss,
                       sample_weight.has_value() ? &*sample_weight : nullptr,
                       static_cast<double>(global_batch_size));
}

absl::StatusOr<Tensor> ScaleLossGradient(
    const ExecutionContext& ctx, const Tensor& dlogits,
    int64_t global_batch_size, const std::optional<Tensor>& sample_weight) {
  constexpr absl::string_view kOp = "ScaleLossGradient";
  RETURN_IF_ERROR(CheckGlobalBatchSize(kOp, global_batch_size));
  RETURN_IF_ERROR(CheckModelDType(kOp, "dlogits", dlogits.dtype()));
  RETURN_IF_ERROR(CheckRank(kOp, "dlogits", dlogits, 2));
  const double inverse = 1.0 / static_cast<double>(global_batch_size);
  if (!sample_weight.has_value()) return ScaleOp(ctx, dlogits, inverse);
  const Tensor& weight = *sample_weight;
  if (weight.num_elements() != 1) {
    return RowScaleOp(ctx, dlogits, weight, inverse);
  }
  if (weight.dtype() != dlogits.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kOp, ": sample_weight is ", devices::DTypeName(weight.dtype()),
        " but must be ", devices::DTypeName(dlogits.dtype())));
  }
  double w = 1;  // Timing-only mode: the value does not change the cost.
  if (!ctx.timing_only) {
    Tensor host_weight = weight;
    if (!weight.host_accessible() && weight.has_data() &&
        ctx.compute_device != nullptr) {
      // A weight in device memory: read its one value back.
      ASSIGN_OR_RETURN(host_weight,
                       Tensor::Host(weight.dtype(), weight.shape()));
      RETURN_IF_ERROR(
          ctx.compute_device->CopyToHost(weight, host_weight.raw_data()));
    }
    RETURN_IF_ERROR(CheckHostData(kOp, "sample_weight", host_weight));
    w = host_weight.dtype() == devices::DType::kFloat64
            ? *host_weight.data<double>()
            : static_cast<double>(*host_weight.data<float>());
  }
  return ScaleOp(ctx, dlogits, w * inverse);
}

absl::StatusOr<LossAndGradient> SparseSoftmaxCrossEntropyLoss(
    const ExecutionContext& ctx, const Tensor& logits, const Tensor& labels,
    int64_t global_batch_size, const std::optional<Tensor>& sample_weight) {
  // Checked first so that a bad batch size runs no kernel.
  RETURN_IF_ERROR(
      CheckGlobalBatchSize("SparseSoftmaxCrossEntropyLoss", global_batch_size));
  ASSIGN_OR_RETURN(SparseSoftmaxCrossEntropyResult xent,
                   SparseSoftmaxCrossEntropy(ctx, logits, labels));
  LossAndGradient out;
  ASSIGN_OR_RETURN(out.loss,
                   ComputeAverageLoss(ctx, xent.per_example_loss,
                                      global_batch_size, sample_weight));
  ASSIGN_OR_RETURN(
      out.dlogits,
      ScaleLossGradient(ctx, xent.dlogits, global_batch_size, sample_weight));
  out.per_example_loss = std::move(xent.per_example_loss);
  return out;
}

}  // namespace models
}  // namespace distribute
