#include "distribute/models/relu.h"

#include <vector>

#include "absl/status/status.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/models/execution_context.h"
#include "distribute/models/gradient_check.h"
#include "gtest/gtest.h"

namespace distribute {
namespace models {
namespace {

using devices::DType;
using devices::Tensor;

TEST(ReluTest, ForwardAndBackwardValues) {
  CostRecorder recorder;
  ExecutionContext ctx = recorder.Context();
  const Relu relu;
  Tensor x = *Tensor::FromVector<float>({-2, 0, 3, -0.5f, 1, 0.25f}, {2, 3});
  absl::StatusOr<Tensor> y = relu.Forward(ctx, x);
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(y->ToVector<float>(), std::vector<float>({0, 0, 3, 0, 1, 0.25f}));
  Tensor dy = *Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  absl::StatusOr<Tensor> dx = relu.Backward(ctx, x, dy);
  ASSERT_TRUE(dx.ok()) << dx.status();
  // The gradient at 0 is 0, as in TensorFlow.
  EXPECT_EQ(dx->ToVector<float>(), std::vector<float>({0, 0, 3, 0, 5, 6}));
  ASSERT_EQ(recorder.count(), 2);
  EXPECT_EQ(recorder.costs()[0].name, "Relu");
  EXPECT_EQ(recorder.costs()[0].flops, 6 * Relu::kForwardFlopsPerElement);
  EXPECT_EQ(recorder.costs()[1].name, "ReluGrad");
  EXPECT_EQ(recorder.costs()[1].flops, 6 * Relu::kBackwardFlopsPerElement);
}

TEST(ReluTest, GradientMatchesFiniteDifferences) {
  ExecutionContext ctx;
  const Relu relu;
  Tensor x = TestTensor({4, 5}, 11);
  Tensor g = TestTensor({4, 5}, 12);
  absl::StatusOr<Tensor> dx = relu.Backward(ctx, x, g);
  ASSERT_TRUE(dx.ok()) << dx.status();
  absl::StatusOr<std::vector<double>> numeric =
      NumericalGradient(x, [&]() -> absl::StatusOr<double> {
        ASSIGN_OR_RETURN(Tensor y, relu.Forward(ctx, x));
        return Dot(y, g);
      });
  ASSERT_TRUE(numeric.ok()) << numeric.status();
  EXPECT_LT(MaxGradientError(*dx, *numeric), 1e-7);
  // Both signs occur, so the check covers the mask.
  int positive = 0;
  for (double v : x.ToVector<double>()) positive += v > 0;
  EXPECT_GT(positive, 0);
  EXPECT_LT(positive, 20);
}

TEST(ReluTest, RejectsBadTensors) {
  ExecutionContext ctx;
  const Relu relu;
  Tensor ints = *Tensor::FromVector<int32_t>({1, -1}, {2});
  EXPECT_EQ(relu.Forward(ctx, ints).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tensor x = TestTensor({2, 2}, 1);
  EXPECT_EQ(relu.Backward(ctx, x, TestTensor({4}, 2)).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tensor shape_only = Tensor::ShapeOnly(DType::kFloat64, {2, 2}, "sim:0");
  EXPECT_EQ(relu.Forward(ctx, shape_only).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace models
}  // namespace distribute
