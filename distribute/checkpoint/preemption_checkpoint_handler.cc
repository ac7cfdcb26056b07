#include "distribute/checkpoint/preemption_checkpoint_handler.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devices/platform.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/reduce_op.h"
#include "distribute/values.h"

namespace distribute {
namespace {

// Set by the SIGTERM action; read by the default watcher.
std::atomic<bool> sigterm_received{false};
static_assert(std::atomic<bool>::is_always_lock_free,
              "the signal handler needs a lock-free flag");

void OnSigterm(int) { sigterm_received.store(true); }

// Installs the SIGTERM action once per process.
void WatchSigterm() {
  static const bool installed = [] {
    struct sigaction action {};
    action.sa_handler = OnSigterm;
    sigemptyset(&action.sa_mask);
    // Interrupted system calls resume: gRPC's and the transports' reads
    // need not see EINTR for this.
    action.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &action, nullptr);
    return true;
  }();
  (void)installed;
}

}  // namespace

TerminationConfig WithTerminationDefaults(TerminationConfig config) {
  if (!config.termination_watcher) {
    WatchSigterm();
    config.termination_watcher = [] { return sigterm_received.load(); };
  }
  if (!config.exit_fn) {
    const int code = config.exit_code;
    config.exit_fn = [code] {
      std::cout.flush();
      std::cerr.flush();
      std::fflush(nullptr);
      std::_Exit(code);
    };
  }
  return config;
}

absl::StatusOr<std::unique_ptr<PreemptionCheckpointHandler>>
PreemptionCheckpointHandler::Create(Strategy& strategy,
                                    checkpoint::Checkpoint& checkpoint,
                                    std::string checkpoint_dir,
                                    TerminationConfig config) {
  if (checkpoint_dir.empty()) {
    return absl::InvalidArgumentError(
        "PreemptionCheckpointHandler needs a checkpoint directory (shared by "
        "every worker) to save into and resume from");
  }
  devices::Platform& platform = strategy.extended().platform();
  for (const std::string& name : strategy.extended().WorkerDevices()) {
    ASSIGN_OR_RETURN(devices::Device * device, platform.FindDevice(name));
    if (!device->functional()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "PreemptionCheckpointHandler: device ", name,
          " carries no values (a timing-only simulated platform), so there "
          "is nothing to checkpoint; use a functional platform or train "
          "without a checkpoint directory"));
    }
  }
  std::unique_ptr<PreemptionCheckpointHandler> handler(
      new PreemptionCheckpointHandler(
          strategy, WithTerminationDefaults(std::move(config))));
  RETURN_IF_ERROR(
      checkpoint.TrackInt64(kRunCallsName, &handler->total_run_calls_));
  ASSIGN_OR_RETURN(std::unique_ptr<checkpoint::CheckpointManager> manager,
                   checkpoint::CheckpointManager::Create(
                       checkpoint, std::move(checkpoint_dir),
                       /*max_to_keep=*/1));
  handler->manager_ = std::move(manager);
  ASSIGN_OR_RETURN(std::optional<std::string> restored,
                   handler->manager_->RestoreLatest());
  handler->restored_from_ = std::move(restored);
  return handler;
}

absl::StatusOr<bool> PreemptionCheckpointHandler::AnyWorkerStopping(bool mine) {
  if (strategy_.NumWorkers() <= 1) return mine;
  const float flag = mine ? 1.0f : 0.0f;
  ASSIGN_OR_RETURN(
      PerReplica flags,
      strategy_.ExperimentalDistributeValuesFromFunction(
          [flag](const ValueContext&) -> absl::StatusOr<devices::Tensor> {
            return devices::Tensor::FromVector<float>({flag}, {1});
          }));
  ASSIGN_OR_RETURN(devices::Tensor sum,
                   strategy_.Reduce(ReduceOp::kSum, flags));
  if (!sum.has_data()) {
    return absl::InternalError(
        "PreemptionCheckpointHandler: the agreement's reduction carries no "
        "value");
  }
  return sum.data<float>()[0] > 0.0f;
}

absl::Status PreemptionCheckpointHandler::Run(
    const std::function<absl::Status()>& step) {
  if (saved_to_.has_value()) {
    return absl::AbortedError(
        absl::StrCat("training stopped for preemption after ", total_run_calls_,
                     " steps (checkpoint ", *saved_to_,
                     "); start the program again to resume"));
  }
  ASSIGN_OR_RETURN(bool stop, AnyWorkerStopping(config_.termination_watcher()));
  if (stop) {
    ASSIGN_OR_RETURN(std::string saved, manager_->Save());
    saved_to_ = std::move(saved);
    config_.exit_fn();
    return absl::AbortedError(
        absl::StrCat("training stopped for preemption after ", total_run_calls_,
                     " steps (checkpoint ", *saved_to_,
                     "); start the program again to resume"));
  }
  absl::Status status = step();
  if (status.ok()) ++total_run_calls_;
  return status;
}

}  // namespace distribute
