// Fits the NCCL model's constants (NcclModelParams) to measurements: the
// fitted part of the built-in validation set, or a user's own runs.
//
// The fit minimizes the geometric-mean error of validation.h,
// exp(mean |ln(predicted / measured)|) - 1, over the points of one split,
// by coordinate descent on a multiplicative scale: each constant in turn
// is multiplied or divided by a step factor while that lowers the error;
// when no constant moves, the step shrinks (2, then its square roots) until
// it falls below 1.0005. Efficiencies stay at most 1, every constant above
// 0. The search is deterministic (the same points and start give the same
// constants) and finds a local minimum: the model's argmin over NCCL's
// algorithms makes the error piecewise smooth.
//
// Example:
//   absl::StatusOr<std::vector<ValidationPoint>> points =
//       BuiltinValidationPoints();
//   absl::StatusOr<FitResult> fit = FitNcclModelParams(*points, {});
//   // fit->params: the fitted constants; fit->error_after <=
//   // fit->error_before, both over the "fit" split.
//   std::cout << NcclModelParamsToText(fit->params);
#ifndef SIMULATOR_VALIDATION_FIT_H_
#define SIMULATOR_VALIDATION_FIT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "simulator/nccl_model.h"
#include "simulator/validation/validation.pb.h"

namespace simulator {

struct FitOptions {
  // The constants to fit, by NcclModelParamList name; empty: all of them.
  std::vector<std::string> names;
  // Fit on the points of this split only ("fit", "holdout"); empty: every
  // point given.
  std::string split = "fit";
  // Where the search starts (and what the constants not fitted keep).
  NcclModelParams start;
  // Weight of the prior: the search minimizes
  //   mean |ln(predicted / measured)| + prior_weight * mean (ln(c / c0))^2
  // over the fitted constants c and their start values c0 (a log-normal
  // prior around the sourced defaults), so that a constant moves far only
  // where the points demand it. 0: no prior; infinity: nothing moves.
  double prior_weight = 0;
  // Passes over the constants at most (each pass tries every constant).
  int max_passes = 400;
};

struct FitResult {
  NcclModelParams params;
  // Points fitted on, and their geometric-mean error before and after.
  int points = 0;
  double error_before = 0;
  double error_after = 0;
  // Predictions of the whole set made by the search.
  int evaluations = 0;
  // The constants that moved, in NcclModelParamList's order.
  std::vector<std::string> moved;
};

// INVALID_ARGUMENT for an unknown constant name, a split that no point has,
// a negative prior_weight or max_passes below 1; the errors of
// PreparePoints (validation.h).
absl::StatusOr<FitResult> FitNcclModelParams(
    const std::vector<ValidationPoint>& points, const FitOptions& options);

// The prior weight chosen by leave-one-source-out cross-validation on the
// points of options.split: for each weight, every source group (a point's
// source_group, else its source) is predicted by constants fitted on the
// other groups; the weight whose predictions err least (geometric mean
// over the points) wins, ties to the larger weight. When the start
// constants, not fitted at all, err no more than the best weight, the
// choice is infinity: the points do not support moving them. No point
// outside the split is looked at.
struct PriorChoice {
  double weight = 0;
  // The cross-validated error of each weight tried, in `weights` order.
  std::vector<double> errors;
  // The error of the start constants on the split's points.
  double start_error = 0;
};
// INVALID_ARGUMENT for an empty or negative `weights`, or fewer than two
// source groups in the split; FitNcclModelParams' errors.
absl::StatusOr<PriorChoice> ChoosePriorWeight(
    const std::vector<ValidationPoint>& points, const FitOptions& options,
    const std::vector<double>& weights);

}  // namespace simulator

#endif  // SIMULATOR_VALIDATION_FIT_H_
