#include "devices/training_kernels.h"

#include <cmath>
#include <vector>

#include "absl/status/status.h"
#include "devices/kernel_costs.h"
#include "devices/tensor.h"
#include "gtest/gtest.h"

namespace devices {
namespace {

template <typename T>
Tensor Make(const std::vector<T>& values, Shape shape) {
  return *Tensor::FromVector<T>(values, std::move(shape));
}

TEST(BiasAddTest, AddsTheBiasToEveryRow) {
  Tensor x = Make<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor b = Make<float>({10, 20, 30}, {3});
  absl::StatusOr<KernelCost> cost = BiasAdd(b, x);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(x.ToVector<float>(), std::vector<float>({11, 22, 33, 14, 25, 36}));
  EXPECT_EQ(cost->name, "BiasAdd");
  EXPECT_EQ(cost->flops, 6);
  EXPECT_EQ(cost->bytes, 4 * (12 + 3));
  EXPECT_EQ(cost->flops, BiasAddCost(DType::kFloat32, 2, 3).flops);
}

TEST(BiasAddTest, RejectsBadArguments) {
  Tensor x = Make<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(BiasAdd(Make<float>({1, 2}, {2}), x).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BiasAdd(Make<double>({1, 2, 3}, {3}), x).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tensor ints = Make<int32_t>({1, 2}, {1, 2});
  EXPECT_EQ(BiasAdd(Make<int32_t>({1, 2}, {2}), ints).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tensor shape_only = Tensor::ShapeOnly(DType::kFloat32, {2, 3}, "sim:0");
  EXPECT_EQ(BiasAdd(Make<float>({1, 2, 3}, {3}), shape_only).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(BiasAddGradTest, SumsColumns) {
  Tensor dy = Make<double>({1, 2, 3, 4, 5, 6}, {3, 2});
  Tensor db = *Tensor::Host(DType::kFloat64, {2});
  absl::StatusOr<KernelCost> cost = BiasAddGrad(dy, db);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(db.ToVector<double>(), std::vector<double>({9, 12}));
  EXPECT_EQ(cost->flops, 6);
  EXPECT_EQ(cost->bytes, 8 * (6 + 2));
  Tensor wrong = *Tensor::Host(DType::kFloat64, {3});
  EXPECT_EQ(BiasAddGrad(dy, wrong).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AverageLossTest, UnweightedScalarAndPerExampleWeights) {
  Tensor loss = Make<float>({1, 2, 3, 4}, {4});
  Tensor out = *Tensor::Host(DType::kFloat32, Shape());
  absl::StatusOr<KernelCost> cost = AverageLoss(loss, nullptr, 8, out);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_FLOAT_EQ(*out.data<float>(), 10.0f / 8);
  EXPECT_EQ(cost->flops, 4 + 1);
  EXPECT_EQ(cost->bytes, 4 * (4 + 1));

  Tensor scalar = Make<float>({0.5f}, Shape());
  cost = AverageLoss(loss, &scalar, 8, out);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_FLOAT_EQ(*out.data<float>(), 5.0f / 8);
  EXPECT_EQ(cost->flops, 4 + 4 + 1);

  Tensor weights = Make<float>({1, 0, 2, 0}, {4});
  cost = AverageLoss(loss, &weights, 4, out);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_FLOAT_EQ(*out.data<float>(), 7.0f / 4);
  EXPECT_EQ(cost->bytes, 4 * (4 + 4 + 1));
}

TEST(AverageLossTest, RejectsBadArguments) {
  Tensor loss = Make<float>({1, 2, 3, 4}, {4});
  Tensor out = *Tensor::Host(DType::kFloat32, Shape());
  EXPECT_EQ(AverageLoss(loss, nullptr, 0, out).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AverageLoss(loss, nullptr, NAN, out).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tensor weights = Make<float>({1, 2}, {2});
  EXPECT_EQ(AverageLoss(loss, &weights, 4, out).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tensor double_weight = Make<double>({1}, {1});
  EXPECT_EQ(AverageLoss(loss, &double_weight, 4, out).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tensor vector_out = *Tensor::Host(DType::kFloat32, {1});
  EXPECT_EQ(AverageLoss(loss, nullptr, 4, vector_out).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RowScaleTest, ScalesEachRowInPlace) {
  Tensor x = Make<double>({1, 2, 3, 4}, {2, 2});
  Tensor w = Make<double>({2, -1}, {2});
  absl::StatusOr<KernelCost> cost = RowScale(x, w, 0.5, x);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_EQ(x.ToVector<double>(), std::vector<double>({1, 2, -1.5, -2}));
  EXPECT_EQ(cost->flops, 4 + 2);
  EXPECT_EQ(cost->bytes, 8 * (8 + 2));
  EXPECT_EQ(RowScale(x, Make<double>({1, 2, 3}, {3}), 1, x).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SgdUpdateTest, PlainMomentumAndNesterov) {
  // Plain: var -= lr * g.
  Tensor var = Make<double>({1, 2}, {2});
  Tensor grad = Make<double>({0.5, -1}, {2});
  absl::StatusOr<KernelCost> cost =
      SgdUpdate(var, grad, nullptr, 0.1, 0, false);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_DOUBLE_EQ(var.ToVector<double>()[0], 1 - 0.05);
  EXPECT_DOUBLE_EQ(var.ToVector<double>()[1], 2 + 0.1);
  EXPECT_EQ(cost->flops, 4);
  EXPECT_EQ(cost->bytes, 8 * 3 * 2);

  // Momentum: m = 0.9 * 1 - 0.1 * 0.5 = 0.85; var = 1 + 0.85.
  var = Make<double>({1}, {1});
  grad = Make<double>({0.5}, {1});
  Tensor m = Make<double>({1}, {1});
  cost = SgdUpdate(var, grad, &m, 0.1, 0.9, false);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_DOUBLE_EQ(m.ToVector<double>()[0], 0.85);
  EXPECT_DOUBLE_EQ(var.ToVector<double>()[0], 1.85);
  EXPECT_EQ(cost->flops, 4);
  EXPECT_EQ(cost->bytes, 8 * 5);

  // Nesterov: m = 0.85; var = 1 + 0.9 * 0.85 - 0.05.
  var = Make<double>({1}, {1});
  m = Make<double>({1}, {1});
  cost = SgdUpdate(var, grad, &m, 0.1, 0.9, true);
  ASSERT_TRUE(cost.ok()) << cost.status();
  EXPECT_DOUBLE_EQ(var.ToVector<double>()[0], 1 + 0.9 * 0.85 - 0.05);
  EXPECT_EQ(cost->flops, 7);
}

TEST(SgdUpdateTest, MomentumSlotMustMatchTheMomentum) {
  Tensor var = Make<float>({1}, {1});
  Tensor grad = Make<float>({1}, {1});
  Tensor m = Make<float>({0}, {1});
  EXPECT_EQ(SgdUpdate(var, grad, nullptr, 0.1, 0.9, false).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SgdUpdate(var, grad, &m, 0.1, 0, false).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tensor wrong = Make<float>({1, 2}, {2});
  EXPECT_EQ(SgdUpdate(var, wrong, nullptr, 0.1, 0, false).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AdamUpdateTest, OneStep) {
  Tensor var = Make<double>({1}, {1});
  Tensor grad = Make<double>({2}, {1});
  Tensor m = Make<double>({0}, {1});
  Tensor v = Make<double>({0}, {1});
  absl::StatusOr<KernelCost> cost =
      AdamUpdate(var, grad, m, v, /*alpha=*/0.5, 0.9, 0.999, 1e-7);
  ASSERT_TRUE(cost.ok()) << cost.status();
  const double m1 = 2 * (1 - 0.9);
  const double v1 = 4 * (1 - 0.999);
  EXPECT_DOUBLE_EQ(m.ToVector<double>()[0], m1);
  EXPECT_DOUBLE_EQ(v.ToVector<double>()[0], v1);
  EXPECT_DOUBLE_EQ(var.ToVector<double>()[0],
                   1 - m1 * 0.5 / (std::sqrt(v1) + 1e-7));
  EXPECT_EQ(cost->name, "AdamUpdate");
  EXPECT_EQ(cost->flops, 12);
  EXPECT_EQ(cost->bytes, 8 * 7);
  Tensor f32 = Make<float>({0}, {1});
  EXPECT_EQ(
      AdamUpdate(var, grad, f32, v, 0.5, 0.9, 0.999, 1e-7).status().code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace devices
