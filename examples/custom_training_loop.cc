#include "examples/custom_training_loop.h"

#include <memory>
#include <vector>

#include "devices/tensor.h"
#include "distribute/input/dataset.h"
#include "distribute/input_lib.h"
#include "distribute/mirrored_strategy.h"
#include "distribute/reduce_op.h"
#include "distribute/strategy_devices.h"

namespace examples {

using devices::Tensor;
using distribute::ReduceOp;
using distribute::ReplicaContext;

absl::StatusOr<float> FitLine(devices::Platform& platform, int epochs) {
  auto strategy = distribute::MirroredStrategy::Create(
      platform, distribute::DefaultDevices(platform));
  if (!strategy.ok()) return strategy.status();
  return TrainLine(**strategy, epochs);
}

absl::StatusOr<float> TrainLine(distribute::Strategy& strategy, int epochs) {
  constexpr int kExamples = 64;
  constexpr int kGlobalBatch = 16;
  constexpr float kLearningRate = 0.5f;
  std::vector<float> xs, ys;
  for (int i = 0; i < kExamples; ++i) {
    xs.push_back(static_cast<float>(i) / kExamples);
    ys.push_back(3.0f * xs.back());
  }
  auto scope = strategy.Scope();
  if (!scope.ok()) return scope.status();
  auto w = strategy.CreateVariable(Tensor::FromVector<float>({0.0f}));
  if (!w.ok()) return w.status();
  auto data = distribute::data::Dataset::FromTensorSlices(
      {Tensor::FromVector(xs), Tensor::FromVector(ys)});
  if (!data.ok()) return data.status();
  auto batches = data->Batch(kGlobalBatch);
  if (!batches.ok()) return batches.status();
  auto dist = distribute::ExperimentalDistributeDataset(strategy, *batches);
  if (!dist.ok()) return dist.status();

  // Each replica's part of the gradient of the squared error.
  auto step_fn = [&](ReplicaContext&, const std::vector<Tensor>& batch)
      -> absl::StatusOr<std::vector<Tensor>> {
    absl::StatusOr<Tensor> weight = (*w)->Read();  // this replica's copy
    if (!weight.ok()) return weight.status();
    const float wv = weight->data<float>()[0];
    const float* x = batch[0].data<float>();
    const float* y = batch[1].data<float>();
    float grad = 0;
    for (int64_t i = 0; i < batch[0].num_elements(); ++i) {
      grad += 2 * (wv * x[i] - y[i]) * x[i];
    }
    return std::vector<Tensor>{Tensor::FromVector<float>({grad})};
  };
  for (int epoch = 0; epoch < epochs; ++epoch) {
    auto it = dist->MakeIterator();
    if (!it.ok()) return it.status();
    while (true) {
      auto step = (*it)->GetNextAsOptional();
      if (!step.ok()) return step.status();
      if (!step->has_value()) break;
      auto grads = strategy.Run(step_fn, {(**step)[0], (**step)[1]});
      if (!grads.ok()) return grads.status();
      // The replicas' sum, then one update of every copy of w.
      auto total = strategy.Reduce(ReduceOp::kSum, (*grads)[0]);
      if (!total.ok()) return total.status();
      const float delta =
          kLearningRate * total->data<float>()[0] / kGlobalBatch;
      absl::Status updated =
          (*w)->AssignSub(Tensor::FromVector<float>({delta}));
      if (!updated.ok()) return updated;
    }
  }
  absl::StatusOr<Tensor> learned = (*w)->Read();
  if (!learned.ok()) return learned.status();
  return learned->data<float>()[0];
}

}  // namespace examples
