// Checks the simulator's predictions against published measurements.
//
// A validation set (validation.proto) lists nccl-tests results with the
// setup of each run. PredictPoint runs one through the NCCL model on the
// built-in topology it names, placed and launched as the run was (nodes x
// gpus_per_node ranks, nccl-tests' -g, -n, NCCL_ALGO/NCCL_PROTO, NVLS, SHARP);
// Validate does every point and summarizes the error per category.
//
// The error of a point is |ln(predicted / measured)|; a category's error is
// the geometric mean error, exp(mean |ln(predicted / measured)|) - 1, so a
// prediction twice or half the measurement counts alike (100%).
//
// Example:
//   absl::StatusOr<std::vector<ValidationPoint>> points =
//       BuiltinValidationPoints();
//   absl::StatusOr<ValidationReport> report = Validate(*points);
//   for (const CategoryError& c : report->categories)
//     std::cout << c.category << " " << c.points << " " << c.error << "\n";
#ifndef SIMULATOR_VALIDATION_VALIDATION_H_
#define SIMULATOR_VALIDATION_VALIDATION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/group_hardware.h"
#include "simulator/nccl_model.h"
#include "simulator/validation/validation.pb.h"

namespace simulator {

// The points of the built-in validation set (simulator/validation/*.textproto),
// checked with CheckValidationPoints.
absl::StatusOr<std::vector<ValidationPoint>> BuiltinValidationPoints();

// The points of a ValidationSet file in protobuf text format, checked.
// NOT_FOUND when it cannot be read, INVALID_ARGUMENT when it does not parse
// or a point is not valid.
absl::StatusOr<std::vector<ValidationPoint>> LoadValidationPoints(
    const std::string& path);

// INVALID_ARGUMENT naming the point and the field when a point lacks what a
// prediction needs (id, a split of "fit" or "holdout", a source, a known
// op, a topology, positive nodes, gpus_per_node and bytes, a measured time
// or busbw), when ids repeat, or when one source_group has both splits.
absl::Status CheckValidationPoints(const std::vector<ValidationPoint>& points);

// nccl-tests' measured time of the point, microseconds: time_us, else
// computed from busbw_GBps (bytes / (busbw / bus factor)).
double MeasuredTimeUs(const ValidationPoint& point);

// "latency" (up to 64 KiB), "mid" (below 256 MiB), "bandwidth".
std::string SizeClass(int64_t bytes);

struct PointResult {
  ValidationPoint point;
  double predicted_us = 0;
  double measured_us = 0;
  // ln(predicted / measured): positive when the model is slow.
  double log_ratio = 0;
  // "nvls/simple".
  std::string algorithm;
};

// Predicts one point with the model's constants `params`. The errors of
// loading its topology, placing its ranks and the NCCL model, prefixed with
// the point's id.
absl::StatusOr<PointResult> PredictPoint(
    const ValidationPoint& point,
    const NcclModelParams& params = NcclModelParams());

// A point with its ranks placed and its hardware described, to be
// predicted again and again under other constants (a fit).
struct PreparedPoint {
  ValidationPoint point;
  NcclOp op = NcclOp::kAllReduce;
  GroupHardware hardware;
  NcclRunOptions options;
  double measured_us = 0;
};
// Every point prepared; PredictPoint's errors.
absl::StatusOr<std::vector<PreparedPoint>> PreparePoints(
    const std::vector<ValidationPoint>& points);
// PredictPoint of a prepared point (its options' params replaced by
// `params`).
absl::StatusOr<PointResult> PredictPrepared(const PreparedPoint& prepared,
                                            const NcclModelParams& params);

struct CategoryError {
  // "all", "split=holdout", "size=latency", "nodes=multi", "op=all_reduce",
  // "gpu=dgx_h100", each also within a split: "holdout/size=latency".
  std::string category;
  int points = 0;
  // exp(mean |ln(predicted / measured)|) - 1.
  double error = 0;
  // exp(mean ln(predicted / measured)) - 1: positive when the model is slow
  // on average.
  double bias = 0;
};

struct ValidationReport {
  std::vector<PointResult> results;
  std::vector<CategoryError> categories;

  // The category's entry; nullptr when no point falls in it.
  const CategoryError* Find(absl::string_view category) const;
};

// Predicts every point with the constants `params` (stopping at the first
// error) and summarizes.
absl::StatusOr<ValidationReport> Validate(
    const std::vector<ValidationPoint>& points,
    const NcclModelParams& params = NcclModelParams());

}  // namespace simulator

#endif  // SIMULATOR_VALIDATION_VALIDATION_H_
