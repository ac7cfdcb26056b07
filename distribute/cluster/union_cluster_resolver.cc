#include "distribute/cluster/union_cluster_resolver.h"

#include <algorithm>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"

namespace distribute {
namespace cluster {

absl::StatusOr<std::unique_ptr<UnionClusterResolver>>
UnionClusterResolver::Create(
    std::vector<std::unique_ptr<ClusterResolver>> resolvers,
    UnionClusterResolverOptions options) {
  if (resolvers.empty()) {
    return absl::InvalidArgumentError(
        "UnionClusterResolver: at least one ClusterResolver is required");
  }
  for (size_t i = 0; i < resolvers.size(); ++i) {
    if (resolvers[i] == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("UnionClusterResolver: resolver #", i, " is null"));
    }
  }
  if (options.task_id.has_value() && *options.task_id < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("UnionClusterResolver: task_id is ", *options.task_id,
                     "; a task index is non-negative"));
  }
  return std::unique_ptr<UnionClusterResolver>(
      new UnionClusterResolver(std::move(resolvers), std::move(options)));
}

absl::StatusOr<ClusterSpec> UnionClusterResolver::cluster_spec() const {
  std::vector<ClusterSpec> specs;
  specs.reserve(resolvers_.size());
  for (const auto& resolver : resolvers_) {
    ASSIGN_OR_RETURN(ClusterSpec spec, resolver->cluster_spec());
    specs.push_back(std::move(spec));
  }
  // Jobs that some resolver gives in sparse form are merged by index.
  std::map<std::string, bool> all_dense;
  for (const ClusterSpec& spec : specs) {
    for (const auto& job : spec.job_map()) {
      auto it = all_dense.emplace(job.first, true).first;
      it->second = it->second && spec.is_dense(job.first);
    }
  }
  std::map<std::string, ClusterSpec::JobTasks> merged;
  // For each job and index, the resolver that gave it (for messages).
  std::map<std::string, std::map<int64_t, size_t>> origin;
  // The definitions of each job taken so far, to take identical repeats
  // once.
  std::map<std::string, std::vector<const ClusterSpec::JobTasks*>> taken;
  for (size_t r = 0; r < specs.size(); ++r) {
    for (const auto& [name, tasks] : specs[r].job_map()) {
      std::vector<const ClusterSpec::JobTasks*>& before = taken[name];
      const ClusterSpec::JobTasks& these = tasks;  // (C++17: no capture
                                                   // of a binding)
      if (std::any_of(
              before.begin(), before.end(),
              [&](const ClusterSpec::JobTasks* t) { return *t == these; })) {
        continue;
      }
      before.push_back(&tasks);
      ClusterSpec::JobTasks& out = merged[name];
      if (all_dense[name]) {
        int64_t next = static_cast<int64_t>(out.size());
        for (const auto& task : tasks) out.emplace(next++, task.second);
        continue;
      }
      for (const auto& [index, address] : tasks) {
        auto [it, inserted] = out.emplace(index, address);
        if (inserted) {
          origin[name][index] = r;
        } else if (it->second != address) {
          return absl::InvalidArgumentError(absl::StrCat(
              "UnionClusterResolver: job '", name, "' task ", index, " is '",
              it->second, "' in resolver #", origin[name][index], " but '",
              address, "' in resolver #", r,
              "; sparse jobs are merged by index and must not conflict"));
        }
      }
    }
  }
  absl::StatusOr<ClusterSpec> spec =
      ClusterSpec::CreateSparse(std::move(merged));
  if (!spec.ok()) {
    return absl::Status(
        spec.status().code(),
        absl::StrCat("UnionClusterResolver: the merged cluster is invalid: ",
                     spec.status().message()));
  }
  return spec;
}

std::optional<std::string> UnionClusterResolver::task_type() const {
  return options_.task_type.has_value() ? options_.task_type
                                        : resolvers_.front()->task_type();
}

std::optional<int64_t> UnionClusterResolver::task_id() const {
  return options_.task_id.has_value() ? options_.task_id
                                      : resolvers_.front()->task_id();
}

std::optional<std::string> UnionClusterResolver::rpc_layer() const {
  return options_.rpc_layer.has_value() ? options_.rpc_layer
                                        : resolvers_.front()->rpc_layer();
}

absl::Status UnionClusterResolver::set_task_id(std::optional<int64_t> task_id) {
  if (task_id.has_value() && *task_id < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("UnionClusterResolver: task_id is ", *task_id,
                     "; a task index is non-negative"));
  }
  options_.task_id = task_id;
  return absl::OkStatus();
}

absl::StatusOr<std::string> UnionClusterResolver::Master(
    const std::optional<std::string>& task_type, std::optional<int64_t> task_id,
    const std::optional<std::string>& rpc_layer) const {
  if (task_type.has_value() && task_id.has_value()) {
    ASSIGN_OR_RETURN(ClusterSpec spec, cluster_spec());
    ASSIGN_OR_RETURN(std::string address,
                     spec.task_address(*task_type, *task_id));
    const std::optional<std::string> layer =
        rpc_layer.has_value() ? rpc_layer : this->rpc_layer();
    return FormatMasterUrl(address, layer.value_or(""));
  }
  return resolvers_.front()->master(std::nullopt, std::nullopt, rpc_layer);
}

absl::StatusOr<AcceleratorCounts> UnionClusterResolver::NumAccelerators(
    const std::optional<std::string>& task_type,
    std::optional<int64_t> task_id) const {
  return resolvers_.front()->num_accelerators(task_type, task_id);
}

}  // namespace cluster
}  // namespace distribute
