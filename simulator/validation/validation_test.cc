// The validation set: its points are well formed and split by source, every
// point predicts, and the model's error on the held-out part stays within
// the bound the docs state (docs/validation.md). A regression guard on
// computed numbers: the predictions are deterministic.
#include "simulator/validation/validation.h"

#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace simulator {
namespace {

// The documented bounds (docs/validation.md). A model change that raises an
// error above them must improve the model elsewhere or say why.
constexpr double kHoldoutBound = 0.25;
constexpr double kFitBound = 0.18;

std::vector<ValidationPoint> Points() {
  absl::StatusOr<std::vector<ValidationPoint>> points =
      BuiltinValidationPoints();
  EXPECT_TRUE(points.ok()) << points.status();
  return points.ok() ? *points : std::vector<ValidationPoint>{};
}

TEST(ValidationTest, TheSetCoversWhatItMust) {
  const std::vector<ValidationPoint> points = Points();
  EXPECT_GE(points.size(), 60u);
  int holdout = 0;
  std::set<std::string> ops, sizes, topologies;
  std::set<int> node_counts;
  for (const ValidationPoint& p : points) {
    if (p.split() == "holdout") ++holdout;
    ops.insert(p.op());
    sizes.insert(SizeClass(p.bytes()));
    node_counts.insert(p.nodes());
    EXPECT_FALSE(p.source().empty()) << p.id();
  }
  // At least a third held out.
  EXPECT_GE(3 * holdout, static_cast<int>(points.size()));
  EXPECT_EQ(ops.size(), 6u);
  EXPECT_EQ(sizes.size(), 3u);
  EXPECT_GE(node_counts.size(), 3u);  // one node and two multi-node setups
}

TEST(ValidationTest, EveryPointPredictsAndHoldoutStaysWithinItsBound) {
  absl::StatusOr<ValidationReport> report = Validate(Points());
  ASSERT_TRUE(report.ok()) << report.status();
  for (const PointResult& r : report->results) {
    EXPECT_GT(r.predicted_us, 0) << r.point.id();
    EXPECT_TRUE(std::isfinite(r.log_ratio)) << r.point.id();
  }
  const CategoryError* holdout = report->Find("split=holdout");
  const CategoryError* fit = report->Find("split=fit");
  ASSERT_NE(holdout, nullptr);
  ASSERT_NE(fit, nullptr);
  EXPECT_LE(holdout->error, kHoldoutBound);
  EXPECT_LE(fit->error, kFitBound);
}

TEST(ValidationTest, PredictionsAreDeterministic) {
  const std::vector<ValidationPoint> points = Points();
  absl::StatusOr<ValidationReport> a = Validate(points);
  absl::StatusOr<ValidationReport> b = Validate(points);
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->results.size(), b->results.size());
  for (size_t i = 0; i < a->results.size(); ++i) {
    EXPECT_EQ(a->results[i].predicted_us, b->results[i].predicted_us);
  }
}

TEST(ValidationTest, BadPointsAreRefusedWithTheirName) {
  ValidationPoint good;
  good.set_id("p1");
  good.set_split("fit");
  good.set_source("github.com/NVIDIA/nccl/issues/1");
  good.set_source_group("g");
  good.set_op("all_reduce");
  good.set_topology("dgx_h100");
  good.set_nodes(1);
  good.set_gpus_per_node(8);
  good.set_bytes(1 << 20);
  good.set_time_us(100);
  EXPECT_TRUE(CheckValidationPoints({good}).ok());

  ValidationPoint other = good;
  other.set_id("p2");
  other.set_split("holdout");
  absl::Status mixed = CheckValidationPoints({good, other});
  EXPECT_EQ(mixed.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mixed.message().find("both splits"), absl::string_view::npos);

  ValidationPoint no_measure = good;
  no_measure.set_time_us(0);
  EXPECT_NE(CheckValidationPoints({no_measure}).message().find("p1"),
            absl::string_view::npos);
  ValidationPoint bad_op = good;
  bad_op.set_op("gather");
  EXPECT_EQ(CheckValidationPoints({bad_op}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CheckValidationPoints({good, good}).code(),
            absl::StatusCode::kInvalidArgument);

  // A run on more nodes than the topology has.
  ValidationPoint too_big = good;
  too_big.set_topology("dgx_h100_cluster:2");
  too_big.set_nodes(4);
  absl::StatusOr<PointResult> r = PredictPoint(too_big);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("p1"), absl::string_view::npos);

  // busbw converts to time with nccl-tests' factor: 2(n-1)/n for 8 ranks.
  ValidationPoint bw = good;
  bw.set_time_us(0);
  bw.set_busbw_gbps(175);  // algbw 100 GB/s: 1 MiB in 10.49 us
  EXPECT_NEAR(MeasuredTimeUs(bw), (1 << 20) / 100e3, 1e-9);

  EXPECT_EQ(
      LoadValidationPoints("/nonexistent/points.textproto").status().code(),
      absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace simulator
