#include "distribute/ps/coordinator_preemption.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/time.h"
#include "devices/status_macros.h"
#include "distribute/checkpoint/file_util.h"
#include "distribute/ps/ps_checkpoint.h"

namespace distribute {
namespace ps {
namespace {

constexpr char kLatest[] = "latest";
constexpr char kPrefix[] = "ps-";

}  // namespace

absl::StatusOr<std::unique_ptr<CoordinatorPreemptionHandler>>
CoordinatorPreemptionHandler::Create(ParameterServerStrategy& strategy,
                                     ClusterCoordinator& coordinator,
                                     std::vector<std::string> variables,
                                     std::string checkpoint_dir,
                                     TerminationConfig config) {
  if (checkpoint_dir.empty() || variables.empty()) {
    return absl::InvalidArgumentError(
        "CoordinatorPreemptionHandler needs a checkpoint directory and the "
        "names of the ps variables to save");
  }
  std::unique_ptr<CoordinatorPreemptionHandler> handler(
      new CoordinatorPreemptionHandler(
          strategy, coordinator, std::move(variables),
          std::move(checkpoint_dir),
          WithTerminationDefaults(std::move(config))));
  const std::string latest = checkpoint::JoinPath(handler->dir_, kLatest);
  if (!checkpoint::PathExists(latest)) return handler;
  ASSIGN_OR_RETURN(std::string text, checkpoint::ReadFileToString(latest));
  absl::string_view name = absl::StripAsciiWhitespace(text);
  int64_t steps = -1;
  if (!absl::ConsumePrefix(&name, kPrefix) || !absl::SimpleAtoi(name, &steps) ||
      steps < 0) {
    return absl::DataLossError(
        absl::StrCat("'", latest, "' does not name a checkpoint \"", kPrefix,
                     "<steps>\"; delete it to start over"));
  }
  const std::string path =
      checkpoint::JoinPath(handler->dir_, absl::StrCat(kPrefix, steps));
  RETURN_IF_ERROR(RestoreVariables(strategy, path));
  handler->total_run_calls_ = steps;
  handler->restored_from_ = path;
  return handler;
}

absl::Status CoordinatorPreemptionHandler::Run(
    const std::function<absl::Status()>& step) {
  auto stopped = [&] {
    return absl::AbortedError(absl::StrCat(
        "the coordinator stopped for preemption after ", total_run_calls_,
        " steps (checkpoint ", *saved_to_, "); start it again to resume"));
  };
  if (saved_to_.has_value()) return stopped();
  if (config_.termination_watcher()) {
    // The variables of the steps scheduled so far, every one finished.
    RETURN_IF_ERROR(coordinator_.Join(absl::InfiniteDuration()));
    RETURN_IF_ERROR(checkpoint::CreateDirectories(dir_));
    const std::string name = absl::StrCat(kPrefix, total_run_calls_);
    const std::string path = checkpoint::JoinPath(dir_, name);
    RETURN_IF_ERROR(SaveVariables(strategy_.client(), variables_, path));
    RETURN_IF_ERROR(checkpoint::WriteFileAtomically(
        checkpoint::JoinPath(dir_, kLatest), name + "\n"));
    saved_to_ = path;
    config_.exit_fn();
    return stopped();
  }
  absl::Status status = step();
  if (status.ok()) ++total_run_calls_;
  return status;
}

}  // namespace ps
}  // namespace distribute
