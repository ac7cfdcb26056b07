// The main job's classifier trained asynchronously with
// ParameterServerStrategy: a cluster of worker and ps tasks (gRPC servers
// of this process on 127.0.0.1), the model's variables and optimizer slots
// on the ps tasks, every step scheduled by the coordinator on whichever
// worker is free. A worker reads the variables, computes the gradient of
// the next batch of its own input pipeline (a per-worker dataset: its shard
// of the synthetic set), applies the optimizer to its copy and pushes the
// change to the ps tasks without waiting for the other workers.
//
//   absl::StatusOr<TrainResult> r = TrainClassifierOnParameterServers(
//       options, /*workers=*/2, /*ps=*/1, on_step);
//
// Asynchronous: the losses differ from the synchronous strategies' and from
// run to run (the workers' interleaving), but training converges.
#ifndef TOOLS_DISTSIM_PS_TRAINING_H_
#define TOOLS_DISTSIM_PS_TRAINING_H_

#include "absl/status/statusor.h"
#include "tools/distsim/classifier_training.h"

namespace distsim {

// Trains options.steps steps (each one batch of options.global_batch
// examples on one worker), calling on_step with each step's loss in the
// order the steps were scheduled. INVALID_ARGUMENT for fewer than one
// worker or ps task, or options that TrainClassifier refuses; UNAVAILABLE
// when no local port is free; the errors of the steps.
absl::StatusOr<TrainResult> TrainClassifierOnParameterServers(
    const TrainOptions& options, int workers, int ps,
    const StepCallback& on_step = {});

}  // namespace distsim

#endif  // TOOLS_DISTSIM_PS_TRAINING_H_
