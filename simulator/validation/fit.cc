#include "simulator/validation/fit.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/status_macros.h"
#include "simulator/validation/validation.h"

namespace simulator {
namespace {

// The step factor shrinks to its square root until it is below this.
constexpr double kSmallestStep = 1.0005;
// A move must lower the error by more than this to be taken (rounding).
constexpr double kMinGain = 1e-12;

// Mean |ln(predicted / measured)| of the points under `params`.
absl::StatusOr<double> MeanAbsLogError(const std::vector<PreparedPoint>& points,
                                       const NcclModelParams& params) {
  double sum = 0;
  for (const PreparedPoint& p : points) {
    ASSIGN_OR_RETURN(PointResult r, PredictPrepared(p, params));
    sum += std::fabs(r.log_ratio);
  }
  return sum / static_cast<double>(points.size());
}

}  // namespace

absl::StatusOr<FitResult> FitNcclModelParams(
    const std::vector<ValidationPoint>& points, const FitOptions& options) {
  if (!(options.prior_weight >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the prior weight must be 0 or more, not ", options.prior_weight));
  }
  if (options.max_passes < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a fit needs at least one pass, not ", options.max_passes));
  }
  std::vector<ValidationPoint> chosen;
  for (const ValidationPoint& p : points) {
    if (options.split.empty() || p.split() == options.split) {
      chosen.push_back(p);
    }
  }
  if (chosen.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no point to fit on: none of the ", points.size(),
                     " points is in split '", options.split, "'"));
  }
  ASSIGN_OR_RETURN(std::vector<PreparedPoint> prepared, PreparePoints(chosen));

  FitResult result;
  result.params = options.start;
  std::vector<NcclModelParam> all = NcclModelParamList(result.params);
  std::vector<NcclModelParam> free;
  if (options.names.empty()) {
    free = all;
  } else {
    for (const std::string& name : options.names) {
      auto it =
          std::find_if(all.begin(), all.end(),
                       [&](const NcclModelParam& p) { return p.name == name; });
      if (it == all.end()) {
        std::vector<std::string> known;
        for (const NcclModelParam& p : all) known.push_back(p.name);
        return absl::InvalidArgumentError(
            absl::StrCat("the NCCL model has no constant '", name,
                         "'; its constants are ", absl::StrJoin(known, ", ")));
      }
      free.push_back(*it);
    }
  }

  std::vector<double> initial;
  for (const NcclModelParam& p : free) initial.push_back(*p.value);
  auto prior = [&]() {
    if (options.prior_weight == 0 || free.empty()) return 0.0;
    double sum = 0;
    for (size_t i = 0; i < free.size(); ++i) {
      const double l = std::log(*free[i].value / initial[i]);
      sum += l * l;
    }
    return options.prior_weight * sum / static_cast<double>(free.size());
  };
  ASSIGN_OR_RETURN(double start, MeanAbsLogError(prepared, result.params));
  double loss = start;
  result.points = static_cast<int>(prepared.size());
  result.error_before = std::exp(loss) - 1;
  result.evaluations = 1;
  double data_loss = loss;

  double step = std::isinf(options.prior_weight) ? 1.0 : 2.0;
  for (int pass = 0; pass < options.max_passes && step >= kSmallestStep;
       ++pass) {
    bool moved = false;
    for (NcclModelParam& p : free) {
      const bool efficiency = absl::StrContains(p.name, "efficiency");
      for (double factor : {step, 1.0 / step}) {
        const double old_value = *p.value;
        double value = old_value * factor;
        if (efficiency) value = std::min(value, 1.0);
        if (!(value > 0) || value == old_value) continue;
        *p.value = value;
        absl::StatusOr<double> trial = MeanAbsLogError(prepared, result.params);
        ++result.evaluations;
        RETURN_IF_ERROR(trial.status());
        const double objective = *trial + prior();
        if (objective < loss - kMinGain) {
          loss = objective;
          data_loss = *trial;
          moved = true;
          break;
        }
        *p.value = old_value;
      }
    }
    if (!moved) step = std::sqrt(step);
  }
  result.error_after = std::exp(data_loss) - 1;
  for (size_t i = 0; i < free.size(); ++i) {
    if (*free[i].value != initial[i]) result.moved.push_back(free[i].name);
  }
  return result;
}

absl::StatusOr<PriorChoice> ChoosePriorWeight(
    const std::vector<ValidationPoint>& points, const FitOptions& options,
    const std::vector<double>& weights) {
  if (weights.empty()) {
    return absl::InvalidArgumentError("no prior weight to choose from");
  }
  std::vector<std::string> groups;
  auto group_of = [](const ValidationPoint& p) {
    return p.source_group().empty() ? p.source() : p.source_group();
  };
  for (const ValidationPoint& p : points) {
    if (!options.split.empty() && p.split() != options.split) continue;
    if (std::find(groups.begin(), groups.end(), group_of(p)) == groups.end()) {
      groups.push_back(group_of(p));
    }
  }
  if (groups.size() < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cross-validation needs points from two sources or more in split '",
        options.split, "'; ", groups.size(), " found"));
  }
  PriorChoice choice;
  double best = 0;
  for (size_t w = 0; w < weights.size(); ++w) {
    if (!(weights[w] >= 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the prior weight must be 0 or more, not ", weights[w]));
    }
    double sum = 0;
    int count = 0;
    for (const std::string& group : groups) {
      std::vector<ValidationPoint> train, test;
      for (const ValidationPoint& p : points) {
        if (!options.split.empty() && p.split() != options.split) continue;
        (group_of(p) == group ? test : train).push_back(p);
      }
      FitOptions fold = options;
      fold.prior_weight = weights[w];
      ASSIGN_OR_RETURN(FitResult fitted, FitNcclModelParams(train, fold));
      ASSIGN_OR_RETURN(std::vector<PreparedPoint> prepared,
                       PreparePoints(test));
      ASSIGN_OR_RETURN(double error, MeanAbsLogError(prepared, fitted.params));
      sum += error * static_cast<double>(test.size());
      count += static_cast<int>(test.size());
    }
    const double error = std::exp(sum / count) - 1;
    choice.errors.push_back(error);
    if (w == 0 || error <= best) {
      best = error;
      choice.weight = weights[w];
    }
  }
  FitOptions unfitted = options;
  unfitted.prior_weight = std::numeric_limits<double>::infinity();
  ASSIGN_OR_RETURN(FitResult start, FitNcclModelParams(points, unfitted));
  choice.start_error = start.error_before;
  if (choice.start_error <= best) choice.weight = unfitted.prior_weight;
  return choice;
}

}  // namespace simulator
