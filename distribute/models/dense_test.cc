#include "distribute/models/dense.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "devices/elementwise_kernels.h"
#include "devices/kernel_costs.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/models/execution_context.h"
#include "distribute/models/gradient_check.h"
#include "gtest/gtest.h"

namespace distribute {
namespace models {
namespace {

using devices::DType;
using devices::Shape;
using devices::Tensor;

TEST(DenseTest, ForwardComputesXWPlusB) {
  CostRecorder recorder;
  ExecutionContext ctx = recorder.Context();
  absl::StatusOr<Dense> dense = Dense::Create(2, 3);
  ASSERT_TRUE(dense.ok()) << dense.status();
  std::vector<Tensor> params = {
      *Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3}),
      *Tensor::FromVector<float>({0.5f, -1, 2}, {3})};
  Tensor x = *Tensor::FromVector<float>({1, 1, 2, -1}, {2, 2});
  absl::StatusOr<Tensor> y = dense->Forward(ctx, params, x);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->shape(), Shape({2, 3}));
  EXPECT_EQ(y->ToVector<float>(),
            std::vector<float>({5.5f, 6, 11, -1.5f, -2, 2}));
}

TEST(DenseTest, ForwardReportsMatMulAndBiasAddCosts) {
  constexpr int64_t kBatch = 8, kIn = 5, kOut = 3;
  CostRecorder recorder;
  ExecutionContext ctx = recorder.Context();
  Dense dense = *Dense::Create(kIn, kOut);
  std::vector<Tensor> params = *dense.InitParams(ctx, 1);
  recorder.Clear();
  Tensor x = *Tensor::Host(DType::kFloat32, {kBatch, kIn});
  ASSERT_TRUE(devices::Fill(0.5, x).ok());
  ASSERT_TRUE(dense.Forward(ctx, params, x).ok());
  std::vector<devices::KernelCost> costs = recorder.costs();
  ASSERT_EQ(costs.size(), 2u);
  EXPECT_EQ(costs[0].name, "MatMul");
  EXPECT_EQ(costs[0].flops, 2.0 * kBatch * kIn * kOut);
  EXPECT_EQ(costs[1].name, "BiasAdd");
  EXPECT_EQ(costs[1].flops, kBatch * kOut);
  EXPECT_EQ(recorder.total_flops(), kBatch * dense.ForwardFlopsPerExample());
}

TEST(DenseTest, GradientsMatchFiniteDifferences) {
  ExecutionContext ctx;
  Dense dense = *Dense::Create(4, 3, /*use_bias=*/true, DType::kFloat64);
  std::vector<Tensor> params = {TestTensor({4, 3}, 1), TestTensor({3}, 2)};
  Tensor x = TestTensor({5, 4}, 3);
  Tensor g = TestTensor({5, 3}, 4);  // L = sum(y * g), so dL/dy = g.
  auto loss = [&]() -> absl::StatusOr<double> {
    ASSIGN_OR_RETURN(Tensor y, dense.Forward(ctx, params, x));
    return Dot(y, g);
  };
  absl::StatusOr<DenseGradients> grads = dense.Backward(ctx, params, x, g);
  ASSERT_TRUE(grads.ok()) << grads.status();

  absl::StatusOr<std::vector<double>> dx = NumericalGradient(x, loss);
  ASSERT_TRUE(dx.ok()) << dx.status();
  EXPECT_LT(MaxGradientError(grads->dx, *dx), 1e-7);
  absl::StatusOr<std::vector<double>> dw = NumericalGradient(params[0], loss);
  ASSERT_TRUE(dw.ok()) << dw.status();
  EXPECT_LT(MaxGradientError(grads->dw, *dw), 1e-7);
  absl::StatusOr<std::vector<double>> db = NumericalGradient(params[1], loss);
  ASSERT_TRUE(db.ok()) << db.status();
  EXPECT_LT(MaxGradientError(grads->db, *db), 1e-7);
  // A wrong gradient would fail the check: dw is not dx's size.
  EXPECT_TRUE(std::isinf(MaxGradientError(grads->dw, *dx)));
}

TEST(DenseTest, WithoutBiasOrDx) {
  CostRecorder recorder;
  ExecutionContext ctx = recorder.Context();
  Dense dense = *Dense::Create(4, 2, /*use_bias=*/false, DType::kFloat64);
  EXPECT_EQ(dense.NumParams(), 8);
  EXPECT_EQ(dense.ParamShapes(), std::vector<Shape>({Shape({4, 2})}));
  std::vector<Tensor> params = *dense.InitParams(ctx, 7);
  ASSERT_EQ(params.size(), 1u);
  Tensor x = TestTensor({3, 4}, 1);
  Tensor dy = TestTensor({3, 2}, 2);
  recorder.Clear();
  absl::StatusOr<DenseGradients> grads =
      dense.Backward(ctx, params, x, dy, /*compute_dx=*/false);
  ASSERT_TRUE(grads.ok()) << grads.status();
  EXPECT_EQ(grads->dw.shape(), Shape({4, 2}));
  EXPECT_EQ(grads->dx.num_elements(), 1);  // Default (empty) tensor.
  EXPECT_FALSE(grads->dx.has_data());
  EXPECT_FALSE(grads->db.has_data());
  EXPECT_EQ(recorder.count(), 1);
  EXPECT_EQ(recorder.total_flops(),
            3 * dense.BackwardFlopsPerExample(/*compute_dx=*/false));
}

TEST(DenseTest, InitParamsIsGlorotUniformAndDeterministic) {
  ExecutionContext ctx;
  Dense dense = *Dense::Create(30, 20);
  std::vector<Tensor> a = *dense.InitParams(ctx, 5);
  std::vector<Tensor> b = *dense.InitParams(ctx, 5);
  std::vector<Tensor> c = *dense.InitParams(ctx, 6);
  ASSERT_EQ(a.size(), 2u);
  EXPECT_EQ(a[0].ToVector<float>(), b[0].ToVector<float>());
  EXPECT_NE(a[0].ToVector<float>(), c[0].ToVector<float>());
  const float limit = static_cast<float>(std::sqrt(6.0 / 50));
  float max_abs = 0;
  for (float w : a[0].ToVector<float>()) {
    EXPECT_LT(std::abs(w), limit);
    max_abs = std::max(max_abs, std::abs(w));
  }
  EXPECT_GT(max_abs, 0.9f * limit);  // 600 draws fill the range.
  EXPECT_EQ(a[1].ToVector<float>(), std::vector<float>(20, 0.0f));
}

TEST(DenseTest, CreateRejectsBadSizesAndDTypes) {
  EXPECT_EQ(Dense::Create(0, 3).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Dense::Create(3, -1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Dense::Create(3, 3, true, DType::kFloat16).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(DenseTest, ForwardAndBackwardRejectMismatchedTensors) {
  ExecutionContext ctx;
  Dense dense = *Dense::Create(4, 3, true, DType::kFloat64);
  std::vector<Tensor> params = *dense.InitParams(ctx, 1);
  Tensor x = TestTensor({2, 4}, 1);
  EXPECT_EQ(dense.Forward(ctx, {params[0]}, x).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dense.Forward(ctx, {params[1], params[0]}, x).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dense.Forward(ctx, params, TestTensor({2, 5}, 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(dense.Forward(ctx, params, TestTensor({8}, 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tensor x32 = *Tensor::Host(DType::kFloat32, {2, 4});
  EXPECT_EQ(dense.Forward(ctx, params, x32).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      dense.Backward(ctx, params, x, TestTensor({3, 3}, 2)).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      dense.Backward(ctx, params, x, TestTensor({2, 4}, 2)).status().code(),
      absl::StatusCode::kInvalidArgument);
  Tensor shape_only = Tensor::ShapeOnly(DType::kFloat64, {2, 4}, "sim:0");
  EXPECT_EQ(dense.Forward(ctx, params, shape_only).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace models
}  // namespace distribute
