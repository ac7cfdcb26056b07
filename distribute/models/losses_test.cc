#include "distribute/models/losses.h"

#include <cmath>
#include <optional>
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
using devices::Shape;
using devices::Tensor;

TEST(SparseSoftmaxCrossEntropyTest, ValuesForInt32AndInt64Labels) {
  ExecutionContext ctx;
  Tensor logits = *Tensor::FromVector<double>({1, 2, 3, 0, 0, 0}, {2, 3});
  for (Tensor labels : {*Tensor::FromVector<int32_t>({2, 0}, {2}),
                        *Tensor::FromVector<int64_t>({2, 0}, {2})}) {
    absl::StatusOr<SparseSoftmaxCrossEntropyResult> r =
        SparseSoftmaxCrossEntropy(ctx, logits, labels);
    ASSERT_TRUE(r.ok()) << r.status();
    const double lse = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
    std::vector<double> loss = r->per_example_loss.ToVector<double>();
    EXPECT_NEAR(loss[0], lse - 3, 1e-12);
    EXPECT_NEAR(loss[1], std::log(3.0), 1e-12);
    std::vector<double> d = r->dlogits.ToVector<double>();
    EXPECT_NEAR(d[0], std::exp(1 - lse), 1e-12);
    EXPECT_NEAR(d[2], std::exp(3 - lse) - 1, 1e-12);
    EXPECT_NEAR(d[3], 1.0 / 3 - 1, 1e-12);
    EXPECT_NEAR(d[4], 1.0 / 3, 1e-12);
  }
}

TEST(SparseSoftmaxCrossEntropyTest, RejectsBadLabelsAndShapes) {
  ExecutionContext ctx;
  Tensor logits = TestTensor({2, 3}, 1);
  EXPECT_EQ(SparseSoftmaxCrossEntropy(ctx, logits,
                                      *Tensor::FromVector<int32_t>({0, 3}, {2}))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SparseSoftmaxCrossEntropy(
                ctx, logits, *Tensor::FromVector<int32_t>({0, -1}, {2}))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SparseSoftmaxCrossEntropy(ctx, logits,
                                      *Tensor::FromVector<float>({0, 1}, {2}))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SparseSoftmaxCrossEntropy(
                ctx, logits, *Tensor::FromVector<int32_t>({0, 1, 1}, {3}))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SparseSoftmaxCrossEntropy(ctx, TestTensor({6}, 1),
                                      *Tensor::FromVector<int32_t>({0, 1}, {2}))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ComputeAverageLossTest, DividesByTheGlobalBatchSize) {
  CostRecorder recorder;
  ExecutionContext ctx = recorder.Context();
  Tensor loss = *Tensor::FromVector<float>({1, 2, 3, 4}, {4});
  absl::StatusOr<Tensor> avg = ComputeAverageLoss(ctx, loss, 16);
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_EQ(avg->shape(), Shape());
  EXPECT_EQ(avg->dtype(), DType::kFloat32);
  EXPECT_FLOAT_EQ(*avg->data<float>(), 10.0f / 16);
  EXPECT_EQ(recorder.CountOf("AverageLoss"), 1);

  avg = ComputeAverageLoss(ctx, loss, 4,
                           *Tensor::FromVector<float>({2}, Shape()));
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_FLOAT_EQ(*avg->data<float>(), 5);

  avg = ComputeAverageLoss(ctx, loss, 8,
                           *Tensor::FromVector<float>({1, 0, 0.5f, 2}, {4}));
  ASSERT_TRUE(avg.ok()) << avg.status();
  EXPECT_FLOAT_EQ(*avg->data<float>(), (1 + 1.5f + 8) / 8);
}

TEST(ComputeAverageLossTest, Errors) {
  ExecutionContext ctx;
  Tensor loss = *Tensor::FromVector<float>({1, 2, 3, 4}, {4});
  EXPECT_EQ(ComputeAverageLoss(ctx, loss, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ComputeAverageLoss(ctx, loss, -8).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ComputeAverageLoss(ctx, *Tensor::FromVector<float>({1}, Shape()), 4)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ComputeAverageLoss(ctx, loss, 4, *Tensor::FromVector<float>({1, 2}, {2}))
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ComputeAverageLoss(ctx, loss, 4,
                               *Tensor::FromVector<double>({1, 2, 3, 4}, {4}))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      ComputeAverageLoss(ctx, *Tensor::FromVector<int32_t>({1, 2}, {2}), 4)
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  ExecutionContext timing;
  timing.timing_only = true;
  EXPECT_EQ(ComputeAverageLoss(timing, loss, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ScaleLossGradient(ctx, TestTensor({2, 2}, 1), 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The loss and its gradient with respect to the logits, for every kind of
// sample weight.
TEST(SparseSoftmaxCrossEntropyLossTest, GradientMatchesFiniteDifferences) {
  ExecutionContext ctx;
  Tensor logits = TestTensor({4, 3}, 7, -3, 3);
  Tensor labels = *Tensor::FromVector<int32_t>({1, 0, 2, 1}, {4});
  std::vector<std::optional<Tensor>> weights = {
      std::nullopt, *Tensor::FromVector<double>({0.5}, Shape()),
      *Tensor::FromVector<double>({1, 0, 2, 0.25}, {4})};
  for (const std::optional<Tensor>& weight : weights) {
    absl::StatusOr<LossAndGradient> l =
        SparseSoftmaxCrossEntropyLoss(ctx, logits, labels, 10, weight);
    ASSERT_TRUE(l.ok()) << l.status();
    absl::StatusOr<std::vector<double>> numeric =
        NumericalGradient(logits, [&]() -> absl::StatusOr<double> {
          ASSIGN_OR_RETURN(
              LossAndGradient l2,
              SparseSoftmaxCrossEntropyLoss(ctx, logits, labels, 10, weight));
          return *l2.loss.data<double>();
        });
    ASSERT_TRUE(numeric.ok()) << numeric.status();
    EXPECT_LT(MaxGradientError(l->dlogits, *numeric), 1e-8);
  }
}

// Two replicas, each with half of the global batch: the sum of their losses
// and of their gradients is the mean over the global batch.
TEST(SparseSoftmaxCrossEntropyLossTest, ReplicaSharesSumToTheGlobalMean) {
  ExecutionContext ctx;
  Tensor logits = TestTensor({4, 3}, 9);
  Tensor labels = *Tensor::FromVector<int32_t>({2, 1, 0, 2}, {4});
  absl::StatusOr<LossAndGradient> all =
      SparseSoftmaxCrossEntropyLoss(ctx, logits, labels, 4);
  ASSERT_TRUE(all.ok()) << all.status();
  std::vector<double> per_example = all->per_example_loss.ToVector<double>();
  EXPECT_NEAR(
      *all->loss.data<double>(),
      (per_example[0] + per_example[1] + per_example[2] + per_example[3]) / 4,
      1e-12);

  std::vector<double> values = logits.ToVector<double>();
  double loss_sum = 0;
  std::vector<double> dlogits;
  for (int replica = 0; replica < 2; ++replica) {
    Tensor part = *Tensor::FromVector<double>(
        std::vector<double>(values.begin() + replica * 6,
                            values.begin() + replica * 6 + 6),
        {2, 3});
    Tensor part_labels =
        *Tensor::FromVector<int32_t>({labels.data<int32_t>()[2 * replica],
                                      labels.data<int32_t>()[2 * replica + 1]},
                                     {2});
    absl::StatusOr<LossAndGradient> l = SparseSoftmaxCrossEntropyLoss(
        ctx, part, part_labels, /*global_batch_size=*/4);
    ASSERT_TRUE(l.ok()) << l.status();
    loss_sum += *l->loss.data<double>();
    for (double d : l->dlogits.ToVector<double>()) dlogits.push_back(d);
  }
  EXPECT_NEAR(loss_sum, *all->loss.data<double>(), 1e-12);
  std::vector<double> expected = all->dlogits.ToVector<double>();
  ASSERT_EQ(dlogits.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(dlogits[i], expected[i], 1e-15) << i;
  }
}

TEST(SparseSoftmaxCrossEntropyLossTest, ReportsEveryKernel) {
  CostRecorder recorder;
  ExecutionContext ctx = recorder.Context();
  Tensor logits = TestTensor({4, 3}, 9);
  Tensor labels = *Tensor::FromVector<int32_t>({2, 1, 0, 2}, {4});
  ASSERT_TRUE(SparseSoftmaxCrossEntropyLoss(ctx, logits, labels, 4).ok());
  EXPECT_EQ(recorder.CountOf("SoftmaxCrossEntropy"), 1);
  EXPECT_EQ(recorder.CountOf("AverageLoss"), 1);
  EXPECT_EQ(recorder.CountOf("Scale"), 1);
  ASSERT_TRUE(SparseSoftmaxCrossEntropyLoss(
                  ctx, logits, labels, 4,
                  *Tensor::FromVector<double>({1, 1, 2, 2}, {4}))
                  .ok());
  EXPECT_EQ(recorder.CountOf("RowScale"), 1);
  recorder.Clear();
  EXPECT_EQ(
      SparseSoftmaxCrossEntropyLoss(ctx, logits, labels, 0).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(recorder.count(), 0);
}

}  // namespace
}  // namespace models
}  // namespace distribute
