// The fit of the NCCL model's constants: it recovers constants that
// generated the measurements, moves only what it is asked to, is
// deterministic, and refuses what it cannot do.
#include "simulator/validation/fit.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "simulator/nccl_model.h"
#include "simulator/validation/validation.h"

namespace simulator {
namespace {

// Constants other than the defaults: the "cluster" the points come from.
NcclModelParams Truth() {
  NcclModelParams truth;
  truth.simple_efficiency[0] = 0.70;  // NVLink
  truth.hop_latency_us[0][0] = 0.60;  // LL over NVLink
  return truth;
}

// Ring all-reduces and all-gathers (LL and simple) on one DGX H100 and two,
// from latency to bandwidth sizes, "measured" as the truth predicts them; two
// sources.
std::vector<ValidationPoint> MeasuredPoints(const NcclModelParams& truth) {
  std::vector<ValidationPoint> points;
  int i = 0;
  for (const char* op : {"all_reduce", "all_gather"}) {
    for (int64_t bytes : {int64_t{8}, int64_t{4096}, int64_t{1} << 20,
                          int64_t{1} << 26, int64_t{1} << 30}) {
      for (int nodes : {1, 2}) {
        ValidationPoint p;
        p.set_id(absl::StrCat("p", i++));
        p.set_split("fit");
        p.set_source(nodes == 1 ? "single node runs" : "two node runs");
        p.set_op(op);
        p.set_topology(nodes == 1 ? "dgx_h100" : "dgx_h100_cluster:2");
        p.set_nodes(nodes);
        p.set_gpus_per_node(8);
        p.set_nccl_algo("ring");
        p.set_nccl_proto("ll,simple");
        p.set_bytes(bytes);
        p.set_time_us(1);  // replaced below
        absl::StatusOr<PointResult> r = PredictPoint(p, truth);
        EXPECT_TRUE(r.ok()) << r.status();
        if (r.ok()) p.set_time_us(r->predicted_us);
        points.push_back(p);
      }
    }
  }
  return points;
}

TEST(FitTest, RecoversTheConstantsThatMadeTheMeasurements) {
  const NcclModelParams truth = Truth();
  FitOptions options;
  options.names = {"simple_efficiency.nvlink", "hop_latency_us.ll.nvlink"};
  absl::StatusOr<FitResult> fit =
      FitNcclModelParams(MeasuredPoints(truth), options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_EQ(fit->points, 20);
  EXPECT_GT(fit->error_before, 0.05);
  EXPECT_LT(fit->error_after, 1e-3);
  EXPECT_NEAR(fit->params.simple_efficiency[0], 0.70, 0.70 * 0.01);
  EXPECT_NEAR(fit->params.hop_latency_us[0][0], 0.60, 0.60 * 0.02);
  EXPECT_EQ(fit->moved, options.names);
  // What was not named stays.
  const NcclModelParams defaults;
  EXPECT_EQ(fit->params.simple_efficiency[2], defaults.simple_efficiency[2]);
  EXPECT_EQ(fit->params.launch_per_gpu_us, defaults.launch_per_gpu_us);
}

TEST(FitTest, IsDeterministicAndNeverWorse) {
  const std::vector<ValidationPoint> points = MeasuredPoints(Truth());
  FitOptions options;  // every constant
  options.prior_weight = 0.1;
  absl::StatusOr<FitResult> a = FitNcclModelParams(points, options);
  absl::StatusOr<FitResult> b = FitNcclModelParams(points, options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(NcclModelParamsToText(a->params), NcclModelParamsToText(b->params));
  EXPECT_LE(a->error_after, a->error_before);
  // Efficiencies stay shares.
  NcclModelParams copy = a->params;
  for (const NcclModelParam& p : NcclModelParamList(copy)) {
    EXPECT_GT(*p.value, 0) << p.name;
    if (p.name.find("efficiency") != std::string::npos) {
      EXPECT_LE(*p.value, 1.0) << p.name;
    }
  }
}

TEST(FitTest, AnInfinitePriorMovesNothing) {
  FitOptions options;
  options.prior_weight = std::numeric_limits<double>::infinity();
  absl::StatusOr<FitResult> fit =
      FitNcclModelParams(MeasuredPoints(Truth()), options);
  ASSERT_TRUE(fit.ok()) << fit.status();
  EXPECT_TRUE(fit->moved.empty());
  EXPECT_EQ(fit->error_after, fit->error_before);
}

TEST(FitTest, CrossValidationPrefersNoPriorWhenTheTruthIsReachable) {
  FitOptions options;
  options.names = {"simple_efficiency.nvlink", "hop_latency_us.ll.nvlink"};
  absl::StatusOr<PriorChoice> choice =
      ChoosePriorWeight(MeasuredPoints(Truth()), options, {0, 10});
  ASSERT_TRUE(choice.ok()) << choice.status();
  ASSERT_EQ(choice->errors.size(), 2u);
  EXPECT_EQ(choice->weight, 0);
  EXPECT_LT(choice->errors[0], choice->errors[1]);
  EXPECT_GT(choice->start_error, choice->errors[0]);

  // Measurements the defaults already predict: fitting cannot beat them.
  absl::StatusOr<PriorChoice> none =
      ChoosePriorWeight(MeasuredPoints(NcclModelParams()), options, {0, 10});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(std::isinf(none->weight));
}

TEST(FitTest, Errors) {
  const std::vector<ValidationPoint> points = MeasuredPoints(Truth());
  FitOptions unknown;
  unknown.names = {"warp_speed"};
  EXPECT_EQ(FitNcclModelParams(points, unknown).status().code(),
            absl::StatusCode::kInvalidArgument);
  FitOptions holdout;
  holdout.split = "holdout";  // every point is in "fit"
  EXPECT_EQ(FitNcclModelParams(points, holdout).status().code(),
            absl::StatusCode::kInvalidArgument);
  FitOptions negative;
  negative.prior_weight = -1;
  EXPECT_EQ(FitNcclModelParams(points, negative).status().code(),
            absl::StatusCode::kInvalidArgument);
  FitOptions no_passes;
  no_passes.max_passes = 0;
  EXPECT_EQ(FitNcclModelParams(points, no_passes).status().code(),
            absl::StatusCode::kInvalidArgument);
  // One source cannot be cross-validated.
  std::vector<ValidationPoint> one_source;
  for (const ValidationPoint& p : points) {
    if (p.nodes() == 1) one_source.push_back(p);
  }
  EXPECT_EQ(ChoosePriorWeight(one_source, FitOptions(), {0, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ChoosePriorWeight(points, FitOptions(), {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace simulator
