// PreemptionCheckpointHandler, as tf.distribute.experimental
// .PreemptionCheckpointHandler with its TerminationConfig: when a worker is
// told to stop (SIGTERM, as a cluster scheduler sends before it preempts a
// task, or a watcher of the user's), every worker of the strategy saves a
// checkpoint after the same step and exits; started again with the same
// program, training resumes from that checkpoint and reaches the result of
// a run that was never interrupted.
//
// Example (the same on every worker):
//   Checkpoint ckpt = *Checkpoint::ForStrategy(*strategy);
//   ckpt.TrackVariable("w", w);                  // and optimizer slots
//   auto handler = *PreemptionCheckpointHandler::Create(*strategy, ckpt,
//                                                       "/shared/ckpt");
//   // Restored: total_run_calls() steps ran before the last preemption.
//   for (int64_t step = handler->total_run_calls(); step < steps; ++step) {
//     absl::Status s = handler->Run([&] { return TrainStep(step); });
//     if (!s.ok()) return s;   // (by default a preempted worker has exited)
//   }
//
// How the workers agree: every Run first asks, on every worker, whether
// its watcher has fired, and reduces the answers over the strategy (a SUM of
// one float per replica with Strategy::Reduce: a small collective across
// the workers of a multi-worker strategy, nothing for a single-worker one).
// Every worker gets the same answer at the same call, so they all save
// after the same number of steps, whatever moment the signal came at; a
// worker never runs a step that another skips. The checkpoint is written
// through a CheckpointManager over `checkpoint_dir` (the newest kept; the
// chief writes, as checkpoint.h describes) and holds, besides what the
// program tracks, the number of completed Run calls.
//
// Unlike TF (whose workers learn of a peer's signal through the coordination
// service, without a per-step collective), the agreement costs one small
// collective per step across workers; in exchange no timing of the signal
// can make the workers save at different steps.
#ifndef DISTRIBUTE_CHECKPOINT_PREEMPTION_CHECKPOINT_HANDLER_H_
#define DISTRIBUTE_CHECKPOINT_PREEMPTION_CHECKPOINT_HANDLER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distribute/checkpoint/checkpoint.h"
#include "distribute/checkpoint/checkpoint_manager.h"
#include "distribute/strategy.h"

namespace distribute {

// TF's restart code off Google Cloud (BorgTerminationConfig's exit_fn,
// sys.exit(42)): a scheduler that restarts tasks on it knows the task
// stopped on purpose after saving.
inline constexpr int kPreemptionExitCode = 42;

struct TerminationConfig {
  // Polled at the start of every Run; true once this worker has to stop.
  // Default: this process has received SIGTERM since a handler with the
  // default watcher was created (the handler installs a SIGTERM action that
  // records it; the process then no longer dies of SIGTERM on its own).
  std::function<bool()> termination_watcher;
  // Called once the checkpoint is saved. Default: flush stdout and stderr
  // and end the process at once with `exit_code` (without running static
  // destructors while the strategy's threads still run). If it returns, Run
  // returns ABORTED naming the checkpoint.
  std::function<void()> exit_fn;
  int exit_code = kPreemptionExitCode;
};

// `config` with its defaults filled in, as PreemptionCheckpointHandler
// uses it: the SIGTERM watcher (installing its SIGTERM action) when there is
// no watcher, the flush-and-exit function when there is no exit_fn. For
// handlers of other programs (ps::CoordinatorPreemptionHandler).
TerminationConfig WithTerminationDefaults(TerminationConfig config);

class PreemptionCheckpointHandler {
 public:
  // The name under which `checkpoint` keeps the handler's completed Run
  // calls.
  static constexpr char kRunCallsName[] = "preemption_handler/total_run_calls";

  // Tracks the run count in `checkpoint` (which, like `strategy`, must
  // outlive the handler, and is saved and restored through it), makes a
  // CheckpointManager over `checkpoint_dir` keeping the newest checkpoint,
  // and restores the latest checkpoint there, if any, so that
  // total_run_calls() says where to resume. Every worker calls it.
  // INVALID_ARGUMENT for an empty directory; FAILED_PRECONDITION when the
  // strategy's devices carry no values (a timing-only simulated platform:
  // there is nothing to save); the errors of Checkpoint::TrackInt64 (the
  // name is taken), CheckpointManager::Create and Restore.
  static absl::StatusOr<std::unique_ptr<PreemptionCheckpointHandler>> Create(
      Strategy& strategy, checkpoint::Checkpoint& checkpoint,
      std::string checkpoint_dir, TerminationConfig config = {});

  PreemptionCheckpointHandler(const PreemptionCheckpointHandler&) = delete;
  PreemptionCheckpointHandler& operator=(const PreemptionCheckpointHandler&) =
      delete;

  // Runs `step` (one training step, with whatever collectives it makes)
  // unless the workers agree to stop: then every worker saves the
  // checkpoint and calls exit_fn. Returns step's status; a step that
  // succeeds counts in total_run_calls(). ABORTED when exit_fn returned
  // (the checkpoint's path in the message), and for every later call. The
  // errors of the agreement's collective and of the save.
  absl::Status Run(const std::function<absl::Status()>& step);

  // Run calls completed, including those before the restored checkpoint.
  int64_t total_run_calls() const { return total_run_calls_; }
  // The checkpoint restored by Create, if there was one.
  const std::optional<std::string>& restored_from() const {
    return restored_from_;
  }
  // The manager the handler saves through (the newest checkpoint of the
  // directory kept): save periodic checkpoints with it too, on every
  // worker at the same steps, so that they share the directory's state.
  checkpoint::CheckpointManager& manager() { return *manager_; }
  // The checkpoint saved for a preemption, once there is one.
  const std::optional<std::string>& saved_to() const { return saved_to_; }

 private:
  PreemptionCheckpointHandler(Strategy& strategy, TerminationConfig config)
      : strategy_(strategy), config_(std::move(config)) {}

  // Whether any worker's watcher has fired (the same answer everywhere).
  absl::StatusOr<bool> AnyWorkerStopping(bool mine);

  Strategy& strategy_;
  TerminationConfig config_;
  std::unique_ptr<checkpoint::CheckpointManager> manager_;
  int64_t total_run_calls_ = 0;
  std::optional<std::string> restored_from_;
  std::optional<std::string> saved_to_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CHECKPOINT_PREEMPTION_CHECKPOINT_HANDLER_H_
