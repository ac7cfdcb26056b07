#include "distribute/models/training_variables.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"

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
  ASSIGN_OR_RETURN(auto scope, strategy.Scope());
  TrainingVariables state;
  for (size_t i = 0; i < names.size(); ++i) {
    VariableOptions options;
    options.name = names[i];
    options.aggregation = VariableAggregation::kMean;
    ASSIGN_OR_RETURN(std::shared_ptr<Variable> param,
                     strategy.CreateVariable(initial_values[i], options));
    RETURN_IF_ERROR(created(names[i], param));
    ASSIGN_OR_RETURN(std::vector<devices::Tensor> slot_values,
                     optimizer.CreateSlotsForVariable(exec, initial_values[i]));
    std::vector<std::shared_ptr<Variable>> slots;
    {
      ASSIGN_OR_RETURN(auto colocate,
                       strategy.extended().ColocateVarsWith(*param));
      for (size_t k = 0; k < slot_values.size(); ++k) {
        VariableOptions slot_options;
        slot_options.name = absl::StrCat(names[i], "/", slot_names[k]);
        slot_options.trainable = false;
        slot_options.aggregation = VariableAggregation::kMean;
        ASSIGN_OR_RETURN(std::shared_ptr<Variable> slot,
                         strategy.CreateVariable(slot_values[k], slot_options));
        RETURN_IF_ERROR(created(slot_options.name, slot));
        slots.push_back(std::move(slot));
      }
    }
    state.params.push_back(std::move(param));
    state.slots.push_back(std::move(slots));
  }
  return state;
}

}  // namespace models
}  // namespace distribute
