// The training program of the main job, written once against the Strategy
// API: an MLP classifier on a synthetic, seeded data set, trained with
// SGD (momentum) or Adam, gradients all-reduced across replicas, losses
// scaled by the global batch size (ComputeAverageLoss). The same function
// runs under every strategy and platform; tests use it to check that they
// all reach the same weights.
//
//   TrainOptions options;
//   options.steps = 20;
//   absl::StatusOr<TrainResult> r = TrainClassifier(*strategy, options,
//       [](const StepReport& s) { ...; return absl::OkStatus(); });
#ifndef TOOLS_DISTSIM_CLASSIFIER_TRAINING_H_
#define TOOLS_DISTSIM_CLASSIFIER_TRAINING_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "devices/tensor.h"
#include "distribute/checkpoint/preemption_checkpoint_handler.h"
#include "distribute/collective/communication_options.h"
#include "distribute/models/execution_context.h"
#include "distribute/strategy.h"

namespace distsim {

struct TrainOptions {
  int64_t steps = 20;
  int64_t global_batch = 256;
  uint64_t seed = 42;
  int64_t num_features = 64;
  int64_t num_classes = 10;
  std::vector<int64_t> hidden = {256, 256};
  std::string optimizer = "sgd";  // "sgd" (with momentum) or "adam"
  double learning_rate = 0.1;
  double momentum = 0.9;
  // Examples in the data set; 0: steps * global_batch (no example repeats).
  int64_t num_examples = 0;
  distribute::CommunicationOptions communication;
  // When set, training survives preemption (PreemptionCheckpointHandler):
  // it resumes from the latest checkpoint in this directory (weights,
  // optimizer slots, steps done) and, once any worker's `termination`
  // watcher fires (by default: SIGTERM), every worker saves a checkpoint
  // after the same step and `termination.exit_fn` runs (by default the
  // process exits with kPreemptionExitCode).
  std::string checkpoint_dir;
  distribute::TerminationConfig termination;
  // With checkpoint_dir: also save a checkpoint every this many steps and
  // after the last one (0: only on preemption), for a side-car evaluator.
  int64_t checkpoint_every = 0;
  // With checkpoint_dir: called once, before the first step, when training
  // resumes from a checkpoint (its path and the steps it holds).
  std::function<void(const std::string& checkpoint, int64_t steps)> on_resume;
  // Examples of the evaluation set: the synthetic set's rows right after
  // the ones training reads (same teacher, never trained on).
  int64_t eval_examples = 1024;
};

struct StepReport {
  int64_t step = 0;            // 1-based
  std::optional<double> loss;  // none when devices carry no data
};

struct TrainResult {
  std::optional<double> initial_loss;
  std::optional<double> final_loss;
  std::vector<devices::Tensor> weights;  // host copies, in parameter order
  std::string weights_checksum;          // FNV-1a 64 of the weights' bytes
};

using StepCallback = std::function<absl::Status(const StepReport&)>;

// A model context for replica code: values computed by the replica's device
// (shapes only on timing-only devices), every kernel's cost charged to it.
// The first failure to charge (a dead simulated device, say) is kept in
// `charge_error`, which the caller checks after each model op.
distribute::models::ExecutionContext ReplicaExecution(
    distribute::ReplicaContext& ctx, absl::Status* charge_error);

// Trains `options.steps` steps, calling `on_step` after each (its error
// stops training and is returned). A loss that is not finite (the model
// diverged) stops training after that step's on_step, as Keras'
// TerminateOnNaN does: FAILED_PRECONDITION naming the step and the loss.
// With a checkpoint directory, a run that resumes reports its steps from
// the first one it runs (initial_loss is that step's), and a preempted run
// whose exit_fn returns gives ABORTED.

absl::StatusOr<TrainResult> TrainClassifier(distribute::Strategy& strategy,
                                            const TrainOptions& options,
                                            const StepCallback& on_step = {});

// The mean loss of the model with `weights` (host tensors, in parameter
// order) over the evaluation set of `options` (a forward pass on the host).
absl::StatusOr<double> EvaluateClassifier(
    const TrainOptions& options, const std::vector<devices::Tensor>& weights);

// One checkpoint a side-car evaluator evaluated.
struct EvaluationReport {
  std::string checkpoint;  // its path
  int64_t step = 0;        // training steps done when it was saved
  double loss = 0;         // EvaluateClassifier of its weights
  std::string weights_checksum;
};

// TF's side-car evaluation (an "evaluator" task): evaluates every new
// checkpoint that training writes into options.checkpoint_dir (polling it
// every `poll`), calling on_eval for each, until one holds options.steps
// steps; returns the reports. A checkpoint replaced before it could be read
// is skipped. While no new checkpoint comes, `waiting` (if set) gets a line
// every 5 s. INVALID_ARGUMENT without a checkpoint directory; the errors of
// reading a checkpoint (DATA_LOSS, a shape that is not this model's).
absl::StatusOr<std::vector<EvaluationReport>> RunSidecarEvaluation(
    const TrainOptions& options,
    const std::function<absl::Status(const EvaluationReport&)>& on_eval,
    absl::Duration poll = absl::Milliseconds(200),
    const std::function<void(const std::string&)>& waiting = {});

// FNV-1a 64 over the tensors' bytes, as 16 hex digits.
std::string WeightsChecksum(const std::vector<devices::Tensor>& weights);

// The `distsim train` flags that shape training (--steps, --global_batch,
// --seed, --optimizer, --learning_rate), as (flag, value) pairs: every
// process of a multi-process run must be given them alike.
std::vector<std::pair<std::string, std::string>> TrainingFlags(
    const TrainOptions& options);

}  // namespace distsim

#endif  // TOOLS_DISTSIM_CLASSIFIER_TRAINING_H_
