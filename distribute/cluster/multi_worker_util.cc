#include "distribute/cluster/multi_worker_util.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"

namespace distribute {
namespace cluster {
namespace {

constexpr absl::string_view kTaskTypes[] = {"chief", "worker", "evaluator",
                                            "ps"};

bool KnownTaskType(absl::string_view type) {
  for (absl::string_view known : kTaskTypes) {
    if (type == known) return true;
  }
  return false;
}

int64_t TaskCount(const ClusterSpec& spec, absl::string_view job) {
  absl::StatusOr<int64_t> n = spec.num_tasks(job);
  return n.ok() ? *n : 0;
}

std::string Leader(absl::string_view job) {
  return absl::StrCat("/job:", job, "/replica:0/task:0");
}

}  // namespace

absl::Status ValidateClusterSpec(const ClusterSpec& spec,
                                 absl::string_view task_type, int64_t task_id) {
  for (const std::string& job : spec.jobs()) {
    if (!KnownTaskType(job)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the cluster spec has a job \"", job,
          "\"; multi-worker training knows the jobs chief, worker, evaluator "
          "and ps (cluster spec ",
          spec.DebugString(), ")"));
    }
  }
  if (!task_type.empty() && !KnownTaskType(task_type)) {
    return absl::InvalidArgumentError(
        absl::StrCat("unrecognized task type \"", task_type,
                     "\"; the task types are chief, worker, evaluator and "
                     "ps"));
  }
  if (!task_type.empty() && task_type != "evaluator" &&
      !spec.has_job(task_type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task type \"", task_type, "\" is not a job of the cluster spec ",
        spec.DebugString()));
  }
  if (TaskCount(spec, "chief") > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("there must be at most one chief task, and the cluster "
                     "spec has ",
                     TaskCount(spec, "chief")));
  }
  if (TaskCount(spec, "evaluator") > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("there must be at most one evaluator task, and the "
                     "cluster spec has ",
                     TaskCount(spec, "evaluator")));
  }
  if (task_id < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("task id ", task_id, " is negative"));
  }
  if (!task_type.empty() && spec.has_job(task_type) &&
      task_id >= TaskCount(spec, task_type)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task id ", task_id, " exceeds the largest id of the ", task_type,
        " tasks (", TaskCount(spec, task_type) - 1, ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> IsChief(const ClusterSpec& spec,
                             absl::string_view task_type, int64_t task_id) {
  RETURN_IF_ERROR(ValidateClusterSpec(spec, task_type, task_id));
  if (task_type == "chief" || task_type == "evaluator") return true;
  return !spec.has_job("chief") && task_type == "worker" && task_id == 0;
}

absl::StatusOr<int64_t> WorkerCount(const ClusterSpec& spec,
                                    absl::string_view task_type) {
  RETURN_IF_ERROR(ValidateClusterSpec(spec, task_type, 0));
  if (task_type == "evaluator") return TaskCount(spec, "evaluator");
  if (task_type != "chief" && task_type != "worker") {
    return absl::InvalidArgumentError(absl::StrCat(
        "WorkerCount is for chief, worker and evaluator tasks, not \"",
        task_type, "\""));
  }
  return TaskCount(spec, "chief") + TaskCount(spec, "worker");
}

absl::StatusOr<int64_t> IdInCluster(const ClusterSpec& spec,
                                    absl::string_view task_type,
                                    int64_t task_id) {
  RETURN_IF_ERROR(ValidateClusterSpec(spec, task_type, task_id));
  if (task_type == "chief") return 0;
  if (task_type == "worker") return task_id + TaskCount(spec, "chief");
  if (task_type == "evaluator") return task_id;
  return absl::InvalidArgumentError(
      absl::StrCat("there is no id in the cluster for a \"", task_type,
                   "\" task; chief, worker and evaluator tasks have one"));
}

absl::StatusOr<std::string> CollectiveLeader(const ClusterSpec& spec,
                                             absl::string_view task_type,
                                             int64_t task_id) {
  if (spec.empty()) return std::string();
  RETURN_IF_ERROR(ValidateClusterSpec(spec, task_type, task_id));
  if (task_type == "evaluator") return std::string();
  if (spec.has_job("chief")) return Leader("chief");
  if (!spec.has_job("worker")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the cluster spec has neither a chief nor a worker job to lead the "
        "collectives: ",
        spec.DebugString()));
  }
  return Leader("worker");
}

absl::StatusOr<std::string> CoordinationLeader(const ClusterSpec& spec) {
  if (spec.empty()) return std::string();
  if (spec.has_job("ps")) return Leader("ps");
  if (spec.has_job("chief")) return Leader("chief");
  if (!spec.has_job("worker")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the cluster spec has no ps, chief or worker job to lead the "
        "coordination service: ",
        spec.DebugString()));
  }
  return Leader("worker");
}

}  // namespace cluster
}  // namespace distribute
