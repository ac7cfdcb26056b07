#include "distribute/models/optimizer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/models/checks.h"
#include "distribute/models/ops.h"

namespace distribute {
namespace models {

using devices::Tensor;

absl::StatusOr<std::vector<Tensor>> Optimizer::CreateSlotsForVariable(
    const ExecutionContext& ctx, const Tensor& var) const {
  RETURN_IF_ERROR(CheckModelDType(name(), "the variable", var.dtype()));
  std::vector<Tensor> slots;
  for (int64_t i = 0; i < NumSlotsPerVariable(); ++i) {
    ASSIGN_OR_RETURN(Tensor slot, FilledOp(ctx, var.dtype(), var.shape(), 0.0));
    slots.push_back(std::move(slot));
  }
  return slots;
}

absl::StatusOr<std::vector<Tensor>> Optimizer::CreateSlots(
    const ExecutionContext& ctx, absl::Span<const Tensor> params) const {
  std::vector<Tensor> slots;
  for (size_t i = 0; i < params.size(); ++i) {
    absl::StatusOr<std::vector<Tensor>> var_slots =
        CreateSlotsForVariable(ctx, params[i]);
    if (!var_slots.ok()) {
      return absl::Status(
          var_slots.status().code(),
          absl::StrCat("variable ", i, ": ", var_slots.status().message()));
    }
    for (Tensor& slot : *var_slots) slots.push_back(std::move(slot));
  }
  return slots;
}

absl::Status Optimizer::CheckVariable(const Tensor& var, const Tensor& grad,
                                      absl::Span<const Tensor> slots,
                                      int64_t step) const {
  if (step < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(),
                     ": step must be the number of updates applied before this "
                     "one (0 or more), got ",
                     step));
  }
  RETURN_IF_ERROR(CheckModelDType(name(), "the variable", var.dtype()));
  RETURN_IF_ERROR(CheckShapeAndDType(name(), "the gradient", grad, var.dtype(),
                                     var.shape()));
  const std::vector<std::string> slot_names = SlotNames();
  if (slots.size() != slot_names.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        name(), ": got ", slots.size(), " slots for a variable that needs ",
        slot_names.size(), "; create them with CreateSlotsForVariable"));
  }
  for (size_t i = 0; i < slots.size(); ++i) {
    RETURN_IF_ERROR(
        CheckShapeAndDType(name(), absl::StrCat("the ", slot_names[i], " slot"),
                           slots[i], var.dtype(), var.shape()));
  }
  return absl::OkStatus();
}

absl::Status Optimizer::ApplyToVariable(const ExecutionContext& ctx,
                                        Tensor& var, const Tensor& grad,
                                        absl::Span<Tensor> slots,
                                        int64_t step) const {
  RETURN_IF_ERROR(CheckVariable(var, grad, slots, step));
  return ApplyChecked(ctx, var, grad, slots, step);
}

absl::Status Optimizer::Apply(const ExecutionContext& ctx,
                              std::vector<Tensor>& params,
                              absl::Span<const Tensor> grads,
                              std::vector<Tensor>& slots, int64_t step) const {
  const size_t k = static_cast<size_t>(NumSlotsPerVariable());
  if (grads.size() != params.size() || slots.size() != k * params.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": got ", params.size(), " variables, ",
                     grads.size(), " gradients and ", slots.size(),
                     " slots; need one gradient per "
                     "variable and ",
                     k, " slots per variable (from CreateSlots)"));
  }
  for (size_t i = 0; i < params.size(); ++i) {
    absl::Status valid =
        CheckVariable(params[i], grads[i],
                      absl::MakeConstSpan(slots).subspan(i * k, k), step);
    if (!valid.ok()) {
      return absl::Status(valid.code(),
                          absl::StrCat("variable ", i, ": ", valid.message()));
    }
  }
  for (size_t i = 0; i < params.size(); ++i) {
    RETURN_IF_ERROR(ApplyChecked(ctx, params[i], grads[i],
                                 absl::MakeSpan(slots).subspan(i * k, k),
                                 step));
  }
  return absl::OkStatus();
}

}  // namespace models
}  // namespace distribute
