#include "distribute/cluster/slurm_cluster_resolver.h"

#include <algorithm>
#include <iterator>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "devices/status_macros.h"
#include "distribute/cluster/nvidia_smi.h"
#include "distribute/cluster/slurm_hostlist.h"

namespace distribute {
namespace cluster {
namespace {

constexpr absl::string_view kPrefix = "SlurmClusterResolver: ";

absl::StatusOr<std::string> GetSlurmVar(const EnvLookup& env,
                                        absl::string_view name) {
  std::optional<std::string> value = env(name);
  if (!value.has_value()) {
    return absl::FailedPreconditionError(
        absl::StrCat(kPrefix, name,
                     " not found in environment. Not running inside a "
                     "Slurm step (srun)?"));
  }
  return *value;
}

// A non-negative decimal integer from variable `name`.
absl::StatusOr<int64_t> GetSlurmCount(const EnvLookup& env,
                                      absl::string_view name) {
  ASSIGN_OR_RETURN(std::string text, GetSlurmVar(env, name));
  const absl::string_view value = absl::StripAsciiWhitespace(text);
  int64_t number = -1;
  bool digits = !value.empty();
  for (char c : value) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) digits = false;
  }
  if (!digits || !absl::SimpleAtoi(value, &number)) {
    return absl::InvalidArgumentError(absl::StrCat(
        kPrefix, name, "=\"", text, "\" is not a non-negative integer"));
  }
  return number;
}

// The (host, tasks) layout of the step, from the options or the environment.
absl::StatusOr<std::vector<std::pair<std::string, int64_t>>>
ResolveTaskConfiguration(const SlurmClusterResolverOptions& options,
                         const EnvLookup& env) {
  std::vector<std::pair<std::string, int64_t>> config;
  if (!options.tasks_per_host.empty()) {
    if (options.tasks_per_node.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          kPrefix, "give tasks_per_node or tasks_per_host, not both"));
    }
    config = options.tasks_per_host;
  } else {
    ASSIGN_OR_RETURN(std::string nodelist,
                     GetSlurmVar(env, "SLURM_STEP_NODELIST"));
    absl::StatusOr<std::vector<std::string>> hosts = ExpandHostlist(nodelist);
    if (!hosts.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          kPrefix, "SLURM_STEP_NODELIST: ", hosts.status().message()));
    }
    if (env("SLURM_STEP_NUM_NODES").has_value()) {
      ASSIGN_OR_RETURN(int64_t num_nodes,
                       GetSlurmCount(env, "SLURM_STEP_NUM_NODES"));
      if (num_nodes != static_cast<int64_t>(hosts->size())) {
        return absl::InvalidArgumentError(
            absl::StrCat(kPrefix, "SLURM_STEP_NUM_NODES=", num_nodes,
                         " but SLURM_STEP_NODELIST=\"", nodelist, "\" names ",
                         hosts->size(), " hosts"));
      }
    }
    std::vector<int64_t> counts;
    if (options.tasks_per_node.has_value()) {
      counts.assign(hosts->size(), *options.tasks_per_node);
    } else {
      ASSIGN_OR_RETURN(std::string text,
                       GetSlurmVar(env, "SLURM_STEP_TASKS_PER_NODE"));
      absl::StatusOr<std::vector<int64_t>> expanded = ExpandTasksPerNode(text);
      if (!expanded.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(
            kPrefix,
            "SLURM_STEP_TASKS_PER_NODE: ", expanded.status().message()));
      }
      if (expanded->size() != hosts->size()) {
        return absl::InvalidArgumentError(absl::StrCat(
            kPrefix, "SLURM_STEP_TASKS_PER_NODE=\"", text, "\" gives ",
            expanded->size(), " nodes but SLURM_STEP_NODELIST=\"", nodelist,
            "\" names ", hosts->size()));
      }
      counts = *std::move(expanded);
    }
    for (size_t i = 0; i < hosts->size(); ++i) {
      config.emplace_back(std::move((*hosts)[i]), counts[i]);
    }
  }
  // Views into `config`: a step of 2^20 hosts holds its names once.
  std::set<absl::string_view> seen;
  for (const auto& [host, count] : config) {
    if (host.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kPrefix, "a host name is empty"));
    }
    if (!seen.insert(host).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(kPrefix, "host '", host,
                       "' appears twice in the node list; "
                       "give each node once with its number of tasks"));
    }
    if (count <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(kPrefix, "host '", host, "' has ", count,
                       " tasks; tasks per node must be positive"));
    }
  }
  return config;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SlurmClusterResolver>>
SlurmClusterResolver::Create(SlurmClusterResolverOptions options,
                             const EnvLookup& env) {
  std::unique_ptr<SlurmClusterResolver> resolver(new SlurmClusterResolver());
  resolver->rpc_layer_ = options.rpc_layer;

  ASSIGN_OR_RETURN(int64_t rank, GetSlurmCount(env, "SLURM_PROCID"));
  resolver->rank_ = rank;

  std::map<std::string, int64_t> jobs = options.jobs;
  if (jobs.empty()) {
    ASSIGN_OR_RETURN(int64_t num_tasks,
                     GetSlurmCount(env, "SLURM_STEP_NUM_TASKS"));
    jobs["worker"] = num_tasks;
  }
  // Bounds that keep the sums and products below from overflowing, and the
  // task list (an address each) from taking more memory than a real step
  // could need: 2^20 tasks is ten times the largest machines' GPUs; a
  // node's tasks take one port each.
  constexpr int64_t kMaxTasks = kMaxExpandedHosts;
  constexpr int64_t kMaxTasksPerNode = 65535;
  constexpr int64_t kMaxGpusPerNode = 4096;
  for (const auto& [name, count] : jobs) {
    if (count < 0 || count > kMaxTasks) {
      return absl::InvalidArgumentError(
          absl::StrCat(kPrefix, "jobs[\"", name, "\"] is ", count,
                       "; a job has from 0 to ", kMaxTasks, " tasks"));
    }
  }

  absl::StatusOr<std::vector<std::pair<std::string, int64_t>>> config =
      ResolveTaskConfiguration(options, env);
  RETURN_IF_ERROR(config.status());
  resolver->task_configuration_ = *std::move(config);
  int64_t max_tasks_per_node = 0;
  int64_t num_tasks = 0;
  for (const auto& host : resolver->task_configuration_) {
    if (host.second > kMaxTasksPerNode) {
      return absl::InvalidArgumentError(
          absl::StrCat(kPrefix, "node ", host.first, " is given ", host.second,
                       " tasks; a node runs at most ", kMaxTasksPerNode,
                       " (one port each)"));
    }
    max_tasks_per_node = std::max(max_tasks_per_node, host.second);
    num_tasks += host.second;
    if (num_tasks > kMaxTasks) {
      return absl::InvalidArgumentError(
          absl::StrCat(kPrefix, "the step's nodes are given more than ",
                       kMaxTasks, " tasks (", host.second, " on node ",
                       host.first, " alone); a step has at most ", kMaxTasks));
    }
  }

  int64_t requested = 0;
  for (const auto& job : jobs) requested += job.second;
  if (requested != num_tasks) {
    // Name where each count came from, so the fix is clear.
    const char* requested_from = options.jobs.empty()
                                     ? "from SLURM_STEP_NUM_TASKS"
                                     : "from the jobs option";
    const char* assigned_from =
        !options.tasks_per_host.empty() ? "the tasks_per_host option"
        : options.tasks_per_node.has_value()
            ? "the tasks_per_node option over SLURM_STEP_NODELIST"
            : "SLURM_STEP_TASKS_PER_NODE over SLURM_STEP_NODELIST";
    return absl::InvalidArgumentError(absl::StrCat(
        kPrefix, "Requested ", requested, " tasks (",
        absl::StrJoin(jobs, ", ", absl::PairFormatter(": ")), ", ",
        requested_from, ") but ", requested > num_tasks ? "only " : "",
        num_tasks, " were assigned by Slurm (", assigned_from,
        "); the jobs must add up to the step's tasks"));
  }
  if (resolver->rank_ >= num_tasks) {
    return absl::InvalidArgumentError(
        absl::StrCat(kPrefix, "SLURM_PROCID=", resolver->rank_,
                     " but the step has only ", num_tasks, " tasks"));
  }

  if (options.port_base < 1 || options.port_base > 65536 - max_tasks_per_node) {
    return absl::InvalidArgumentError(absl::StrCat(
        kPrefix, "port_base ", options.port_base, " with up to ",
        max_tasks_per_node, " tasks per node leaves ports outside [1, 65535]"));
  }

  // GPUs: how many per node, and their CUDA ids (CUDA_VISIBLE_DEVICES's own
  // entries when it lists enough of them, else 0..gpus_per_node-1).
  std::vector<std::string> visible;
  if (std::optional<std::string> cuda = env("CUDA_VISIBLE_DEVICES");
      cuda.has_value()) {
    const int64_t count = CountCudaVisibleDevices(*cuda);
    std::vector<std::string> entries = absl::StrSplit(*cuda, ',');
    for (int64_t i = 0; i < count; ++i) {
      visible.emplace_back(
          absl::StripAsciiWhitespace(entries[static_cast<size_t>(i)]));
    }
    if (!options.gpus_per_node.has_value()) {
      options.gpus_per_node = count;
    }
  }
  if (!options.gpus_per_node.has_value()) {
    absl::StatusOr<int64_t> counted = options.count_node_gpus
                                          ? options.count_node_gpus()
                                          : NvidiaSmiGpuCount();
    if (!counted.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          kPrefix,
          "gpus_per_node is not given, CUDA_VISIBLE_DEVICES is not set and "
          "the node's GPUs could not be counted (",
          counted.status().message(),
          "); pass gpus_per_node (0 for CPU-only nodes)"));
    }
    options.gpus_per_node = *counted;
  }
  const int64_t gpus_per_node = *options.gpus_per_node;
  if (gpus_per_node < 0 || gpus_per_node > kMaxGpusPerNode) {
    return absl::InvalidArgumentError(
        absl::StrCat(kPrefix, "gpus_per_node is ", gpus_per_node,
                     "; it is from 0 to ", kMaxGpusPerNode));
  }
  const int64_t gpus_per_task =
      options.gpus_per_task.value_or(gpus_per_node / max_tasks_per_node);
  if (!options.gpus_per_task.has_value() && gpus_per_task == 0 &&
      gpus_per_node > 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        kPrefix, gpus_per_node, " GPUs per node cannot be shared by up to ",
        max_tasks_per_node,
        " tasks per node; pass gpus_per_task (0 to run "
        "the tasks without GPUs)"));
  }
  if (gpus_per_task < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        kPrefix, "gpus_per_task is ", gpus_per_task, "; it is non-negative"));
  }
  if (gpus_per_task > 0 && max_tasks_per_node > gpus_per_node / gpus_per_task) {
    return absl::InvalidArgumentError(
        absl::StrCat(kPrefix, "Requested more GPUs per node than available: ",
                     max_tasks_per_node, " tasks x ", gpus_per_task,
                     " GPUs per task > ", gpus_per_node, " GPUs per node"));
  }
  resolver->gpus_per_node_ = gpus_per_node;
  resolver->gpus_per_task_ = gpus_per_task;
  const bool map_ids = static_cast<int64_t>(visible.size()) >= gpus_per_node;

  // A node's task k gets GPUs k * gpus_per_task onwards, whatever the
  // node: one string per index (at most gpus_per_node ids in all), not one
  // per rank, so a step of many nodes and GPUs costs no more.
  for (int64_t k = 0; k < max_tasks_per_node; ++k) {
    std::vector<std::string> ids;
    for (int64_t g = k * gpus_per_task; g < (k + 1) * gpus_per_task; ++g) {
      ids.push_back(map_ids ? visible[static_cast<size_t>(g)]
                            : absl::StrCat(g));
    }
    resolver->local_gpu_allocation_.push_back(absl::StrJoin(ids, ","));
  }

  std::vector<std::string> addresses;
  // Where the block layout puts this process, to check against where srun
  // says it runs.
  std::string my_host;
  int64_t my_local_id = -1;
  for (const auto& [host, count] : resolver->task_configuration_) {
    resolver->first_ranks_.push_back(static_cast<int64_t>(addresses.size()));
    for (int64_t k = 0; k < count; ++k) {
      if (static_cast<int64_t>(addresses.size()) == resolver->rank_) {
        my_host = host;
        my_local_id = k;
      }
      addresses.push_back(absl::StrCat(host, ":", options.port_base + k));
    }
  }

  // srun gives each task its node (SLURMD_NODENAME) and its index on the
  // node (SLURM_LOCALID): a cyclic, plane or arbitrary distribution
  // (srun -m, SLURM_DISTRIBUTION) puts ranks elsewhere than the block layout
  // above, and every task would then serve and dial the wrong addresses.
  if (options.tasks_per_host.empty()) {
    const std::optional<std::string> node = env("SLURMD_NODENAME");
    const std::optional<std::string> local = env("SLURM_LOCALID");
    int64_t local_id = -1;
    if (node.has_value() && local.has_value() &&
        absl::SimpleAtoi(*local, &local_id) &&
        (*node != my_host || local_id != my_local_id)) {
      const std::optional<std::string> distribution = env("SLURM_DISTRIBUTION");
      return absl::InvalidArgumentError(absl::StrCat(
          kPrefix, "SLURM_PROCID=", resolver->rank_, " runs on ", *node,
          " as its task ", local_id,
          " (SLURMD_NODENAME, SLURM_LOCALID), but the block layout of "
          "SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE puts it on ",
          my_host, " as task ", my_local_id,
          "; run the step with srun's default block distribution "
          "(SLURM_DISTRIBUTION is ",
          distribution.has_value() ? absl::StrCat("\"", *distribution, "\"")
                                   : "unset",
          "; use -m block) or give tasks_per_host"));
    }
  }

  std::map<std::string, std::vector<std::string>> cluster;
  int64_t offset = 0;
  for (const auto& [name, count] : jobs) {
    // Moved: the addresses are not used again.
    cluster[name].assign(
        std::make_move_iterator(addresses.begin() + offset),
        std::make_move_iterator(addresses.begin() + offset + count));
    if (resolver->rank_ >= offset && resolver->rank_ < offset + count) {
      resolver->task_type_ = name;
      resolver->task_id_ = resolver->rank_ - offset;
    }
    offset += count;
  }
  absl::StatusOr<ClusterSpec> spec = ClusterSpec::Create(std::move(cluster));
  if (!spec.ok()) {
    return absl::Status(spec.status().code(),
                        absl::StrCat(kPrefix, spec.status().message()));
  }
  resolver->cluster_spec_ = *std::move(spec);
  return resolver;
}

absl::StatusOr<std::string> SlurmClusterResolver::gpu_allocation(
    int64_t rank) const {
  const int64_t tasks = cluster_spec_.total_tasks();
  if (rank < 0 || rank >= tasks) {
    return absl::OutOfRangeError(absl::StrCat(
        kPrefix, "rank ", rank, " is outside the step's ", tasks, " tasks"));
  }
  return LocalGpuAllocation(rank);
}

const std::string& SlurmClusterResolver::LocalGpuAllocation(
    int64_t rank) const {
  // The last node whose first rank is at most `rank`.
  const auto node =
      std::upper_bound(first_ranks_.begin(), first_ranks_.end(), rank) - 1;
  return local_gpu_allocation_[static_cast<size_t>(rank - *node)];
}

absl::Status SlurmClusterResolver::set_task_id(std::optional<int64_t> task_id) {
  if (task_id.has_value() && *task_id < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        kPrefix, "task_id is ", *task_id, "; a task index is non-negative"));
  }
  task_id_ = task_id;
  return absl::OkStatus();
}

absl::Status SlurmClusterResolver::ApplyCudaVisibleDevices(
    const std::function<absl::Status(absl::string_view, absl::string_view)>&
        set_env) const {
  return set_env("CUDA_VISIBLE_DEVICES", cuda_visible_devices());
}

absl::StatusOr<std::string> SlurmClusterResolver::Master(
    const std::optional<std::string>& task_type, std::optional<int64_t> task_id,
    const std::optional<std::string>& rpc_layer) const {
  const std::optional<std::string> type =
      task_type.has_value() ? task_type : task_type_;
  const std::optional<int64_t> id = task_id.has_value() ? task_id : task_id_;
  if (!type.has_value() || !id.has_value()) return std::string();
  ASSIGN_OR_RETURN(std::string address, cluster_spec_.task_address(*type, *id));
  const std::optional<std::string> layer =
      rpc_layer.has_value() ? rpc_layer : rpc_layer_;
  return FormatMasterUrl(address, layer.value_or(""));
}

absl::StatusOr<AcceleratorCounts> SlurmClusterResolver::NumAccelerators(
    const std::optional<std::string>& /*task_type*/,
    std::optional<int64_t> /*task_id*/) const {
  AcceleratorCounts counts;
  if (gpus_per_task_ > 0) counts["GPU"] = gpus_per_task_;
  return counts;
}

}  // namespace cluster
}  // namespace distribute
