// A model's parameters and its optimizer's slots as variables of a
// strategy, created the way a training program needs them: under
// strategy.Scope(), each parameter a MEAN-aggregated variable (a
// MirroredVariable under Mirrored strategies), and for each parameter the
// optimizer's slots (Adam's "m" and "v", SGD's "momentum") as non-trainable
// MEAN variables placed with it (StrategyExtended::ColocateVarsWith) and
// named "<parameter>/<slot>".
//
// Example:
//   auto init = mlp->InitParams(exec, seed);
//   absl::StatusOr<TrainingVariables> state = CreateTrainingVariables(
//       strategy, mlp->ParamNames(), *init, *optimizer, exec,
//       [&](const std::string& name, const std::shared_ptr<Variable>& v) {
//         return checkpoint.TrackVariable(name, v);   // optional hook
//       });
//   // state->params[i], state->slots[i][k]
#ifndef DISTRIBUTE_MODELS_TRAINING_VARIABLES_H_
#define DISTRIBUTE_MODELS_TRAINING_VARIABLES_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "devices/tensor.h"
#include "distribute/models/execution_context.h"
#include "distribute/models/optimizer.h"
#include "distribute/strategy.h"
#include "distribute/variables.h"

namespace distribute {
namespace models {

struct TrainingVariables {
  // One per parameter, in the order given.
  std::vector<std::shared_ptr<Variable>> params;
  // slots[i][k]: slot k (in Optimizer::SlotNames() order) of parameter i.
  std::vector<std::vector<std::shared_ptr<Variable>>> slots;
};

// Called for each variable as it is created (parameters and slots), with
// its name; an error stops the creation and is returned.
using VariableCreatedFn = std::function<absl::Status(
    const std::string& name, const std::shared_ptr<Variable>& variable)>;

// Creates the variables in `strategy`'s scope (entering it here). `names`
// and `initial_values` pair up; the slots' initial values come from
// `optimizer.CreateSlotsForVariable` on `exec`. INVALID_ARGUMENT when the
// lists differ in length; otherwise the strategy's, the optimizer's or the
// hook's error.
absl::StatusOr<TrainingVariables> CreateTrainingVariables(
    Strategy& strategy, absl::Span<const std::string> names,
    absl::Span<const devices::Tensor> initial_values, Optimizer& optimizer,
    ExecutionContext& exec, const VariableCreatedFn& on_created = nullptr);

}  // namespace models
}  // namespace distribute

#endif  // DISTRIBUTE_MODELS_TRAINING_VARIABLES_H_
