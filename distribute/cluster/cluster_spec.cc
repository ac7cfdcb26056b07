#include "distribute/cluster/cluster_spec.h"

#include <limits>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "devices/fnv1a.h"
#include "devices/status_macros.h"

namespace distribute {
namespace cluster {
namespace {

constexpr int64_t kMaxTaskIndex = std::numeric_limits<int32_t>::max();
// The longest list job_tasks() makes (a million tasks).
constexpr int64_t kMaxJobTasksSlots = int64_t{1} << 20;

std::string JobList(const std::map<std::string, ClusterSpec::JobTasks>& jobs) {
  if (jobs.empty()) return "the cluster has no jobs";
  std::vector<std::string> names;
  for (const auto& job : jobs) names.push_back(job.first);
  return absl::StrCat("jobs: ", absl::StrJoin(names, ", "));
}

std::string PrintableChar(char c) {
  const unsigned char u = static_cast<unsigned char>(c);
  if (u < 0x20 || u >= 0x7f) return absl::StrCat("byte ", static_cast<int>(u));
  return absl::StrCat("'", std::string(1, c), "'");
}

bool IsHostChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' ||
         c == '-' || c == '_';
}

bool IsIpv6Char(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == ':' ||
         c == '.' || c == '%';
}

// Where a task is, for messages: "task 1 of job 'worker'".
std::string TaskName(absl::string_view job, int64_t index) {
  return absl::StrCat("task ", index, " of job '", job, "'");
}

}  // namespace

absl::Status ValidateJobName(absl::string_view name) {
  if (name.empty()) {
    return absl::InvalidArgumentError(
        "job name is empty; name each job, e.g. \"worker\" or \"ps\"");
  }
  if (!absl::ascii_isalpha(static_cast<unsigned char>(name.front()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("job name '", name,
                     "' must start with a letter (job names match "
                     "[A-Za-z][A-Za-z0-9_]*, as in \"/job:worker\")"));
  }
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') {
      return absl::InvalidArgumentError(
          absl::StrCat("job name '", name, "' contains ", PrintableChar(c),
                       "; job names match [A-Za-z][A-Za-z0-9_]*"));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateTaskAddress(absl::string_view address) {
  if (address.empty()) {
    return absl::InvalidArgumentError(
        "address is empty; give it as host:port, e.g. \"worker0:2222\"");
  }
  absl::string_view host;
  absl::string_view port;
  if (address.front() == '[') {
    const size_t close = address.find(']');
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("address '", address,
                       "' opens an IPv6 host with '[' but has no "
                       "']'; write it as [v6-address]:port"));
    }
    host = address.substr(1, close - 1);
    if (host.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("address '", address, "' has an empty IPv6 host"));
    }
    for (char c : host) {
      if (!IsIpv6Char(c)) {
        return absl::InvalidArgumentError(
            absl::StrCat("address '", address, "' has IPv6 host '", host,
                         "' containing ", PrintableChar(c)));
      }
    }
    const absl::string_view rest = address.substr(close + 1);
    if (rest.empty() || rest.front() != ':') {
      return absl::InvalidArgumentError(
          absl::StrCat("address '", address,
                       "' has no port; write it as [v6-address]:port"));
    }
    port = rest.substr(1);
  } else {
    const size_t colon = address.rfind(':');
    if (colon == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("address '", address,
                       "' has no port; write it as "
                       "host:port, e.g. '",
                       address, ":2222'"));
    }
    host = address.substr(0, colon);
    port = address.substr(colon + 1);
    if (host.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "address '", address, "' has an empty host; write it as host:port"));
    }
    for (char c : host) {
      if (!IsHostChar(c)) {
        return absl::InvalidArgumentError(
            absl::StrCat("address '", address, "' has host '", host,
                         "' containing ", PrintableChar(c),
                         "; a host is a name or IPv4 address "
                         "([A-Za-z0-9._-]) or a bracketed IPv6 address"));
      }
    }
  }
  bool port_ok = !port.empty() && port.size() <= 5;
  for (char c : port) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) port_ok = false;
  }
  int64_t port_number = 0;
  if (port_ok &&
      (!absl::SimpleAtoi(port, &port_number) || port_number > 65535)) {
    port_ok = false;
  }
  if (!port_ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", address, "' has port '", port,
                     "', which is not a number in [0, 65535]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<ClusterSpec> ClusterSpec::Create(
    std::map<std::string, std::vector<std::string>> jobs) {
  std::map<std::string, JobTasks> sparse;
  for (auto& [name, addresses] : jobs) {
    JobTasks& tasks = sparse[name];
    for (size_t i = 0; i < addresses.size(); ++i) {
      tasks.emplace_hint(tasks.end(), static_cast<int64_t>(i),
                         std::move(addresses[i]));
    }
    // Each job's emptied strings go as soon as they are moved, so the
    // addresses are held about once.
    std::vector<std::string>().swap(addresses);
  }
  return CreateSparse(std::move(sparse));
}

absl::StatusOr<ClusterSpec> ClusterSpec::CreateSparse(
    std::map<std::string, JobTasks> jobs) {
  // address -> the task that uses it, for the duplicate check: views into
  // `jobs`, read only before `jobs` is moved into the result.
  std::map<absl::string_view, std::pair<absl::string_view, int64_t>> owners;
  for (const auto& [name, tasks] : jobs) {
    absl::Status status = ValidateJobName(name);
    RETURN_IF_ERROR(status);
    for (const auto& [index, address] : tasks) {
      if (index < 0 || index > kMaxTaskIndex) {
        return absl::InvalidArgumentError(absl::StrCat(
            "job '", name, "' has task index ", index,
            ", outside [0, 2147483647]; task indices are non-negative"));
      }
      status = ValidateTaskAddress(address);
      if (!status.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat(TaskName(name, index), ": ", status.message()));
      }
      auto [it, inserted] = owners.emplace(
          address, std::make_pair(absl::string_view(name), index));
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat(
            "address '", address, "' is used by both ",
            TaskName(it->second.first, it->second.second), " and ",
            TaskName(name, index), "; every task needs its own host:port"));
      }
    }
  }
  return ClusterSpec(std::move(jobs));
}

absl::StatusOr<ClusterSpec> ClusterSpec::FromClusterDef(const ClusterDef& def) {
  std::map<std::string, JobTasks> jobs;
  for (const JobDef& job : def.job()) {
    auto [it, inserted] = jobs.emplace(job.name(), JobTasks());
    if (!inserted) {
      return absl::InvalidArgumentError(absl::StrCat("ClusterDef names job '",
                                                     job.name(),
                                                     "' twice; merge its tasks "
                                                     "into one JobDef"));
    }
    for (const auto& [index, address] : job.tasks()) {
      it->second.emplace(index, address);
    }
  }
  return CreateSparse(std::move(jobs));
}

absl::StatusOr<ClusterSpec> ClusterSpec::FromJson(absl::string_view json) {
  absl::StatusOr<Json> value = ParseJson(json);
  if (!value.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cluster spec is not valid JSON: ", value.status().message()));
  }
  return FromJsonValue(*value, "cluster spec");
}

absl::StatusOr<ClusterSpec> ClusterSpec::FromJsonValue(const Json& value,
                                                       absl::string_view path) {
  if (!value.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " must be an object mapping job names to task lists, got ",
        JsonTypeName(value)));
  }
  std::map<std::string, JobTasks> jobs;
  for (auto member = value.begin(); member != value.end(); ++member) {
    const std::string& name = member.key();
    const Json& tasks = member.value();
    const std::string job_path = absl::StrCat(path, ".", name);
    absl::Status status = ValidateJobName(name);
    if (!status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(job_path, ": ", status.message()));
    }
    auto [job_it, inserted] = jobs.emplace(name, JobTasks());
    if (!inserted) {
      return absl::InvalidArgumentError(
          absl::StrCat(job_path, ": job is given twice"));
    }
    JobTasks& job = job_it->second;
    if (tasks.is_array()) {
      const Json& list = tasks;
      for (size_t i = 0; i < list.size(); ++i) {
        const std::string task_path = absl::StrCat(job_path, "[", i, "]");
        if (!list[i].is_string()) {
          return absl::InvalidArgumentError(
              absl::StrCat(task_path, " must be a \"host:port\" string, got ",
                           JsonTypeName(list[i])));
        }
        status = ValidateTaskAddress(list[i].get_ref<const std::string&>());
        if (!status.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(task_path, ": ", status.message()));
        }
        job.emplace(static_cast<int64_t>(i),
                    list[i].get_ref<const std::string&>());
      }
    } else if (tasks.is_object()) {
      for (auto task = tasks.begin(); task != tasks.end(); ++task) {
        const std::string& key = task.key();
        const Json& address = task.value();
        const std::string task_path = absl::StrCat(job_path, ".", key);
        int64_t index = -1;
        bool digits = !key.empty();
        for (char c : key) {
          if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) {
            digits = false;
          }
        }
        if (!digits || !absl::SimpleAtoi(key, &index) ||
            index > kMaxTaskIndex) {
          return absl::InvalidArgumentError(absl::StrCat(
              job_path, ": task index \"", key,
              "\" is not an integer in "
              "[0, 2147483647]; key sparse tasks by their decimal index"));
        }
        if (!address.is_string()) {
          return absl::InvalidArgumentError(
              absl::StrCat(task_path, " must be a \"host:port\" string, got ",
                           JsonTypeName(address)));
        }
        status = ValidateTaskAddress(address.get_ref<const std::string&>());
        if (!status.ok()) {
          return absl::InvalidArgumentError(
              absl::StrCat(task_path, ": ", status.message()));
        }
        if (!job.emplace(index, address.get_ref<const std::string&>()).second) {
          return absl::InvalidArgumentError(absl::StrCat(
              job_path, ": task index ", index, " is given twice"));
        }
      }
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(job_path,
                       " must be a list of \"host:port\" strings or an object "
                       "mapping task indices to them, got ",
                       JsonTypeName(tasks)));
    }
  }
  absl::StatusOr<ClusterSpec> spec = CreateSparse(std::move(jobs));
  if (!spec.ok()) {
    return absl::Status(spec.status().code(),
                        absl::StrCat(path, ": ", spec.status().message()));
  }
  return spec;
}

ClusterDef ClusterSpec::AsClusterDef() const {
  ClusterDef def;
  for (const auto& [name, tasks] : jobs_) {
    JobDef* job = def.add_job();
    job->set_name(name);
    for (const auto& [index, address] : tasks) {
      (*job->mutable_tasks())[static_cast<int32_t>(index)] = address;
    }
  }
  return def;
}

std::vector<std::string> ClusterSpec::jobs() const {
  std::vector<std::string> names;
  names.reserve(jobs_.size());
  for (const auto& job : jobs_) names.push_back(job.first);
  return names;
}

bool ClusterSpec::has_job(absl::string_view job) const {
  return jobs_.find(std::string(job)) != jobs_.end();
}

absl::StatusOr<int64_t> ClusterSpec::num_tasks(absl::string_view job) const {
  auto it = jobs_.find(std::string(job));
  if (it == jobs_.end()) {
    return absl::NotFoundError(absl::StrCat("No such job in cluster: '", job,
                                            "' (", JobList(jobs_), ")"));
  }
  return static_cast<int64_t>(it->second.size());
}

absl::StatusOr<std::vector<int64_t>> ClusterSpec::task_indices(
    absl::string_view job) const {
  auto it = jobs_.find(std::string(job));
  if (it == jobs_.end()) {
    return absl::NotFoundError(absl::StrCat("No such job in cluster: '", job,
                                            "' (", JobList(jobs_), ")"));
  }
  std::vector<int64_t> indices;
  indices.reserve(it->second.size());
  for (const auto& task : it->second) indices.push_back(task.first);
  return indices;
}

absl::StatusOr<std::string> ClusterSpec::task_address(absl::string_view job,
                                                      int64_t index) const {
  auto it = jobs_.find(std::string(job));
  if (it == jobs_.end()) {
    return absl::NotFoundError(absl::StrCat("No such job in cluster: '", job,
                                            "' (", JobList(jobs_), ")"));
  }
  auto task = it->second.find(index);
  if (task == it->second.end()) {
    std::vector<int64_t> indices;
    for (const auto& t : it->second) indices.push_back(t.first);
    return absl::NotFoundError(
        absl::StrCat("No task with index ", index, " in job '", job,
                     "' (its indices: [", absl::StrJoin(indices, ", "), "])"));
  }
  return task->second;
}

absl::StatusOr<std::vector<std::optional<std::string>>> ClusterSpec::job_tasks(
    absl::string_view job) const {
  auto it = jobs_.find(std::string(job));
  if (it == jobs_.end()) {
    return absl::NotFoundError(absl::StrCat("No such job in cluster: '", job,
                                            "' (", JobList(jobs_), ")"));
  }
  std::vector<std::optional<std::string>> tasks;
  if (it->second.empty()) return tasks;
  const int64_t slots = it->second.rbegin()->first + 1;
  if (slots > kMaxJobTasksSlots) {
    return absl::OutOfRangeError(
        absl::StrCat("job '", job, "' has ", it->second.size(),
                     " tasks but indices up to ", slots - 1, "; a list of ",
                     slots, " addresses (over ", kMaxJobTasksSlots,
                     ") is not made: read a sparse job with task_indices() and "
                     "task_address()"));
  }
  tasks.resize(static_cast<size_t>(it->second.rbegin()->first) + 1);
  for (const auto& [index, address] : it->second) {
    tasks[static_cast<size_t>(index)] = address;
  }
  return tasks;
}

bool ClusterSpec::is_dense(absl::string_view job) const {
  auto it = jobs_.find(std::string(job));
  if (it == jobs_.end()) return false;
  // Indices are sorted and unique, so they are 0..n-1 iff the last is n-1.
  return it->second.empty() || it->second.rbegin()->first ==
                                   static_cast<int64_t>(it->second.size()) - 1;
}

int64_t ClusterSpec::total_tasks() const {
  int64_t total = 0;
  for (const auto& job : jobs_)
    total += static_cast<int64_t>(job.second.size());
  return total;
}

std::string ClusterSpec::Fingerprint() const {
  // Jobs without tasks change nothing about who may call: leave them out.
  std::map<std::string, JobTasks> nonempty;
  for (const auto& [job, tasks] : jobs_) {
    if (!tasks.empty()) nonempty.emplace(job, tasks);
  }
  return devices::Fnv1a64Hex(
      devices::Fnv1a64(ClusterSpec(std::move(nonempty)).ToJson()));
}

std::string ClusterSpec::ToJson() const {
  Json out = Json::object();
  for (const auto& [name, tasks] : jobs_) {
    Json& job = out[name];
    job = is_dense(name) ? Json::array() : Json::object();
    for (const auto& [index, address] : tasks) {
      if (job.is_array()) {
        job.push_back(address);
      } else {
        job[absl::StrCat(index)] = address;
      }
    }
  }
  return DumpJson(out);
}

std::string ClusterSpec::DebugString() const {
  std::string out = "ClusterSpec{";
  bool first_job = true;
  for (const auto& [name, tasks] : jobs_) {
    if (!first_job) out += ", ";
    first_job = false;
    absl::StrAppend(&out, name, ": ");
    const bool dense = is_dense(name);
    out += dense ? "[" : "{";
    bool first_task = true;
    for (const auto& [index, address] : tasks) {
      if (!first_task) out += ", ";
      first_task = false;
      if (!dense) absl::StrAppend(&out, index, ": ");
      out += address;
    }
    out += dense ? "]" : "}";
  }
  out += "}";
  return out;
}

}  // namespace cluster
}  // namespace distribute
