#include "distribute/models/mlp.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/models/execution_context.h"
#include "distribute/models/gradient_check.h"
#include "distribute/models/losses.h"
#include "gtest/gtest.h"

namespace distribute {
namespace models {
namespace {

using devices::DType;
using devices::Shape;
using devices::Tensor;

TEST(MlpTest, CreateRejectsBadSizes) {
  EXPECT_EQ(Mlp::Create({4}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Mlp::Create({4, 0, 2}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Mlp::Create({4, 2}, DType::kInt32).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MlpTest, DescribesItsParameters) {
  Mlp mlp = *Mlp::Create({4, 8, 3});
  EXPECT_EQ(mlp.layers().size(), 2u);
  EXPECT_EQ(mlp.NumParams(), 4 * 8 + 8 + 8 * 3 + 3);
  EXPECT_EQ(mlp.NumParamTensors(), 4);
  EXPECT_EQ(mlp.ParamShapes(), std::vector<Shape>({Shape({4, 8}), Shape({8}),
                                                   Shape({8, 3}), Shape({3})}));
  EXPECT_EQ(mlp.ParamNames(),
            std::vector<std::string>({"dense_0/kernel", "dense_0/bias",
                                      "dense_1/kernel", "dense_1/bias"}));
  // Forward: 2*4*8 + 8 + 8 (relu) + 2*8*3 + 3.
  EXPECT_EQ(mlp.ForwardFlopsPerExample(), 64 + 8 + 8 + 48 + 3);
  // Backward: layer 1 (dx 48, dW 48, db 3), relu 8, layer 0 (dW 64, db 8).
  EXPECT_EQ(mlp.FlopsPerExample(),
            mlp.ForwardFlopsPerExample() + 48 + 48 + 3 + 8 + 64 + 8);
}

TEST(MlpTest, InitParamsIsDeterministicPerSeed) {
  ExecutionContext ctx;
  Mlp mlp = *Mlp::Create({6, 6, 6});
  std::vector<Tensor> a = *mlp.InitParams(ctx, 3);
  std::vector<Tensor> b = *mlp.InitParams(ctx, 3);
  std::vector<Tensor> c = *mlp.InitParams(ctx, 4);
  ASSERT_EQ(a.size(), 4u);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].ToVector<float>(), b[i].ToVector<float>()) << i;
  }
  EXPECT_NE(a[0].ToVector<float>(), c[0].ToVector<float>());
  // Same-sized layers get different seeds, hence different kernels.
  EXPECT_NE(a[0].ToVector<float>(), a[2].ToVector<float>());
  EXPECT_NE(Mlp::LayerSeed(3, 0), Mlp::LayerSeed(3, 1));
  EXPECT_EQ(Mlp::LayerSeed(3, 1), Mlp::LayerSeed(3, 1));
}

TEST(MlpTest, GradientsMatchFiniteDifferences) {
  constexpr int64_t kBatch = 6;
  ExecutionContext ctx;
  Mlp mlp = *Mlp::Create({3, 5, 4, 3}, DType::kFloat64);
  std::vector<Tensor> params;
  unsigned seed = 100;
  for (const Shape& shape : mlp.ParamShapes()) {
    params.push_back(TestTensor(shape, seed++));
  }
  Tensor x = TestTensor({kBatch, 3}, 1, -2, 2);
  Tensor labels = *Tensor::FromVector<int64_t>({0, 1, 2, 2, 1, 0}, {kBatch});
  auto loss = [&]() -> absl::StatusOr<double> {
    ASSIGN_OR_RETURN(MlpActivations acts, mlp.Forward(ctx, params, x));
    ASSIGN_OR_RETURN(LossAndGradient l, SparseSoftmaxCrossEntropyLoss(
                                            ctx, acts.logits, labels, kBatch));
    return *l.loss.data<double>();
  };
  absl::StatusOr<MlpActivations> acts = mlp.Forward(ctx, params, x);
  ASSERT_TRUE(acts.ok()) << acts.status();
  EXPECT_EQ(acts->logits.shape(), Shape({kBatch, 3}));
  absl::StatusOr<LossAndGradient> l =
      SparseSoftmaxCrossEntropyLoss(ctx, acts->logits, labels, kBatch);
  ASSERT_TRUE(l.ok()) << l.status();
  absl::StatusOr<std::vector<Tensor>> grads =
      mlp.Backward(ctx, params, *acts, l->dlogits);
  ASSERT_TRUE(grads.ok()) << grads.status();
  ASSERT_EQ(grads->size(), params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ((*grads)[i].shape(), params[i].shape()) << i;
    absl::StatusOr<std::vector<double>> numeric =
        NumericalGradient(params[i], loss);
    ASSERT_TRUE(numeric.ok()) << numeric.status();
    EXPECT_LT(MaxGradientError((*grads)[i], *numeric), 1e-7)
        << mlp.ParamNames()[i];
  }
}

TEST(MlpTest, ReportedFlopsArePerExampleTimesBatch) {
  constexpr int64_t kBatch = 16;
  CostRecorder recorder;
  ExecutionContext ctx = recorder.Context();
  Mlp mlp = *Mlp::Create({10, 20, 20, 4});
  std::vector<Tensor> params = *mlp.InitParams(ctx, 1);
  recorder.Clear();
  Tensor x = *Tensor::Host(DType::kFloat32, {kBatch, 10});
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    x.data<float>()[i] = static_cast<float>(i % 7) - 3;
  }
  absl::StatusOr<MlpActivations> acts = mlp.Forward(ctx, params, x);
  ASSERT_TRUE(acts.ok()) << acts.status();
  EXPECT_EQ(recorder.total_flops(), kBatch * mlp.ForwardFlopsPerExample());
  // 3 MatMul + 3 BiasAdd + 2 Relu.
  EXPECT_EQ(recorder.count(), 8);
  Tensor dlogits = *Tensor::Host(DType::kFloat32, {kBatch, 4});
  for (int64_t i = 0; i < dlogits.num_elements(); ++i) {
    dlogits.data<float>()[i] = 0.01f * static_cast<float>(i % 5);
  }
  ASSERT_TRUE(mlp.Backward(ctx, params, *acts, dlogits).ok());
  EXPECT_EQ(recorder.total_flops(), kBatch * mlp.FlopsPerExample());
  // Backward: 5 MatMul (no dx for the first layer), 3 BiasAddGrad,
  // 2 ReluGrad.
  EXPECT_EQ(recorder.CountOf("MatMul"), 3 + 5);
  EXPECT_EQ(recorder.CountOf("BiasAddGrad"), 3);
  EXPECT_EQ(recorder.CountOf("ReluGrad"), 2);
}

TEST(MlpTest, RejectsMismatchedArguments) {
  ExecutionContext ctx;
  Mlp mlp = *Mlp::Create({3, 4, 2}, DType::kFloat64);
  std::vector<Tensor> params = *mlp.InitParams(ctx, 1);
  Tensor x = TestTensor({2, 3}, 1);
  std::vector<Tensor> too_few(params.begin(), params.end() - 1);
  EXPECT_EQ(mlp.Forward(ctx, too_few, x).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mlp.Forward(ctx, params, TestTensor({2, 4}, 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<MlpActivations> acts = mlp.Forward(ctx, params, x);
  ASSERT_TRUE(acts.ok()) << acts.status();
  EXPECT_EQ(
      mlp.Backward(ctx, params, *acts, TestTensor({2, 3}, 2)).status().code(),
      absl::StatusCode::kInvalidArgument);
  MlpActivations wrong = *acts;
  wrong.pre_activations.clear();
  EXPECT_EQ(
      mlp.Backward(ctx, params, wrong, TestTensor({2, 2}, 2)).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      mlp.Backward(ctx, too_few, *acts, TestTensor({2, 2}, 2)).status().code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace models
}  // namespace distribute
