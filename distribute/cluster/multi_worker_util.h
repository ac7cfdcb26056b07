// tf.distribute's multi_worker_util: who is chief, how many workers a
// cluster has and each one's id, and which task leads the collectives, with
// TF's rules and checks. A task type is "chief", "worker", "evaluator",
// "ps", or "" (none given, TF's None).
//
//   ClusterSpec spec = *ClusterSpec::Create(
//       {{"chief", {"c:2222"}}, {"worker", {"w0:2222", "w1:2222"}}});
//   *IsChief(spec, "worker", 0);           // false: there is a chief
//   *WorkerCount(spec, "worker");          // 3: the chief is a worker too
//   *IdInCluster(spec, "worker", 1);       // 2: workers count after the chief
//   *CollectiveLeader(spec, "worker", 1);  // "/job:chief/replica:0/task:0"
//
// Every function first checks the spec and the task as TF's
// _validate_cluster_spec does, INVALID_ARGUMENT otherwise: every job is one
// of the four task types; `task_type` is one of them or ""; a `task_type`
// other than "evaluator" is a job of the spec; at most one chief and one
// evaluator; `task_id` is below the number of `task_type`'s tasks.
#ifndef DISTRIBUTE_CLUSTER_MULTI_WORKER_UTIL_H_
#define DISTRIBUTE_CLUSTER_MULTI_WORKER_UTIL_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distribute/cluster/cluster_spec.h"

namespace distribute {
namespace cluster {

absl::Status ValidateClusterSpec(const ClusterSpec& spec,
                                 absl::string_view task_type, int64_t task_id);

// Whether the task is chief: the chief and the evaluator (which is a
// cluster of its own) are; without a chief job, worker 0 is.
absl::StatusOr<bool> IsChief(const ClusterSpec& spec,
                             absl::string_view task_type, int64_t task_id);

// The workers of the task's cluster: the chief and the workers for a chief
// or worker task, the evaluators for an evaluator. INVALID_ARGUMENT for
// other task types ("ps").
absl::StatusOr<int64_t> WorkerCount(const ClusterSpec& spec,
                                    absl::string_view task_type);

// The task's id among WorkerCount's: the chief is 0, worker i is i + (the
// number of chiefs), evaluator i is i. INVALID_ARGUMENT for other task
// types.
absl::StatusOr<int64_t> IdInCluster(const ClusterSpec& spec,
                                    absl::string_view task_type,
                                    int64_t task_id);

// The device-name prefix of the task that leads collectives: the chief's
// when the spec has one, else worker 0's; "" for an empty spec and for an
// evaluator (which runs none).
absl::StatusOr<std::string> CollectiveLeader(const ClusterSpec& spec,
                                             absl::string_view task_type,
                                             int64_t task_id);

// The task that leads the coordination service: ps 0, else the chief,
// else worker 0; "" for an empty spec.
absl::StatusOr<std::string> CoordinationLeader(const ClusterSpec& spec);

}  // namespace cluster
}  // namespace distribute

#endif  // DISTRIBUTE_CLUSTER_MULTI_WORKER_UTIL_H_
