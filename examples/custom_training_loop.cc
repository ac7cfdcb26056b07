#include "examples/custom_training_loop.h"

#include <memory>
#include <vector>

#include "devices/status_macros.h"
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
  ASSIGN_OR_RETURN(auto strategy,
                   distribute::MirroredStrategy::Create(
                       platform, distribute::DefaultDevices(platform)));
  return TrainLine(*strategy, epochs);
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
  ASSIGN_OR_RETURN(auto scope, strategy.Scope());
  ASSIGN_OR_RETURN(auto w,
                   strategy.CreateVariable(Tensor::FromVector<float>({0.0f})));
  ASSIGN_OR_RETURN(auto data,
                   distribute::data::Dataset::FromTensorSlices(
                       {Tensor::FromVector(xs), Tensor::FromVector(ys)}));
  ASSIGN_OR_RETURN(auto batches, data.Batch(kGlobalBatch));
  ASSIGN_OR_RETURN(
      auto dist, distribute::ExperimentalDistributeDataset(strategy, batches));

  // Each replica's part of the gradient of the squared error.
  auto step_fn = [&](ReplicaContext&, const std::vector<Tensor>& batch)
      -> absl::StatusOr<std::vector<Tensor>> {
    ASSIGN_OR_RETURN(Tensor weight, w->Read());  // this replica's copy
    const float wv = weight.data<float>()[0];
    const float* x = batch[0].data<float>();
    const float* y = batch[1].data<float>();
    float grad = 0;
    for (int64_t i = 0; i < batch[0].num_elements(); ++i) {
      grad += 2 * (wv * x[i] - y[i]) * x[i];
    }
    return std::vector<Tensor>{Tensor::FromVector<float>({grad})};
  };
  for (int epoch = 0; epoch < epochs; ++epoch) {
    ASSIGN_OR_RETURN(auto it, dist.MakeIterator());
    while (true) {
      ASSIGN_OR_RETURN(auto step, it->GetNextAsOptional());
      if (!step.has_value()) break;
      ASSIGN_OR_RETURN(auto grads,
                       strategy.Run(step_fn, {(*step)[0], (*step)[1]}));
      // The replicas' sum, then one update of every copy of w.
      ASSIGN_OR_RETURN(auto total, strategy.Reduce(ReduceOp::kSum, grads[0]));
      const float delta = kLearningRate * total.data<float>()[0] / kGlobalBatch;
      RETURN_IF_ERROR(w->AssignSub(Tensor::FromVector<float>({delta})));
    }
  }
  ASSIGN_OR_RETURN(Tensor learned, w->Read());
  return learned.data<float>()[0];
}

}  // namespace examples
