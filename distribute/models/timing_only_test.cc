// Timing-only mode: the same training step on shape-only tensors returns
// shape-only tensors of the same shapes and reports exactly the costs of the
// functional step, kernel by kernel.
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "devices/allocator.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/models/models.h"
#include "gtest/gtest.h"

namespace distribute {
namespace models {
namespace {

using devices::DType;
using devices::KernelCost;
using devices::Shape;
using devices::Tensor;

constexpr int64_t kBatch = 32;
constexpr int64_t kGlobalBatch = 64;

struct StepOutputs {
  std::vector<Tensor> params;
  std::vector<Tensor> slots;
  MlpActivations acts;
  LossAndGradient loss;
  std::vector<Tensor> grads;
};

// Init, forward, loss (with per-example weights), backward and an Adam
// update, all through `ctx`.
absl::StatusOr<StepOutputs> Step(const ExecutionContext& ctx, const Tensor& x,
                                 const Tensor& labels, const Tensor& weights) {
  ASSIGN_OR_RETURN(Mlp mlp, Mlp::Create({12, 24, 24, 5}));
  ASSIGN_OR_RETURN(Adam adam, Adam::Create());
  StepOutputs out;
  ASSIGN_OR_RETURN(std::vector<Tensor> params, mlp.InitParams(ctx, 9));
  out.params = params;
  ASSIGN_OR_RETURN(std::vector<Tensor> slots,
                   adam.CreateSlots(ctx, out.params));
  out.slots = slots;
  ASSIGN_OR_RETURN(MlpActivations acts, mlp.Forward(ctx, out.params, x));
  out.acts = acts;
  ASSIGN_OR_RETURN(LossAndGradient loss,
                   SparseSoftmaxCrossEntropyLoss(ctx, out.acts.logits, labels,
                                                 kGlobalBatch, weights));
  out.loss = loss;
  ASSIGN_OR_RETURN(std::vector<Tensor> grads,
                   mlp.Backward(ctx, out.params, out.acts, out.loss.dlogits));
  out.grads = grads;
  RETURN_IF_ERROR(adam.Apply(ctx, out.params, out.grads, out.slots, 0));
  return out;
}

struct Inputs {
  Tensor x, labels, weights;
};

Inputs FunctionalInputs() {
  Inputs in;
  ClassificationData data = *MakeClassificationData(kBatch, 12, 5, 1);
  in.x = data.features;
  in.labels = data.labels;
  std::vector<float> w(kBatch);
  for (int64_t i = 0; i < kBatch; ++i) w[i] = 0.5f + 0.25f * (i % 3);
  in.weights = *Tensor::FromVector<float>(w, {kBatch});
  return in;
}

Inputs ShapeOnlyInputs() {
  Inputs in;
  in.x = Tensor::ShapeOnly(DType::kFloat32, {kBatch, 12}, "sim:0");
  in.labels = Tensor::ShapeOnly(DType::kInt32, {kBatch}, "sim:0");
  in.weights = Tensor::ShapeOnly(DType::kFloat32, {kBatch}, "sim:0");
  return in;
}

void ExpectSameCosts(const std::vector<KernelCost>& a,
                     const std::vector<KernelCost>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].name, b[i].name) << i;
    EXPECT_EQ(a[i].flops, b[i].flops) << i << " " << a[i].name;
    EXPECT_EQ(a[i].bytes, b[i].bytes) << i << " " << a[i].name;
  }
}

TEST(TimingOnlyTest, SameCostsAsFunctionalAndShapeOnlyOutputs) {
  CostRecorder functional;
  Inputs in = FunctionalInputs();
  absl::StatusOr<StepOutputs> real =
      Step(functional.Context(), in.x, in.labels, in.weights);
  ASSERT_TRUE(real.ok()) << real.status();

  CostRecorder timing;
  Inputs shapes = ShapeOnlyInputs();
  ExecutionContext ctx = timing.Context(/*timing_only=*/true);
  ctx.device = "sim:0";
  absl::StatusOr<StepOutputs> fake =
      Step(ctx, shapes.x, shapes.labels, shapes.weights);
  ASSERT_TRUE(fake.ok()) << fake.status();

  EXPECT_GT(functional.count(), 0);
  ExpectSameCosts(functional.costs(), timing.costs());
  EXPECT_EQ(functional.total_flops(), timing.total_flops());
  EXPECT_EQ(functional.total_bytes(), timing.total_bytes());

  // Every op's kind of kernel was reported.
  for (const char* name : {"RandomUniform", "Fill", "MatMul", "BiasAdd", "Relu",
                           "SoftmaxCrossEntropy", "AverageLoss", "RowScale",
                           "ReluGrad", "BiasAddGrad", "AdamUpdate"}) {
    EXPECT_GT(timing.CountOf(name), 0) << name;
  }

  auto expect_like = [](const Tensor& fake_t, const Tensor& real_t) {
    EXPECT_FALSE(fake_t.has_data());
    EXPECT_TRUE(real_t.has_data());
    EXPECT_EQ(fake_t.shape(), real_t.shape());
    EXPECT_EQ(fake_t.dtype(), real_t.dtype());
    EXPECT_EQ(fake_t.device(), "sim:0");
  };
  ASSERT_EQ(fake->params.size(), real->params.size());
  for (size_t i = 0; i < real->params.size(); ++i) {
    expect_like(fake->params[i], real->params[i]);
    expect_like(fake->grads[i], real->grads[i]);
  }
  for (size_t i = 0; i < real->slots.size(); ++i) {
    expect_like(fake->slots[i], real->slots[i]);
  }
  expect_like(fake->acts.logits, real->acts.logits);
  expect_like(fake->loss.loss, real->loss.loss);
  expect_like(fake->loss.dlogits, real->loss.dlogits);
}

TEST(TimingOnlyTest, DataIsNeitherReadNorWritten) {
  // Host tensors given to a timing-only context keep their values.
  ExecutionContext ctx;
  ctx.timing_only = true;
  Tensor var = Tensor::FromVector<float>({1, 2});
  Tensor grad = Tensor::FromVector<float>({1, 1});
  SGD sgd = *SGD::Create(0.5);
  ASSERT_TRUE(sgd.ApplyToVariable(ctx, var, grad, {}, 0).ok());
  EXPECT_EQ(var.ToVector<float>(), std::vector<float>({1, 2}));
  // Labels out of range are not seen: they have no values.
  Tensor logits = Tensor::ShapeOnly(DType::kFloat32, {2, 3}, "");
  Tensor labels = *Tensor::FromVector<int32_t>({7, -1}, {2});
  EXPECT_TRUE(SparseSoftmaxCrossEntropy(ctx, logits, labels).ok());
}

TEST(TimingOnlyTest, ShapeErrorsAreTheSameInBothModes) {
  for (bool timing_only : {false, true}) {
    ExecutionContext ctx;
    ctx.timing_only = timing_only;
    Mlp mlp = *Mlp::Create({4, 3});
    std::vector<Tensor> params = *mlp.InitParams(ctx, 1);
    Tensor x = timing_only ? Tensor::ShapeOnly(DType::kFloat32, {2, 5}, "")
                           : *Tensor::Host(DType::kFloat32, {2, 5});
    EXPECT_EQ(mlp.Forward(ctx, params, x).status().code(),
              absl::StatusCode::kInvalidArgument)
        << timing_only;
    Tensor loss = timing_only ? Tensor::ShapeOnly(DType::kFloat32, {2}, "")
                              : *Tensor::Host(DType::kFloat32, {2});
    EXPECT_EQ(ComputeAverageLoss(ctx, loss, 0).status().code(),
              absl::StatusCode::kInvalidArgument)
        << timing_only;
  }
}

TEST(TimingOnlyTest, AccountingAllocatorSeesTheModelsMemory) {
  auto allocator =
      std::make_shared<devices::AccountingAllocator>("sim:0", 1 << 20);
  ExecutionContext ctx;
  ctx.timing_only = true;
  ctx.allocator = allocator;
  ctx.device = "sim:0";
  Mlp mlp = *Mlp::Create({100, 100, 10});
  absl::StatusOr<std::vector<Tensor>> params = mlp.InitParams(ctx, 1);
  ASSERT_TRUE(params.ok()) << params.status();
  EXPECT_EQ(allocator->bytes_in_use(), 4 * mlp.NumParams());
  EXPECT_FALSE((*params)[0].has_data());
  // A model too big for the device fails as the card would.
  Mlp big = *Mlp::Create({1000, 1000, 10});
  EXPECT_EQ(big.InitParams(ctx, 1).status().code(),
            absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace models
}  // namespace distribute
