// ClusterSpec: the jobs of a distributed program and the "host:port" address
// of every task, as tf.train.ClusterSpec. A job is dense (tasks 0..n-1, TF's
// list form) or sparse (any non-negative indices, TF's dict form). A
// ClusterSpec is validated when built and immutable afterwards.
//
// Example:
//   absl::StatusOr<ClusterSpec> spec = ClusterSpec::Create(
//       {{"worker", {"w0:2222", "w1:2222"}}, {"ps", {"ps0:2222"}}});
//   spec->jobs();                      // {"ps", "worker"}
//   spec->num_tasks("worker");         // 2
//   spec->task_address("worker", 1);   // "w1:2222"
//   spec->ToJson();  // {"ps":["ps0:2222"],"worker":["w0:2222","w1:2222"]}
//
//   ClusterSpec::CreateSparse({{"worker", {{1, "w1:2222"}}}});  // task 1 only
//   ClusterSpec::FromJson(R"({"worker": {"1": "w1:2222"}})");  // the same
//
// Validation (INVALID_ARGUMENT, naming the job and task): a job name must
// match [A-Za-z][A-Za-z0-9_]* (it becomes "/job:<name>" in device names);
// task indices are in [0, 2^31 - 1]; every address is "host:port" (or
// "[v6-address]:port") with a port in [0, 65535]; no two tasks share an
// address.
#ifndef DISTRIBUTE_CLUSTER_CLUSTER_SPEC_H_
#define DISTRIBUTE_CLUSTER_CLUSTER_SPEC_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distribute/cluster/cluster.pb.h"
#include "distribute/cluster/json.h"

namespace distribute {
namespace cluster {

class ClusterSpec {
 public:
  // Task index -> address.
  using JobTasks = std::map<int64_t, std::string>;

  // An empty cluster: no jobs (a single local process).
  ClusterSpec() = default;

  // Dense jobs: task i of a job is its i'th address. Taken by value: pass
  // an rvalue and the addresses are moved, not copied.
  static absl::StatusOr<ClusterSpec> Create(
      std::map<std::string, std::vector<std::string>> jobs);
  // Sparse jobs: each job maps task indices to addresses (moved in, as
  // above).
  static absl::StatusOr<ClusterSpec> CreateSparse(
      std::map<std::string, JobTasks> jobs);
  // From the protobuf form. A job named twice is INVALID_ARGUMENT.
  static absl::StatusOr<ClusterSpec> FromClusterDef(const ClusterDef& def);
  // From JSON text: an object of job name -> list of addresses, or job name
  // -> object of decimal task index -> address (what TF_CONFIG's "cluster"
  // holds). Malformed JSON gives the line and column.
  static absl::StatusOr<ClusterSpec> FromJson(absl::string_view json);
  // From an already parsed JSON value of that shape; errors name the offending
  // element as `path` followed by its keys, e.g. "TF_CONFIG.cluster.worker[1]".
  static absl::StatusOr<ClusterSpec> FromJsonValue(const Json& value,
                                                   absl::string_view path);

  // The protobuf form, jobs sorted by name.
  ClusterDef AsClusterDef() const;

  // The job names, sorted.
  std::vector<std::string> jobs() const;
  bool empty() const { return jobs_.empty(); }
  bool has_job(absl::string_view job) const;
  // The number of tasks of `job`. NOT_FOUND for an unknown job.
  absl::StatusOr<int64_t> num_tasks(absl::string_view job) const;
  // The task indices of `job`, ascending. NOT_FOUND for an unknown job.
  absl::StatusOr<std::vector<int64_t>> task_indices(
      absl::string_view job) const;
  // The address of task `index` of `job`. NOT_FOUND for an unknown job or a
  // task the job does not define.
  absl::StatusOr<std::string> task_address(absl::string_view job,
                                           int64_t index) const;
  // The addresses of `job` by index, from 0 to the largest index, with
  // nullopt where a sparse job defines no task. NOT_FOUND for an unknown job;
  // OUT_OF_RANGE when the list would exceed 2^20 entries (a sparse job with a
  // huge index: read it with task_indices() and task_address()).
  absl::StatusOr<std::vector<std::optional<std::string>>> job_tasks(
      absl::string_view job) const;
  // True when `job` exists and its indices are exactly 0..n-1.
  bool is_dense(absl::string_view job) const;
  // The total number of tasks over all jobs.
  int64_t total_tasks() const;
  // Every job with its tasks.
  const std::map<std::string, JobTasks>& job_map() const { return jobs_; }

  // JSON, jobs sorted, dense jobs as lists and sparse ones as objects keyed by
  // decimal index; FromJson(ToJson()) gives back an equal ClusterSpec.
  std::string ToJson() const;
  // 16 hex digits that are the same for equal specs in every process and
  // build (a 64-bit FNV-1a hash of ToJson(), jobs without tasks left out):
  // what tasks compare to tell that they were given the same cluster. It
  // catches misconfiguration; it is not a secret and not collision-proof
  // against an adversary (the cluster token is the authentication).
  std::string Fingerprint() const;
  // One line for logs: "ClusterSpec{ps: [ps0:2222], worker: {1: w1:2222}}".
  std::string DebugString() const;

  friend bool operator==(const ClusterSpec& a, const ClusterSpec& b) {
    return a.jobs_ == b.jobs_;
  }
  friend bool operator!=(const ClusterSpec& a, const ClusterSpec& b) {
    return !(a == b);
  }

 private:
  explicit ClusterSpec(std::map<std::string, JobTasks> jobs)
      : jobs_(std::move(jobs)) {}

  std::map<std::string, JobTasks> jobs_;
};

// OK when `name` is a valid job name ([A-Za-z][A-Za-z0-9_]*); otherwise
// INVALID_ARGUMENT saying why.
absl::Status ValidateJobName(absl::string_view name);

// OK when `address` is "host:port" or "[ipv6]:port" with a port in [0, 65535];
// otherwise INVALID_ARGUMENT saying what is wrong (without naming the task).
absl::Status ValidateTaskAddress(absl::string_view address);

}  // namespace cluster
}  // namespace distribute

#endif  // DISTRIBUTE_CLUSTER_CLUSTER_SPEC_H_
