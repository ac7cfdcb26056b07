// The Slurm variables a job step sees (SLURM_PROCID, SLURM_STEP_NODELIST,
// SLURM_STEP_TASKS_PER_NODE, SLURM_STEP_NUM_TASKS, CUDA_VISIBLE_DEVICES,
// ...). Input: NAME=VALUE lines. The node's GPUs are counted as 8 (never
// nvidia-smi).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "distribute/cluster/slurm_cluster_resolver.h"
#include "tools/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace cluster = distribute::cluster;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  std::map<std::string, std::string, std::less<>> vars;
  for (absl::string_view line : absl::StrSplit(input, '\n')) {
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) continue;
    vars[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
  }
  cluster::EnvLookup env =
      [&vars](absl::string_view name) -> std::optional<std::string> {
    auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
  cluster::SlurmClusterResolverOptions options;
  options.count_node_gpus = []() -> absl::StatusOr<int64_t> { return 8; };
  auto resolver = cluster::SlurmClusterResolver::Create(options, env);
  if (!resolver.ok()) return 0;
  auto spec = (*resolver)->cluster_spec();
  FUZZ_CHECK(spec.ok(), "an accepted step without a cluster spec");
  int64_t tasks = 0;
  for (const auto& [host, n] : (*resolver)->task_configuration()) {
    FUZZ_CHECK(!host.empty() && n >= 0, "host '%s' with %ld tasks",
               host.c_str(), n);
    tasks += n;
  }
  FUZZ_CHECK(tasks == spec->total_tasks(),
             "%ld tasks on the hosts, %ld in "
             "the spec",
             tasks, spec->total_tasks());
  // Every rank's allocation (first, last, this process's) exists and
  // names gpus_per_task GPUs; none past the step.
  for (int64_t rank : {int64_t{0}, tasks - 1, (*resolver)->rank()}) {
    auto allocation = (*resolver)->gpu_allocation(rank);
    FUZZ_CHECK(allocation.ok(), "no GPU allocation for rank %ld of %ld", rank,
               tasks);
    const int64_t per_task = (*resolver)->gpus_per_task();
    const int64_t commas = static_cast<int64_t>(
        std::count(allocation->begin(), allocation->end(), ','));
    FUZZ_CHECK(per_task > 0 ? commas == per_task - 1 : allocation->empty(),
               "rank %ld's allocation '%s' for %ld GPUs per task", rank,
               allocation->c_str(), per_task);
  }
  FUZZ_CHECK(!(*resolver)->gpu_allocation(tasks).ok(),
             "an allocation for rank %ld of %ld tasks", tasks, tasks);
  (void)(*resolver)->master();
  return 0;
}
