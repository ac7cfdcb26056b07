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
//
// The same cluster as processes (TF_CONFIG with jobs "chief", "worker" and
// "ps"): each worker and ps task calls ServeParameterServerTask, the chief
// CoordinateParameterServerTraining. Every task makes the model and data
// from the same options, which the chief checks as the tasks answer; the
// chief waits for every task to answer, trains,
// and then ends the tasks (TF's worker and ps servers run until killed;
// these end with the job, so a launcher sees every process exit).
#ifndef TOOLS_DISTSIM_PS_TRAINING_H_
#define TOOLS_DISTSIM_PS_TRAINING_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "devices/platform.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/server/channel.h"
#include "distribute/server/server.h"
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

// The same training on a cluster of simulated hosts in this process
// (distribute/ps/in_process_ps.h over a multi-host `platform`, e.g.
// sim:dgx_h100_cluster:3): worker w on host w (its replicas: the host's
// GPUs, else its CPU; each step's batch split over them and their
// gradients reduced on the host's CPU, as TF's worker does), ps task p on
// the CPU of host workers + p, the
// coordinator on host 0's CPU. Reading and updating the variables cost
// simulated network and ps-kernel time, and each step runs on the worker
// free first in simulated time. The losses are reported in step order once
// every step has run; `replica_devices` (if given) gets the workers'
// replica devices. Deterministic: the same options give the same losses,
// weights and trace. INVALID_ARGUMENT for fewer than one worker or ps task,
// or more than the platform's hosts; the errors of the steps.
absl::StatusOr<TrainResult> TrainClassifierOnSimulatedParameterServers(
    const TrainOptions& options, devices::Platform& platform, int workers,
    int ps, const StepCallback& on_step = {},
    std::vector<std::string>* replica_devices = nullptr);

// Serves task `task_type` ("worker" or "ps") `task_index` of `spec` until
// the chief ends it (or the process is killed); `log` hears when it serves.
// INVALID_ARGUMENT for another task type, options that TrainClassifier
// refuses, or a task that is not in `spec`; the server's errors.
absl::Status ServeParameterServerTask(
    const TrainOptions& options, const distribute::cluster::ClusterSpec& spec,
    const std::string& task_type, int task_index,
    const distribute::ServerOptions& server_options,
    const std::function<void(const std::string&)>& log = {});

// The chief: waits (at most `startup_timeout`, saying every 5 s which task
// it waits for) until every worker and ps task of `spec` answers, trains as
// TrainClassifierOnParameterServers does, then ends every task.
// INVALID_ARGUMENT when `spec` lacks a worker or ps job; DEADLINE_EXCEEDED
// naming a task that did not come up; FAILED_PRECONDITION naming a task
// started with other training flags (TrainingFlags) than the chief's; the
// errors of the steps. Every task that came up is ended on any error.
absl::StatusOr<TrainResult> CoordinateParameterServerTraining(
    const TrainOptions& options, const distribute::cluster::ClusterSpec& spec,
    const distribute::ChannelOptions& channel, absl::Duration startup_timeout,
    const StepCallback& on_step = {},
    const std::function<void(const std::string&)>& log = {});

}  // namespace distsim

#endif  // TOOLS_DISTSIM_PS_TRAINING_H_
