// TFConfigClusterResolver: the cluster and this task's place in it from the
// TF_CONFIG environment variable, as
// tf.distribute.cluster_resolver.TFConfigClusterResolver.
//
// TF_CONFIG is a JSON object:
//   {"cluster": {"chief": ["c0:2222"], "worker": ["w0:2222", "w1:2222"],
//                "ps": {"0": "ps0:2222"}},
//    "task": {"type": "worker", "index": 1},
//    "rpc_layer": "grpc",            (optional)
//    "environment": "cloud",         (optional)
//    "session_master": "m:2222"}     (optional)
// A missing or empty TF_CONFIG is an empty cluster with no task: one local
// process. Other keys (and other members of "task") are ignored, as in TF.
//
// Example:
//   auto resolver = TFConfigClusterResolver::FromEnvironment();  // getenv
//   if (!resolver.ok()) return resolver.status();  // names the bad field
//   (*resolver)->task_type();   // "worker"
//   (*resolver)->task_id();     // 1
//   (*resolver)->master();      // "grpc://w1:2222"
//
// TF_CONFIG is read and validated once, when the resolver is created, so a
// malformed one fails there with INVALID_ARGUMENT naming the field:
// malformed JSON (line and column), "cluster" or "task" not an object, a job
// whose tasks are not a list or index-keyed object of "host:port" strings, a
// bad job name or address, an address used twice, more than one "chief" or
// "evaluator", a task type that is not a job of the cluster (except
// "evaluator", which may run outside it), an index that is missing, negative,
// not an integer or not a task of its job.
#ifndef DISTRIBUTE_CLUSTER_TF_CONFIG_CLUSTER_RESOLVER_H_
#define DISTRIBUTE_CLUSTER_TF_CONFIG_CLUSTER_RESOLVER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distribute/cluster/cluster_resolver.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/cluster/env.h"

namespace distribute {
namespace cluster {

struct TFConfigClusterResolverOptions {
  // Each, when set, overrides what TF_CONFIG says.
  std::optional<std::string> task_type;
  std::optional<int64_t> task_id;
  std::optional<std::string> rpc_layer;
  std::optional<std::string> environment;
  // Counts this task's accelerators. When unset, the GPUs the CUDA driver
  // shows this process (CudaDriverGpuCount, cuda_driver.h: loaded at run
  // time, none where no driver is installed), as TensorFlow counts the local
  // devices. The driver applies the process's own CUDA_VISIBLE_DEVICES, not
  // an injected environment's (FromEnv), and counting initializes it, so a
  // later change to CUDA_VISIBLE_DEVICES has no effect on this process: set
  // it before asking. Inject a count where devices are found another way.
  std::function<absl::StatusOr<AcceleratorCounts>()> local_accelerators;
};

// Whether a TF_CONFIG value is blank (empty or whitespace): TF reads it as
// unset, a task outside any cluster.
bool TfConfigIsBlank(absl::string_view tf_config);

class TFConfigClusterResolver : public ClusterResolver {
 public:
  // Reads TF_CONFIG from the process environment.
  static absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>>
  FromEnvironment(TFConfigClusterResolverOptions options = {});
  // Reads TF_CONFIG through `env`.
  static absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>> FromEnv(
      const EnvLookup& env, TFConfigClusterResolverOptions options = {});
  // Parses `tf_config` as the value of TF_CONFIG ("" = unset).
  static absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>> FromJson(
      absl::string_view tf_config, TFConfigClusterResolverOptions options = {});

  absl::StatusOr<ClusterSpec> cluster_spec() const override {
    return cluster_spec_;
  }
  std::optional<std::string> task_type() const override;
  std::optional<int64_t> task_id() const override;
  std::optional<std::string> rpc_layer() const override;
  std::string environment() const override;
  // TF_CONFIG's "session_master", if any.
  const std::optional<std::string>& session_master() const {
    return session_master_;
  }

  void set_task_type(std::optional<std::string> task_type) {
    options_.task_type = std::move(task_type);
  }
  // INVALID_ARGUMENT for a negative id (and the id is left unchanged).
  absl::Status set_task_id(std::optional<int64_t> task_id);
  void set_rpc_layer(std::optional<std::string> rpc_layer) {
    options_.rpc_layer = std::move(rpc_layer);
  }

 protected:
  // TensorFlow's rules, in order: with no task named, TF_CONFIG's
  // "session_master" if set; "" when the cluster is empty or is one job of
  // one task; "" when no task type is named and this task's own job is not
  // in the cluster (an evaluator); otherwise the address of the task
  // (arguments, else this resolver's task) as "<rpc_layer>://host:port".
  // FAILED_PRECONDITION when no task type or id is known; NOT_FOUND when the
  // cluster lacks the named task.
  absl::StatusOr<std::string> Master(
      const std::optional<std::string>& task_type,
      std::optional<int64_t> task_id,
      const std::optional<std::string>& rpc_layer) const override;
  // This task's accelerators from the local count. Asking about another task
  // is UNIMPLEMENTED: only the local one can be counted.
  absl::StatusOr<AcceleratorCounts> NumAccelerators(
      const std::optional<std::string>& task_type,
      std::optional<int64_t> task_id) const override;

 private:
  static absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>> Parse(
      absl::string_view tf_config, TFConfigClusterResolverOptions options);

  explicit TFConfigClusterResolver(TFConfigClusterResolverOptions options)
      : options_(std::move(options)) {}

  TFConfigClusterResolverOptions options_;
  ClusterSpec cluster_spec_;
  // From TF_CONFIG.
  std::optional<std::string> config_task_type_;
  std::optional<int64_t> config_task_id_;
  std::optional<std::string> config_rpc_layer_;
  std::optional<std::string> config_environment_;
  std::optional<std::string> session_master_;
};

}  // namespace cluster
}  // namespace distribute

#endif  // DISTRIBUTE_CLUSTER_TF_CONFIG_CLUSTER_RESOLVER_H_
