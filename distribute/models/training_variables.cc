#include "distribute/models/training_variables.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace distribute {
namespace models {

absl::StatusOr<TrainingVariables> CreateTrainingVariables(
    Strategy& strategy, absl::Span<const std::string> names,
    absl::Span<const devices::Tensor> initial_values, Optimizer& optimizer,
    ExecutionContext& exec, const VariableCreatedFn& on_created) {
  if (names.size() != initial_values.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "CreateTrainingVariables got ", names.size(), " names for ",
        initial_values.size(), " initial values; give one name per value"));
  }
  const std::vector<std::string> slot_names = optimizer.SlotNames();
  auto created = [&](const std::string& name,
                     const std::shared_ptr<Variable>& variable) {
    return on_created ? on_created(name, variable) : absl::OkStatus();
  };
  auto scope = strategy.Scope();
  if (!scope.ok()) return scope.status();
  TrainingVariables state;
  for (size_t i = 0; i < names.size(); ++i) {
    VariableOptions options;
    options.name = names[i];
    options.aggregation = VariableAggregation::kMean;
    absl::StatusOr<std::shared_ptr<Variable>> param =
        strategy.CreateVariable(initial_values[i], options);
    if (!param.ok()) return param.status();
    absl::Status status = created(names[i], *param);
    if (!status.ok()) return status;
    absl::StatusOr<std::vector<devices::Tensor>> slot_values =
        optimizer.CreateSlotsForVariable(exec, initial_values[i]);
    if (!slot_values.ok()) return slot_values.status();
    std::vector<std::shared_ptr<Variable>> slots;
    {
      auto colocate = strategy.extended().ColocateVarsWith(**param);
      if (!colocate.ok()) return colocate.status();
      for (size_t k = 0; k < slot_values->size(); ++k) {
        VariableOptions slot_options;
        slot_options.name = absl::StrCat(names[i], "/", slot_names[k]);
        slot_options.trainable = false;
        slot_options.aggregation = VariableAggregation::kMean;
        absl::StatusOr<std::shared_ptr<Variable>> slot =
            strategy.CreateVariable((*slot_values)[k], slot_options);
        if (!slot.ok()) return slot.status();
        status = created(slot_options.name, *slot);
        if (!status.ok()) return status;
        slots.push_back(*std::move(slot));
      }
    }
    state.params.push_back(*std::move(param));
    state.slots.push_back(std::move(slots));
  }
  return state;
}

}  // namespace models
}  // namespace distribute
