#include "tools/distsim/classifier_training.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "devices/device.h"
#include "devices/fnv1a.h"
#include "devices/platform.h"
#include "devices/status_macros.h"
#include "distribute/checkpoint/checkpoint.h"
#include "distribute/checkpoint/checkpoint_manager.h"
#include "distribute/checkpoint/file_util.h"
#include "distribute/input/dataset.h"
#include "distribute/input_lib.h"
#include "distribute/models/adam.h"
#include "distribute/models/execution_context.h"
#include "distribute/models/losses.h"
#include "distribute/models/mlp.h"
#include "distribute/models/sgd.h"
#include "distribute/models/synthetic_data.h"
#include "distribute/models/training_variables.h"

namespace distsim {
namespace {

using devices::Tensor;
using distribute::PerReplica;
using distribute::ReplicaContext;
using distribute::Variable;

absl::StatusOr<std::unique_ptr<distribute::models::Optimizer>> MakeOptimizer(
    const TrainOptions& options) {
  if (options.optimizer == "sgd") {
    ASSIGN_OR_RETURN(auto sgd, distribute::models::SGD::Create(
                                   options.learning_rate, options.momentum));
    return std::unique_ptr<distribute::models::Optimizer>(
        new distribute::models::SGD(std::move(sgd)));
  }
  if (options.optimizer == "adam") {
    ASSIGN_OR_RETURN(auto adam,
                     distribute::models::Adam::Create(options.learning_rate));
    return std::unique_ptr<distribute::models::Optimizer>(
        new distribute::models::Adam(std::move(adam)));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown optimizer '", options.optimizer, "': use sgd or adam"));
}

// The context and gradient for updating `w`: w's device's kernels, and
// `grad` copied to w's device where either memory is a device's own (a
// GPU's). On host and simulated devices both stay as they are.
absl::StatusOr<std::pair<distribute::models::ExecutionContext, Tensor>>
UpdateOn(distribute::Strategy& strategy,
         const distribute::models::ExecutionContext& exec, const Tensor& w,
         const Tensor& grad) {
  distribute::models::ExecutionContext on = exec;
  devices::Platform& platform = strategy.extended().platform();
  ASSIGN_OR_RETURN(auto device, platform.FindDevice(w.device()));
  on.compute_device = device;
  ASSIGN_OR_RETURN(auto readable, devices::ReadableOn(platform, grad, *device));
  return std::make_pair(on, std::move(readable));
}

}  // namespace

distribute::models::ExecutionContext ReplicaExecution(
    ReplicaContext& ctx, absl::Status* charge_error) {
  distribute::models::ExecutionContext exec;
  exec.timing_only = !ctx.device().functional();
  exec.device = ctx.device_name();
  // The device's own kernels: the host library on host and simulated
  // devices (values in host memory, as before), a GPU's on the cuda
  // platform (values in its memory).
  exec.compute_device = &ctx.device();
  exec.cost_sink = [&ctx, charge_error](const devices::KernelCost& cost) {
    if (!charge_error->ok()) return;
    // The op already ran on the host; the device's clock pays for it.
    *charge_error = ctx.Execute(cost, [] { return absl::OkStatus(); });
  };
  return exec;
}

std::string WeightsChecksum(const std::vector<Tensor>& weights) {
  uint64_t h = devices::kFnv1a64Offset;
  for (const Tensor& t : weights) {
    if (t.raw_data() == nullptr) continue;
    h = devices::Fnv1a64(
        absl::string_view(static_cast<const char*>(t.raw_data()), t.bytes()),
        h);
  }
  return devices::Fnv1a64Hex(h);
}

absl::StatusOr<TrainResult> TrainClassifier(distribute::Strategy& strategy,
                                            const TrainOptions& options,
                                            const StepCallback& on_step) {
  if (options.steps < 1 || options.global_batch < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("steps (", options.steps, ") and global_batch (",
                     options.global_batch, ") must be positive"));
  }
  std::vector<int64_t> sizes = {options.num_features};
  sizes.insert(sizes.end(), options.hidden.begin(), options.hidden.end());
  sizes.push_back(options.num_classes);
  ASSIGN_OR_RETURN(auto mlp, distribute::models::Mlp::Create(sizes));
  ASSIGN_OR_RETURN(auto optimizer, MakeOptimizer(options));
  distribute::models::ExecutionContext host;
  ASSIGN_OR_RETURN(auto init, mlp.InitParams(host, options.seed));

  // Variables (and optimizer slots) placed by the strategy.
  ASSIGN_OR_RETURN(auto state,
                   distribute::models::CreateTrainingVariables(
                       strategy, mlp.ParamNames(), init, *optimizer, host));
  std::vector<std::shared_ptr<Variable>>& vars = state.params;
  std::vector<std::vector<std::shared_ptr<Variable>>>& slots = state.slots;

  // Preemption: resume from the checkpoint directory's latest checkpoint
  // (weights, optimizer slots and the steps done; the data set is read from
  // the step it stopped at), and save there when the workers agree to stop.
  std::optional<distribute::checkpoint::Checkpoint> ckpt;
  std::unique_ptr<distribute::PreemptionCheckpointHandler> preemption;
  int64_t first_step = 0;
  if (!options.checkpoint_dir.empty()) {
    ASSIGN_OR_RETURN(auto made,
                     distribute::checkpoint::Checkpoint::ForStrategy(strategy));
    ckpt.emplace(std::move(made));
    const std::vector<std::string> names = mlp.ParamNames();
    for (size_t i = 0; i < vars.size(); ++i) {
      RETURN_IF_ERROR(ckpt->TrackVariable(names[i], vars[i]));
      for (size_t k = 0; k < slots[i].size(); ++k) {
        RETURN_IF_ERROR(ckpt->TrackVariable(absl::StrCat(names[i], "/slot_", k),
                                            slots[i][k]));
      }
    }
    ASSIGN_OR_RETURN(
        auto handler,
        distribute::PreemptionCheckpointHandler::Create(
            strategy, *ckpt, options.checkpoint_dir, options.termination));
    preemption = std::move(handler);
    first_step = std::min(preemption->total_run_calls(), options.steps);
    if (preemption->restored_from().has_value() && options.on_resume) {
      options.on_resume(*preemption->restored_from(),
                        preemption->total_run_calls());
    }
  }

  // The data: global batches of the synthetic set, split across replicas.
  const int64_t examples = options.num_examples > 0
                               ? options.num_examples
                               : options.steps * options.global_batch;
  // Generated as the batches are read (memory O(batch), the first step at
  // once), the same examples as MakeClassificationData's.
  ASSIGN_OR_RETURN(auto source,
                   distribute::models::ClassificationSource::Create(
                       examples, options.num_features, options.num_classes,
                       options.seed + 1));
  auto generator = std::make_shared<distribute::models::ClassificationSource>(
      std::move(source));
  const int64_t num_features = options.num_features;
  // Global batches of example indices, made into examples batch by batch.
  ASSIGN_OR_RETURN(auto batches,
                   distribute::data::Dataset::Range(examples).Repeat().Batch(
                       options.global_batch));
  // A resumed run starts at the batch of its first step.
  const distribute::data::Dataset indices = batches.Skip(first_step);
  // Batches are made on one thread per core, in order (tf.data's
  // map(num_parallel_calls=AUTOTUNE)): making one takes longer than a GPU
  // step, so a single producer would hold the steps back.
  ASSIGN_OR_RETURN(
      auto batched,
      indices.Map(
          [generator, num_features](distribute::data::Element batch)
              -> absl::StatusOr<distribute::data::Element> {
            const int64_t rows = batch[0].num_elements();
            const int64_t* index = batch[0].data<int64_t>();
            ASSIGN_OR_RETURN(
                Tensor features,
                Tensor::Host(devices::DType::kFloat32,
                             devices::Shape({rows, num_features})));
            ASSIGN_OR_RETURN(
                Tensor labels,
                Tensor::Host(devices::DType::kInt32, devices::Shape({rows})));
            for (int64_t r = 0; r < rows; ++r) {
              labels.data<int32_t>()[r] = generator->Example(
                  index[r], features.data<float>() + r * num_features);
            }
            return distribute::data::Element{std::move(features),
                                             std::move(labels)};
          },
          distribute::data::Dataset::kAutotune));
  // The next batches are made on a background thread while a step runs
  // (tf.data's prefetch), as a GPU step takes less time than making its
  // batch on the host.
  ASSIGN_OR_RETURN(auto prefetched, batched.Prefetch(2));
  ASSIGN_OR_RETURN(auto dist, distribute::ExperimentalDistributeDataset(
                                  strategy, prefetched));
  ASSIGN_OR_RETURN(auto iterator, dist.MakeIterator());

  const distribute::models::Mlp& model = mlp;
  const distribute::models::Optimizer& opt = *optimizer;
  TrainResult result;
  const auto one_step = [&](int64_t step) -> absl::Status {
    ASSIGN_OR_RETURN(auto batch, iterator->GetNext());
    ASSIGN_OR_RETURN(
        auto out,
        strategy.Run(
            [&](ReplicaContext& ctx, const std::vector<Tensor>& args)
                -> absl::StatusOr<std::vector<Tensor>> {
              absl::Status charge;
              distribute::models::ExecutionContext exec =
                  ReplicaExecution(ctx, &charge);
              std::vector<Tensor> params;
              for (const auto& v : vars) {
                ASSIGN_OR_RETURN(auto value, v->Read());
                params.push_back(std::move(value));
              }
              ASSIGN_OR_RETURN(auto acts, model.Forward(exec, params, args[0]));
              RETURN_IF_ERROR(charge);
              ASSIGN_OR_RETURN(
                  auto loss,
                  distribute::models::SparseSoftmaxCrossEntropyLoss(
                      exec, acts.logits, args[1], options.global_batch));
              ASSIGN_OR_RETURN(
                  auto grads, model.Backward(exec, params, acts, loss.dlogits));
              RETURN_IF_ERROR(charge);
              // The values read for this step are done with: the updates below
              // then write the variables in place instead of copying them first
              // (copy on write keeps values that are still held).
              params.clear();
              ASSIGN_OR_RETURN(auto reduced,
                               ctx.AllReduce(distribute::ReduceOp::kSum, grads,
                                             options.communication));
              const int r = ctx.ReplicaIdInSyncGroup();
              for (size_t i = 0; i < vars.size(); ++i) {
                RETURN_IF_ERROR(strategy.extended().Update(
                    *vars[i],
                    [&](Tensor& w, const std::vector<Tensor>& a) {
                      std::vector<Tensor> s_local;
                      for (const auto& slot : slots[i]) {
                        s_local.push_back(slot->component_for_replica(r));
                      }
                      // The update runs where the variable lives (a central
                      // variable's parameter device), with the gradient there.
                      ASSIGN_OR_RETURN(auto on,
                                       UpdateOn(strategy, exec, w, a[0]));
                      return opt.ApplyToVariable(on.first, w, on.second,
                                                 absl::MakeSpan(s_local), step);
                    },
                    {reduced[i]}));
              }
              RETURN_IF_ERROR(charge);
              return std::vector<Tensor>{loss.loss};
            },
            {batch[0], batch[1]}));
    StepReport report;
    report.step = step + 1;
    if (out[0].value(0).has_data()) {
      ASSIGN_OR_RETURN(auto total,
                       strategy.Reduce(distribute::ReduceOp::kSum, out[0]));
      report.loss = static_cast<double>(total.data<float>()[0]);
      if (!result.initial_loss.has_value()) result.initial_loss = report.loss;
      result.final_loss = report.loss;
    }
    if (on_step) {
      RETURN_IF_ERROR(on_step(report));
    }
    if (report.loss.has_value() && !std::isfinite(*report.loss)) {
      return absl::FailedPreconditionError(
          absl::StrCat("the loss became ", *report.loss, " at step ",
                       report.step, " of ", options.steps,
                       ": the model diverged, so training stopped (as Keras' "
                       "TerminateOnNaN); lower the learning rate"));
    }
    return absl::OkStatus();
  };
  for (int64_t step = first_step; step < options.steps; ++step) {
    RETURN_IF_ERROR(preemption != nullptr
                        ? preemption->Run([&] { return one_step(step); })
                        : one_step(step));
    // Periodic checkpoints (every worker saves together; the chief writes),
    // the last one after the last step, for a side-car evaluator.
    if (preemption != nullptr && options.checkpoint_every > 0 &&
        ((step + 1) % options.checkpoint_every == 0 ||
         step + 1 == options.steps)) {
      ASSIGN_OR_RETURN(std::string saved, preemption->manager().Save());
    }
  }
  for (const auto& v : vars) {
    const Tensor& w = v->values()[0];
    if (!w.has_data()) {
      result.weights.push_back(w);
      continue;
    }
    ASSIGN_OR_RETURN(auto copy, Tensor::Host(w.dtype(), w.shape()));
    if (w.host_accessible()) {
      std::memcpy(copy.raw_data(), w.raw_data(), w.bytes());
    } else {
      // Device memory (a GPU's): copied out by its device.
      ASSIGN_OR_RETURN(auto device,
                       strategy.extended().platform().FindDevice(w.device()));
      RETURN_IF_ERROR(device->CopyToHost(w, copy.raw_data()));
    }
    result.weights.push_back(std::move(copy));
  }
  result.weights_checksum = WeightsChecksum(result.weights);
  return result;
}

absl::StatusOr<double> EvaluateClassifier(const TrainOptions& options,
                                          const std::vector<Tensor>& weights) {
  if (options.eval_examples < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "eval_examples (", options.eval_examples, ") must be positive"));
  }
  std::vector<int64_t> sizes = {options.num_features};
  sizes.insert(sizes.end(), options.hidden.begin(), options.hidden.end());
  sizes.push_back(options.num_classes);
  ASSIGN_OR_RETURN(auto mlp, distribute::models::Mlp::Create(sizes));
  // The training set's examples continue past its end with the same
  // teacher: the rows after the last one trained on are held out.
  const int64_t trained = options.num_examples > 0
                              ? options.num_examples
                              : options.steps * options.global_batch;
  ASSIGN_OR_RETURN(auto source,
                   distribute::models::ClassificationSource::Create(
                       trained, options.num_features, options.num_classes,
                       options.seed + 1));
  const int64_t rows = options.eval_examples;
  ASSIGN_OR_RETURN(auto features,
                   Tensor::Host(devices::DType::kFloat32,
                                devices::Shape({rows, options.num_features})));
  ASSIGN_OR_RETURN(auto labels, Tensor::Host(devices::DType::kInt32,
                                             devices::Shape({rows})));
  for (int64_t r = 0; r < rows; ++r) {
    labels.data<int32_t>()[r] = source.Example(
        trained + r, features.data<float>() + r * options.num_features);
  }
  distribute::models::ExecutionContext host;
  ASSIGN_OR_RETURN(auto acts, mlp.Forward(host, weights, features));
  ASSIGN_OR_RETURN(auto loss, distribute::models::SparseSoftmaxCrossEntropyLoss(
                                  host, acts.logits, labels, rows));
  return static_cast<double>(loss.loss.data<float>()[0]);
}

absl::StatusOr<std::vector<EvaluationReport>> RunSidecarEvaluation(
    const TrainOptions& options,
    const std::function<absl::Status(const EvaluationReport&)>& on_eval,
    absl::Duration poll,
    const std::function<void(const std::string&)>& waiting) {
  if (options.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError(
        "an evaluator evaluates the checkpoints that training writes: give "
        "it the training's checkpoint directory");
  }
  std::vector<int64_t> sizes = {options.num_features};
  sizes.insert(sizes.end(), options.hidden.begin(), options.hidden.end());
  sizes.push_back(options.num_classes);
  ASSIGN_OR_RETURN(auto mlp, distribute::models::Mlp::Create(sizes));
  distribute::models::ExecutionContext host;
  // Host tensors of the parameters' shapes, restored in place.
  ASSIGN_OR_RETURN(auto weights, mlp.InitParams(host, options.seed));
  distribute::checkpoint::Checkpoint ckpt;
  const std::vector<std::string> names = mlp.ParamNames();
  for (size_t i = 0; i < names.size(); ++i) {
    RETURN_IF_ERROR(ckpt.TrackTensor(names[i], weights[i]));
  }
  int64_t step = 0;
  RETURN_IF_ERROR(ckpt.TrackInt64(
      distribute::PreemptionCheckpointHandler::kRunCallsName, &step));

  std::vector<EvaluationReport> reports;
  std::string last;
  absl::Time quiet_since = absl::Now();
  absl::Time next_report = quiet_since + absl::Seconds(5);
  while (true) {
    ASSIGN_OR_RETURN(auto latest, distribute::checkpoint::LatestCheckpoint(
                                      options.checkpoint_dir));
    if (latest.has_value() && *latest != last) {
      absl::Status read = ckpt.Read(*latest);
      if (absl::IsNotFound(read) &&
          !distribute::checkpoint::PathExists(*latest)) {
        // Replaced by a newer one meanwhile: read that one next. (A file
        // that is there but lacks this model's entries is an error.)
        absl::SleepFor(poll);
        continue;
      }
      RETURN_IF_ERROR(read);
      last = *latest;
      EvaluationReport report;
      report.checkpoint = last;
      report.step = step;
      ASSIGN_OR_RETURN(auto loss, EvaluateClassifier(options, weights));
      report.loss = loss;
      report.weights_checksum = WeightsChecksum(weights);
      if (on_eval) {
        RETURN_IF_ERROR(on_eval(report));
      }
      reports.push_back(std::move(report));
      if (step >= options.steps) return reports;
      quiet_since = absl::Now();
      next_report = quiet_since + absl::Seconds(5);
      continue;
    }
    if (waiting && absl::Now() >= next_report) {
      waiting(absl::StrCat("still waiting for a new checkpoint in ",
                           options.checkpoint_dir, " after ",
                           absl::FormatDuration(absl::Trunc(
                               absl::Now() - quiet_since, absl::Seconds(1))),
                           reports.empty()
                               ? " (none yet)"
                               : absl::StrCat(" (last: step ", step, ")")));
      next_report = absl::Now() + absl::Seconds(5);
    }
    absl::SleepFor(poll);
  }
}

std::vector<std::pair<std::string, std::string>> TrainingFlags(
    const TrainOptions& options) {
  return {{"--steps", absl::StrCat(options.steps)},
          {"--global_batch", absl::StrCat(options.global_batch)},
          {"--seed", absl::StrCat(options.seed)},
          {"--optimizer", options.optimizer},
          {"--learning_rate", absl::StrFormat("%.17g", options.learning_rate)}};
}

}  // namespace distsim
