// TF's PreemptionCheckpointHandler on the coordinator of
// ParameterServerStrategy: in parameter-server training the coordinator
// holds the program's progress, so it is the coordinator that saves (TF:
// "the coordinator saves; workers and ps tasks are restarted"). When the
// coordinator is told to stop (SIGTERM by default), it lets the functions
// already scheduled finish, saves the ps tasks' variables and the number of
// steps scheduled, and exits; started again, it restores them (recreating
// what restarted ps tasks lost, as RestoreVariables does) and goes on from
// that step. A worker that is preempted needs none of this: its functions
// run on the other workers (cluster_coordinator.h).
//
// Example (coordinator):
//   auto handler = *ps::CoordinatorPreemptionHandler::Create(
//       *strategy, *coordinator, {"w", "b"}, "/shared/ps_ckpt");
//   for (int64_t step = handler->total_run_calls(); step < steps; ++step) {
//     absl::Status s = handler->Run([&] {
//       return coordinator->Schedule("train_step", {}).status();
//     });
//     if (!s.ok()) return s;   // (by default a preempted coordinator exited)
//   }
//
// Files: "<dir>/ps-<steps>" (SaveVariables' checkpoint, named by the steps
// scheduled before it) and "<dir>/latest", written atomically after it,
// naming the newest.
#ifndef DISTRIBUTE_PS_COORDINATOR_PREEMPTION_H_
#define DISTRIBUTE_PS_COORDINATOR_PREEMPTION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distribute/checkpoint/preemption_checkpoint_handler.h"
#include "distribute/ps/cluster_coordinator.h"
#include "distribute/ps/parameter_server_strategy.h"

namespace distribute {
namespace ps {

class CoordinatorPreemptionHandler {
 public:
  // `variables` are the ps variables to save (each must exist when one is
  // saved). Restores the directory's latest checkpoint, if any.
  // INVALID_ARGUMENT for an empty directory or variable list; DATA_LOSS for
  // a "latest" file that does not name a checkpoint of this handler; the
  // errors of RestoreVariables. `strategy` and `coordinator` must outlive
  // the handler.
  static absl::StatusOr<std::unique_ptr<CoordinatorPreemptionHandler>> Create(
      ParameterServerStrategy& strategy, ClusterCoordinator& coordinator,
      std::vector<std::string> variables, std::string checkpoint_dir,
      TerminationConfig config = {});

  // Runs `step` (which schedules one step's functions) unless the watcher
  // has fired: then waits for every scheduled function (Join), saves, and
  // calls exit_fn. A step that returns OK counts in total_run_calls().
  // ABORTED when exit_fn returned (and for every later call); the error of
  // a scheduled function (nothing is saved then: the variables are not
  // those of a finished step); the errors of the save.
  absl::Status Run(const std::function<absl::Status()>& step);

  int64_t total_run_calls() const { return total_run_calls_; }
  const std::optional<std::string>& restored_from() const {
    return restored_from_;
  }
  const std::optional<std::string>& saved_to() const { return saved_to_; }

 private:
  CoordinatorPreemptionHandler(ParameterServerStrategy& strategy,
                               ClusterCoordinator& coordinator,
                               std::vector<std::string> variables,
                               std::string dir, TerminationConfig config)
      : strategy_(strategy),
        coordinator_(coordinator),
        variables_(std::move(variables)),
        dir_(std::move(dir)),
        config_(std::move(config)) {}

  ParameterServerStrategy& strategy_;
  ClusterCoordinator& coordinator_;
  const std::vector<std::string> variables_;
  const std::string dir_;
  TerminationConfig config_;
  int64_t total_run_calls_ = 0;
  std::optional<std::string> restored_from_;
  std::optional<std::string> saved_to_;
};

}  // namespace ps
}  // namespace distribute

#endif  // DISTRIBUTE_PS_COORDINATOR_PREEMPTION_H_
