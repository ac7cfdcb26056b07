#include "distribute/cluster/simple_cluster_resolver.h"

#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"

namespace distribute {
namespace cluster {

absl::StatusOr<std::unique_ptr<SimpleClusterResolver>>
SimpleClusterResolver::Create(ClusterSpec cluster_spec,
                              SimpleClusterResolverOptions options) {
  if (options.task_id.has_value() && *options.task_id < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("SimpleClusterResolver: task_id is ", *options.task_id,
                     "; a task index is non-negative"));
  }
  for (const auto& [type, count] : options.num_accelerators) {
    if (type.empty()) {
      return absl::InvalidArgumentError(
          "SimpleClusterResolver: num_accelerators has an empty accelerator "
          "type; use e.g. \"GPU\" or \"TPU\"");
    }
    if (count < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("SimpleClusterResolver: num_accelerators[\"", type,
                       "\"] is ", count, "; counts are non-negative"));
    }
  }
  // Types with no devices are absent, as the ClusterResolver contract says.
  for (auto it = options.num_accelerators.begin();
       it != options.num_accelerators.end();) {
    it = it->second == 0 ? options.num_accelerators.erase(it) : std::next(it);
  }
  return std::unique_ptr<SimpleClusterResolver>(
      new SimpleClusterResolver(std::move(cluster_spec), std::move(options)));
}

absl::Status SimpleClusterResolver::set_task_id(
    std::optional<int64_t> task_id) {
  if (task_id.has_value() && *task_id < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("SimpleClusterResolver: task_id is ", *task_id,
                     "; a task index is non-negative"));
  }
  options_.task_id = task_id;
  return absl::OkStatus();
}

absl::StatusOr<std::string> SimpleClusterResolver::Master(
    const std::optional<std::string>& task_type, std::optional<int64_t> task_id,
    const std::optional<std::string>& rpc_layer) const {
  const std::string layer =
      rpc_layer.has_value() ? *rpc_layer : options_.rpc_layer.value_or("");
  if (task_type.has_value() != task_id.has_value()) {
    return absl::InvalidArgumentError(
        "SimpleClusterResolver::master: give task_type and task_id together "
        "(or neither, for the configured master)");
  }
  if (!task_type.has_value()) return FormatMasterUrl(options_.master, layer);
  ASSIGN_OR_RETURN(std::string address,
                   cluster_spec_.task_address(*task_type, *task_id));
  return FormatMasterUrl(address, layer);
}

absl::StatusOr<AcceleratorCounts> SimpleClusterResolver::NumAccelerators(
    const std::optional<std::string>& /*task_type*/,
    std::optional<int64_t> /*task_id*/) const {
  return options_.num_accelerators;
}

}  // namespace cluster
}  // namespace distribute
