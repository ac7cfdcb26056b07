// SlurmClusterResolver: the cluster of a Slurm job step, as
// tf.distribute.cluster_resolver.SlurmClusterResolver. Every Slurm task
// (process) of the step becomes one task of the cluster; tasks on the same
// node get consecutive ports from port_base and disjoint sets of that node's
// GPUs.
//
// Environment read (Slurm sets these inside `srun`):
//   SLURM_PROCID               this process's rank in the step (required)
//   SLURM_STEP_NUM_TASKS       number of tasks (when `jobs` is not given)
//   SLURM_STEP_NODELIST        compressed host list, e.g. "t02n[13,41-43]"
//                              (unless `tasks_per_host` is given)
//   SLURM_STEP_TASKS_PER_NODE  e.g. "2(x3),1" (unless tasks_per_node or
//                              tasks_per_host is given)
//   SLURM_STEP_NUM_NODES       optional cross-check of the host count
//   SLURMD_NODENAME,           optional cross-check of where the rank runs
//   SLURM_LOCALID              (unless tasks_per_host is given): a step
//                              distributed otherwise than in blocks (srun -m
//                              cyclic) is INVALID_ARGUMENT
//   CUDA_VISIBLE_DEVICES       GPUs per node (unless gpus_per_node is given;
//                              without either, `nvidia-smi --list-gpus`
//                              counts them, as in TF)
//
// Ranks are laid out as Slurm's default block distribution does: the tasks of
// the first node of the list, then the next node's, and so on. Jobs take
// consecutive ranks in job-name order. (TensorFlow sorts hosts by name
// instead, which disagrees with Slurm's ranks for lists such as n[9-10].)
//
// Example (SLURM_PROCID=1, SLURM_STEP_NODELIST=t02n[13,41,43],
//          SLURM_STEP_TASKS_PER_NODE=2(x2),1, CUDA_VISIBLE_DEVICES=0,1):
//   SlurmClusterResolverOptions options;
//   options.jobs = {{"ps", 1}, {"worker", 4}};
//   auto resolver = SlurmClusterResolver::Create(options);
//   (*resolver)->cluster_spec();
//     // ps: [t02n13:8888], worker: [t02n13:8889, t02n41:8888, t02n41:8889,
//     //                             t02n43:8888]
//   (*resolver)->task_type();             // "worker" (rank 1)
//   (*resolver)->task_id();               // 0
//   (*resolver)->cuda_visible_devices();  // "1"
//   (*resolver)->ApplyCudaVisibleDevices();  // sets it for this process
//
// The environment is read once, by Create(); errors are INVALID_ARGUMENT
// naming the variable or option (FAILED_PRECONDITION for a variable that is
// missing, as outside a Slurm step).
#ifndef DISTRIBUTE_CLUSTER_SLURM_CLUSTER_RESOLVER_H_
#define DISTRIBUTE_CLUSTER_SLURM_CLUSTER_RESOLVER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distribute/cluster/cluster_resolver.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/cluster/env.h"

namespace distribute {
namespace cluster {

struct SlurmClusterResolverOptions {
  // Job name -> number of tasks; they must add up to the step's task count.
  // Empty: {"worker": SLURM_STEP_NUM_TASKS}.
  std::map<std::string, int64_t> jobs;
  // The port of the first task on each node; the k'th task of a node listens
  // on port_base + k.
  int64_t port_base = 8888;
  // GPUs on each node. Unset: the number CUDA_VISIBLE_DEVICES shows, else
  // count_node_gpus's count (pass 0 for CPU-only nodes).
  std::optional<int64_t> gpus_per_node;
  // Counts this node's GPUs where neither gpus_per_node nor
  // CUDA_VISIBLE_DEVICES says; its error makes Create fail, naming it.
  // Unset: NvidiaSmiGpuCount() (nvidia_smi.h), as TF asks nvidia-smi; it
  // runs in a child process, so CUDA is not started here.
  std::function<absl::StatusOr<int64_t>()> count_node_gpus;
  // GPUs given to each task. Unset: gpus_per_node / (most tasks on a node),
  // an error when that is 0 although the nodes have GPUs.
  std::optional<int64_t> gpus_per_task;
  // The same number of tasks on every node of SLURM_STEP_NODELIST.
  std::optional<int64_t> tasks_per_node;
  // Explicit (host, number of tasks) in rank order; replaces
  // SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE. Exclusive with
  // tasks_per_node.
  std::vector<std::pair<std::string, int64_t>> tasks_per_host;
  std::string rpc_layer = "grpc";
};

class SlurmClusterResolver : public ClusterResolver {
 public:
  static absl::StatusOr<std::unique_ptr<SlurmClusterResolver>> Create(
      SlurmClusterResolverOptions options = {},
      const EnvLookup& env = ProcessEnv());

  absl::StatusOr<ClusterSpec> cluster_spec() const override {
    return cluster_spec_;
  }
  std::optional<std::string> task_type() const override { return task_type_; }
  std::optional<int64_t> task_id() const override { return task_id_; }
  std::optional<std::string> rpc_layer() const override { return rpc_layer_; }
  // Always "" (Slurm is not a Google-internal environment).
  std::string environment() const override { return ""; }

  void set_task_type(std::optional<std::string> task_type) {
    task_type_ = std::move(task_type);
  }
  // INVALID_ARGUMENT for a negative id (and the id is left unchanged).
  absl::Status set_task_id(std::optional<int64_t> task_id);
  void set_rpc_layer(std::optional<std::string> rpc_layer) {
    rpc_layer_ = std::move(rpc_layer);
  }

  // This process's rank (SLURM_PROCID).
  int64_t rank() const { return rank_; }
  int64_t gpus_per_node() const { return gpus_per_node_; }
  int64_t gpus_per_task() const { return gpus_per_task_; }
  // (host, number of tasks) in rank order.
  const std::vector<std::pair<std::string, int64_t>>& task_configuration()
      const {
    return task_configuration_;
  }
  // The CUDA_VISIBLE_DEVICES value of rank `rank`: its GPUs, comma
  // separated, e.g. "2,3" ("" when it gets none); OUT_OF_RANGE for a rank
  // outside the step. The value depends only on the rank's index on its
  // node, so the resolver keeps one per index, not one per rank.
  absl::StatusOr<std::string> gpu_allocation(int64_t rank) const;
  // The CUDA_VISIBLE_DEVICES value for this process (gpu_allocation(rank())).
  const std::string& cuda_visible_devices() const {
    return LocalGpuAllocation(rank_);
  }
  // Sets CUDA_VISIBLE_DEVICES to cuda_visible_devices() through `set_env`
  // (by default in this process's environment, which CUDA reads once, at its
  // initialization: call this before any CUDA use).
  absl::Status ApplyCudaVisibleDevices(
      const std::function<absl::Status(absl::string_view, absl::string_view)>&
          set_env = SetProcessEnv) const;

 protected:
  // The address of the task (arguments, else this process's task) as
  // "<rpc_layer>://host:port"; NOT_FOUND when the cluster lacks it.
  absl::StatusOr<std::string> Master(
      const std::optional<std::string>& task_type,
      std::optional<int64_t> task_id,
      const std::optional<std::string>& rpc_layer) const override;
  // {"GPU": gpus_per_task()} for any task (every task gets the same share);
  // {} when tasks get no GPU.
  absl::StatusOr<AcceleratorCounts> NumAccelerators(
      const std::optional<std::string>& task_type,
      std::optional<int64_t> task_id) const override;

 private:
  SlurmClusterResolver() = default;
  // gpu_allocation of a rank of the step.
  const std::string& LocalGpuAllocation(int64_t rank) const;

  int64_t rank_ = 0;
  int64_t gpus_per_node_ = 0;
  int64_t gpus_per_task_ = 0;
  std::vector<std::pair<std::string, int64_t>> task_configuration_;
  // The first rank of each entry of task_configuration_.
  std::vector<int64_t> first_ranks_;
  // CUDA_VISIBLE_DEVICES by index on the node.
  std::vector<std::string> local_gpu_allocation_;
  ClusterSpec cluster_spec_;
  std::optional<std::string> task_type_;
  std::optional<int64_t> task_id_;
  std::optional<std::string> rpc_layer_;
};

}  // namespace cluster
}  // namespace distribute

#endif  // DISTRIBUTE_CLUSTER_SLURM_CLUSTER_RESOLVER_H_
