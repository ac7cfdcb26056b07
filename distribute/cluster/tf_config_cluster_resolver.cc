#include "distribute/cluster/tf_config_cluster_resolver.h"

#include <iterator>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/status_macros.h"
#include "distribute/cluster/cuda_driver.h"
#include "distribute/cluster/json.h"

namespace distribute {
namespace cluster {
namespace {

constexpr absl::string_view kTfConfig = "TF_CONFIG";

// An optional string member: absent or null -> nullopt.
absl::Status ReadOptionalString(const Json& config, absl::string_view key,
                                std::optional<std::string>* out) {
  const Json* value = JsonMember(config, key);
  if (value == nullptr || value->is_null()) return absl::OkStatus();
  if (!value->is_string()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kTfConfig, ".", key, " must be a string, got ", JsonTypeName(*value)));
  }
  *out = value->get_ref<const std::string&>();
  return absl::OkStatus();
}

// TF_CONFIG.task.index: a non-negative integer, or a string holding one (as
// TensorFlow's int() accepts).
absl::StatusOr<int64_t> ReadTaskIndex(const Json& value) {
  const std::string path = absl::StrCat(kTfConfig, ".task.index");
  int64_t index = 0;
  if (value.is_number()) {
    std::optional<int64_t> integer = JsonInt(value);
    if (!integer.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, " is ", value.get<double>(),
                       ", which is not an integer; give the task's index "
                       "within its job, e.g. 0"));
    }
    index = *integer;
  } else if (value.is_string()) {
    absl::string_view text =
        absl::StripAsciiWhitespace(value.get_ref<const std::string&>());
    absl::string_view digits = text;
    if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) {
      digits.remove_prefix(1);
    }
    bool ok = !digits.empty();
    for (char c : digits) {
      if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) ok = false;
    }
    if (!ok || !absl::SimpleAtoi(text, &index)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, " is \"", value.get_ref<const std::string&>(),
                       "\", which is not an integer; give the task's index "
                       "within its job, e.g. 0"));
    }
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " must be an integer, got ", JsonTypeName(value)));
  }
  if (index < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, " is ", index, "; a task index is non-negative"));
  }
  return index;
}

// "tasks 0..2", "no tasks" or "tasks [1, 5, 9]".
std::string DescribeTasks(const ClusterSpec::JobTasks& tasks) {
  if (tasks.empty()) return "no tasks";
  const int64_t last = tasks.rbegin()->first;
  if (last == static_cast<int64_t>(tasks.size()) - 1) {
    return absl::StrCat("tasks 0..", last);
  }
  std::vector<int64_t> indices;
  for (const auto& task : tasks) {
    if (indices.size() == 16) break;
    indices.push_back(task.first);
  }
  return absl::StrCat("tasks [", absl::StrJoin(indices, ", "),
                      tasks.size() > indices.size() ? ", ...]" : "]");
}

absl::StatusOr<AcceleratorCounts> GpusOfTheCudaDriver() {
  absl::StatusOr<int64_t> gpus = CudaDriverGpuCount();
  if (!gpus.ok()) {
    return absl::Status(gpus.status().code(),
                        absl::StrCat("TFConfigClusterResolver: counting the "
                                     "local GPUs: ",
                                     gpus.status().message()));
  }
  AcceleratorCounts counts;
  if (*gpus > 0) counts["GPU"] = *gpus;
  return counts;
}

}  // namespace

bool TfConfigIsBlank(absl::string_view tf_config) {
  return absl::StripAsciiWhitespace(tf_config).empty();
}

absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>>
TFConfigClusterResolver::FromEnvironment(
    TFConfigClusterResolverOptions options) {
  return FromEnv(ProcessEnv(), std::move(options));
}

absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>>
TFConfigClusterResolver::FromEnv(const EnvLookup& env,
                                 TFConfigClusterResolverOptions options) {
  const std::optional<std::string> tf_config = env(kTfConfig);
  return Parse(tf_config.value_or(""), std::move(options));
}

absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>>
TFConfigClusterResolver::FromJson(absl::string_view tf_config,
                                  TFConfigClusterResolverOptions options) {
  return Parse(tf_config, std::move(options));
}

absl::StatusOr<std::unique_ptr<TFConfigClusterResolver>>
TFConfigClusterResolver::Parse(absl::string_view tf_config,
                               TFConfigClusterResolverOptions options) {
  if (options.task_id.has_value() && *options.task_id < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("TFConfigClusterResolver: the task_id override is ",
                     *options.task_id, "; a task index is non-negative"));
  }
  if (!options.local_accelerators) {
    options.local_accelerators = GpusOfTheCudaDriver;
  }
  std::unique_ptr<TFConfigClusterResolver> resolver(
      new TFConfigClusterResolver(std::move(options)));
  if (TfConfigIsBlank(tf_config)) return resolver;

  absl::StatusOr<Json> parsed = ParseJson(tf_config);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kTfConfig, " is not valid JSON: ", parsed.status().message()));
  }
  const Json& config = *parsed;
  if (!config.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(kTfConfig,
                     " must be a JSON object with \"cluster\" and \"task\", "
                     "got ",
                     JsonTypeName(config)));
  }

  if (const Json* cluster = JsonMember(config, "cluster"); cluster != nullptr) {
    ASSIGN_OR_RETURN(ClusterSpec spec,
                     ClusterSpec::FromJsonValue(
                         *cluster, absl::StrCat(kTfConfig, ".cluster")));
    resolver->cluster_spec_ = std::move(spec);
  }
  const ClusterSpec& spec = resolver->cluster_spec_;
  for (absl::string_view single : {"chief", "evaluator"}) {
    if (spec.has_job(single) && *spec.num_tasks(single) > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          kTfConfig, ".cluster.", single, " has ", *spec.num_tasks(single),
          " tasks; a cluster has at most one ", single));
    }
  }

  if (const Json* task = JsonMember(config, "task"); task != nullptr) {
    if (!task->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kTfConfig,
                       ".task must be an object like {\"type\": \"worker\", "
                       "\"index\": 0}, got ",
                       JsonTypeName(*task)));
    }
    const Json* type = JsonMember(*task, "type");
    const Json* index = JsonMember(*task, "index");
    if (type == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(kTfConfig,
                       ".task.type is missing; set it to this task's job, "
                       "e.g. \"worker\""));
    }
    if (!type->is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(
          kTfConfig, ".task.type must be a string, got ", JsonTypeName(*type)));
    }
    if (index == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat(kTfConfig,
                       ".task.index is missing; set it to this task's index "
                       "within job '",
                       type->get_ref<const std::string&>(), "'"));
    }
    ASSIGN_OR_RETURN(int64_t task_index, ReadTaskIndex(*index));
    const std::string& task_type = type->get_ref<const std::string&>();
    if (spec.has_job(task_type)) {
      const ClusterSpec::JobTasks& tasks = spec.job_map().at(task_type);
      if (tasks.find(task_index) == tasks.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            kTfConfig, ".task.index ", task_index, " is out of range: job '",
            task_type, "' has ", DescribeTasks(tasks)));
      }
    } else if (task_type != "evaluator") {
      std::vector<std::string> jobs = spec.jobs();
      return absl::InvalidArgumentError(absl::StrCat(
          kTfConfig, ".task.type '", task_type, "' is not a job of ", kTfConfig,
          ".cluster (",
          jobs.empty() ? std::string("which is empty")
                       : absl::StrCat("jobs: ", absl::StrJoin(jobs, ", ")),
          ")"));
    }
    resolver->config_task_type_ = task_type;
    resolver->config_task_id_ = task_index;
  }

  RETURN_IF_ERROR(
      ReadOptionalString(config, "rpc_layer", &resolver->config_rpc_layer_));
  RETURN_IF_ERROR(ReadOptionalString(config, "environment",
                                     &resolver->config_environment_));
  RETURN_IF_ERROR(
      ReadOptionalString(config, "session_master", &resolver->session_master_));
  return resolver;
}

std::optional<std::string> TFConfigClusterResolver::task_type() const {
  return options_.task_type.has_value() ? options_.task_type
                                        : config_task_type_;
}

std::optional<int64_t> TFConfigClusterResolver::task_id() const {
  return options_.task_id.has_value() ? options_.task_id : config_task_id_;
}

std::optional<std::string> TFConfigClusterResolver::rpc_layer() const {
  return options_.rpc_layer.has_value() ? options_.rpc_layer
                                        : config_rpc_layer_;
}

std::string TFConfigClusterResolver::environment() const {
  if (options_.environment.has_value()) return *options_.environment;
  return config_environment_.value_or("");
}

absl::Status TFConfigClusterResolver::set_task_id(
    std::optional<int64_t> task_id) {
  if (task_id.has_value() && *task_id < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("TFConfigClusterResolver: task_id is ", *task_id,
                     "; a task index is non-negative"));
  }
  options_.task_id = task_id;
  return absl::OkStatus();
}

absl::StatusOr<std::string> TFConfigClusterResolver::Master(
    const std::optional<std::string>& task_type, std::optional<int64_t> task_id,
    const std::optional<std::string>& rpc_layer) const {
  const bool task_named = task_type.has_value() || task_id.has_value();
  if (!task_named && session_master_.has_value()) return *session_master_;

  const std::vector<std::string> jobs = cluster_spec_.jobs();
  if (jobs.empty() ||
      (jobs.size() == 1 && *cluster_spec_.num_tasks(jobs[0]) == 1)) {
    return std::string();
  }
  const std::optional<std::string> type =
      task_type.has_value() ? task_type : this->task_type();
  const std::optional<int64_t> id =
      task_id.has_value() ? task_id : this->task_id();
  if (!type.has_value() || !id.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "TFConfigClusterResolver::master: no task ",
        type.has_value() ? "index" : "type",
        " is known; TF_CONFIG has no complete \"task\" section, so pass "
        "task_type and task_id"));
  }
  // This task's own job outside the cluster (an evaluator): it is its own,
  // in-process master.
  if (!task_type.has_value() && *type == "evaluator" &&
      !cluster_spec_.has_job(*type)) {
    return std::string();
  }
  ASSIGN_OR_RETURN(std::string address, cluster_spec_.task_address(*type, *id));
  const std::optional<std::string> layer =
      rpc_layer.has_value() ? rpc_layer : this->rpc_layer();
  return FormatMasterUrl(address, layer.value_or(""));
}

absl::StatusOr<AcceleratorCounts> TFConfigClusterResolver::NumAccelerators(
    const std::optional<std::string>& task_type,
    std::optional<int64_t> task_id) const {
  const std::optional<std::string> own_type = this->task_type();
  const std::optional<int64_t> own_id = this->task_id();
  const bool same_type = !task_type.has_value() || task_type == own_type;
  const bool same_id = !task_id.has_value() || task_id == own_id;
  if (!same_type || !same_id) {
    return absl::UnimplementedError(absl::StrCat(
        "TFConfigClusterResolver counts only the local task's accelerators (",
        own_type.value_or("<no task type>"), ":",
        own_id.has_value() ? absl::StrCat(*own_id) : std::string("<no index>"),
        "); it cannot query task ", task_type.value_or(own_type.value_or("?")),
        ":",
        task_id.has_value()
            ? absl::StrCat(*task_id)
            : (own_id.has_value() ? absl::StrCat(*own_id) : std::string("?"))));
  }
  ASSIGN_OR_RETURN(AcceleratorCounts counts, options_.local_accelerators());
  for (auto it = counts.begin(); it != counts.end();) {
    if (it->second < 0) {
      return absl::InternalError(absl::StrCat(
          "TFConfigClusterResolver: the local accelerator count for '",
          it->first, "' is ", it->second, "; counts are non-negative"));
    }
    it = it->second == 0 ? counts.erase(it) : std::next(it);
  }
  return counts;
}

}  // namespace cluster
}  // namespace distribute
