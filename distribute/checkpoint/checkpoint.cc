#include "distribute/checkpoint/checkpoint.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/reduce_kernels.h"
#include "devices/status_macros.h"
#include "distribute/cluster/cluster_resolver.h"

namespace distribute {
namespace checkpoint {
namespace {

using devices::Tensor;

absl::StatusOr<Tensor> HostCopy(const Tensor& t, absl::string_view name) {
  if (!t.host_accessible() && t.bytes() > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot checkpoint '", name, "': its value ", t.DebugString(),
        " has no host data (timing-only or device memory)"));
  }
  ASSIGN_OR_RETURN(Tensor copy, Tensor::Host(t.dtype(), t.shape()));
  if (t.bytes() > 0) std::memcpy(copy.raw_data(), t.raw_data(), t.bytes());
  return copy;
}

absl::Status Annotate(const absl::Status& s, absl::string_view context) {
  return absl::Status(s.code(), absl::StrCat(context, ": ", s.message()));
}

std::string Describe(const Tensor& t) {
  return absl::StrCat(devices::DTypeName(t.dtype()), t.shape().DebugString());
}

// The tensors Restore writes into for one tracked variable.
std::vector<Tensor> Components(const Variable& v) { return v.values(); }

}  // namespace

absl::StatusOr<WriterRole> WriterRole::ForStrategy(const Strategy& strategy) {
  WriterRole role;
  cluster::ClusterResolver* resolver = strategy.ClusterResolver();
  if (resolver == nullptr) return role;
  ASSIGN_OR_RETURN(cluster::ClusterSpec spec, resolver->cluster_spec());
  if (spec.empty()) return role;
  const std::optional<std::string> type = resolver->task_type();
  const std::optional<int64_t> id = resolver->task_id();
  if (!type.has_value() || !id.has_value()) {
    return absl::InvalidArgumentError(
        "the strategy's cluster resolver does not name this task (task type "
        "and index); set TF_CONFIG's \"task\" so the checkpoint writer is "
        "known");
  }
  role.task_id = *id;
  if (*type == "chief") {
    role.is_chief = true;
  } else if (*type == "worker") {
    role.is_chief = !spec.has_job("chief") && *id == 0;
  } else {
    role.is_chief = false;
  }
  return role;
}

std::string WriteDirectory(const std::string& dir, const WriterRole& role) {
  if (role.is_chief) return dir;
  return JoinPath(dir, absl::StrCat("workertemp_", role.task_id));
}

absl::StatusOr<Checkpoint> Checkpoint::ForStrategy(const Strategy& strategy,
                                                   SaveFaultHook fault_hook) {
  ASSIGN_OR_RETURN(WriterRole role, WriterRole::ForStrategy(strategy));
  CheckpointOptions options;
  options.role = role;
  options.fault_hook = std::move(fault_hook);
  return Checkpoint(std::move(options));
}

absl::Status Checkpoint::CheckNewName(const std::string& name) const {
  if (name.empty()) {
    return absl::InvalidArgumentError(
        "a tracked object needs a non-empty name");
  }
  if (name == kSaveCounterName) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name,
                     "' is reserved for the checkpoint's own "
                     "counter; pick another name"));
  }
  if (name == "__metadata__") {
    return absl::InvalidArgumentError(
        "'__metadata__' is reserved by the checkpoint file format "
        "(safetensors); pick another name");
  }
  if (tracked_.count(name) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", name, "' is already tracked; names must be unique"));
  }
  return absl::OkStatus();
}

absl::Status Checkpoint::TrackVariable(const std::string& name,
                                       std::shared_ptr<Variable> variable) {
  RETURN_IF_ERROR(CheckNewName(name));
  if (variable == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("TrackVariable('", name, "') got a null variable"));
  }
  if (variable->kind() == Variable::Kind::kRemote) {
    return absl::FailedPreconditionError(absl::StrCat(
        "TrackVariable('", name, "'): variable '", variable->name(),
        "' lives on parameter servers; checkpoint it from the coordinator "
        "with ps::SaveVariables and ps::RestoreVariables "
        "(distribute/ps/ps_checkpoint.h)"));
  }
  Tracked t;
  t.variable = std::move(variable);
  tracked_.emplace(name, std::move(t));
  return absl::OkStatus();
}

absl::Status Checkpoint::TrackTensor(const std::string& name,
                                     devices::Tensor tensor) {
  RETURN_IF_ERROR(CheckNewName(name));
  if (!tensor.host_accessible() && tensor.bytes() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("TrackTensor('", name, "'): ", tensor.DebugString(),
                     " has no host data; track a host tensor"));
  }
  Tracked t;
  t.tensor = std::move(tensor);
  t.is_tensor = true;
  tracked_.emplace(name, std::move(t));
  return absl::OkStatus();
}

absl::Status Checkpoint::TrackInt64(const std::string& name, int64_t* value) {
  RETURN_IF_ERROR(CheckNewName(name));
  if (value == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("TrackInt64('", name, "') got a null pointer"));
  }
  Tracked t;
  t.int64 = value;
  tracked_.emplace(name, std::move(t));
  return absl::OkStatus();
}

std::vector<std::string> Checkpoint::tracked_names() const {
  std::vector<std::string> names;
  for (const auto& [name, t] : tracked_) names.push_back(name);
  return names;
}

absl::StatusOr<std::vector<CheckpointEntry>> Checkpoint::Snapshot(
    int64_t counter) const {
  std::vector<CheckpointEntry> entries;
  auto scalar = [](int64_t v) {
    return Tensor::FromVector<int64_t>({v}, devices::Shape());
  };
  ASSIGN_OR_RETURN(Tensor c, scalar(counter));
  entries.push_back({std::string(kSaveCounterName), std::move(c)});
  // Sorted by name: every worker reads (and reduces) in the same order.
  for (const auto& [name, t] : tracked_) {
    absl::StatusOr<Tensor> value;
    if (t.int64 != nullptr) {
      value = scalar(*t.int64);
    } else if (t.is_tensor) {
      value = HostCopy(t.tensor, name);
    } else if (t.variable->kind() == Variable::Kind::kSyncOnRead) {
      absl::StatusOr<Tensor> read = t.variable->Read();
      if (!read.ok()) {
        return absl::FailedPreconditionError(
            absl::StrCat("cannot checkpoint sync-on-read variable '", name,
                         "': ", read.status().message()));
      }
      value = HostCopy(*read, name);
    } else {
      value = HostCopy(t.variable->values()[0], name);
    }
    RETURN_IF_ERROR(value.status());
    entries.push_back({name, *std::move(value)});
  }
  return entries;
}

absl::Status Checkpoint::WriteEntries(
    const std::string& path,
    const std::vector<CheckpointEntry>& entries) const {
  ASSIGN_OR_RETURN(std::string bytes, EncodeCheckpoint(entries));
  const std::string dir = Dirname(path);
  const std::string write_dir = WriteDirectory(dir, options_.role);
  RETURN_IF_ERROR(CreateDirectories(write_dir));
  RETURN_IF_ERROR(WriteFileAtomically(JoinPath(write_dir, Basename(path)),
                                      bytes, options_.fault_hook,
                                      "data_written"));
  if (!options_.role.is_chief) return DeleteRecursively(write_dir);
  return absl::OkStatus();
}

absl::StatusOr<std::string> Checkpoint::Save(const std::string& prefix) {
  const int64_t counter = save_counter_ + 1;
  const std::string path = absl::StrCat(prefix, "-", counter);
  ASSIGN_OR_RETURN(std::vector<CheckpointEntry> entries, Snapshot(counter));
  RETURN_IF_ERROR(WriteEntries(path, entries));
  save_counter_ = counter;
  return path;
}

absl::StatusOr<std::string> Checkpoint::Write(const std::string& path) {
  ASSIGN_OR_RETURN(std::vector<CheckpointEntry> entries,
                   Snapshot(save_counter_));
  RETURN_IF_ERROR(WriteEntries(path, entries));
  return path;
}

absl::Status Checkpoint::Restore(const std::string& path) {
  return RestoreFrom(path, /*with_counter=*/true);
}

absl::Status Checkpoint::Read(const std::string& path) {
  return RestoreFrom(path, /*with_counter=*/false);
}

absl::Status Checkpoint::RestoreFrom(const std::string& path,
                                     bool with_counter) {
  absl::StatusOr<std::string> bytes = ReadFileToString(path);
  if (!bytes.ok()) {
    return Annotate(bytes.status(), "cannot restore the checkpoint");
  }
  ASSIGN_OR_RETURN(std::vector<CheckpointEntry> entries,
                   DecodeCheckpoint(*bytes, path));
  std::map<std::string, const Tensor*> by_name;
  for (const CheckpointEntry& e : entries) by_name[e.name] = &e.value;

  // Check everything first.
  auto int64_scalar = [&](const std::string& name, const Tensor& v) {
    if (v.dtype() != devices::DType::kInt64 || v.num_elements() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", name, "' is an int64 scalar but checkpoint '", path,
                       "' holds ", Describe(v)));
    }
    return absl::OkStatus();
  };
  for (const auto& [name, t] : tracked_) {
    auto it = by_name.find(name);
    if (it == by_name.end()) {
      std::vector<std::string> have;
      for (const auto& [n, v] : by_name) have.push_back(n);
      return absl::NotFoundError(
          absl::StrCat("checkpoint '", path, "' has no entry '", name,
                       "' (it has: ", absl::StrJoin(have, ", "),
                       "); track the same names as when it was saved"));
    }
    const Tensor& v = *it->second;
    if (t.int64 != nullptr) {
      RETURN_IF_ERROR(int64_scalar(name, v));
      continue;
    }
    std::vector<Tensor> targets =
        t.is_tensor ? std::vector<Tensor>{t.tensor} : Components(*t.variable);
    for (const Tensor& target : targets) {
      if (!target.SameShapeAndType(v)) {
        return absl::InvalidArgumentError(
            absl::StrCat(t.is_tensor ? "tensor '" : "variable '", name, "' is ",
                         Describe(target), " but checkpoint '", path,
                         "' holds ", Describe(v),
                         "; restore into an object of the saved dtype and "
                         "shape"));
      }
      if (!target.host_accessible() && target.bytes() > 0) {
        return absl::FailedPreconditionError(
            absl::StrCat("cannot restore '", name, "': ", target.DebugString(),
                         " has no host data"));
      }
    }
  }
  const Tensor* counter = nullptr;
  if (with_counter) {
    auto it = by_name.find(std::string(kSaveCounterName));
    if (it != by_name.end()) {
      RETURN_IF_ERROR(int64_scalar(std::string(kSaveCounterName), *it->second));
      counter = it->second;
    }
  }
  // The per-component values of SUM sync-on-read variables.
  std::map<std::string, Tensor> divided;
  for (const auto& [name, t] : tracked_) {
    if (t.variable == nullptr ||
        t.variable->kind() != Variable::Kind::kSyncOnRead ||
        t.variable->aggregation() != VariableAggregation::kSum) {
      continue;
    }
    ASSIGN_OR_RETURN(Tensor copy, HostCopy(*by_name[name], name));
    if (copy.bytes() > 0) {
      auto cost = devices::FinalizeMean(
          copy.raw_data(), copy.num_elements(), copy.dtype(),
          t.variable->strategy().NumReplicasInSync());
      if (!cost.ok()) return Annotate(cost.status(), name);
    }
    divided[name] = std::move(copy);
  }

  // Assign: nothing below fails.
  for (const auto& [name, t] : tracked_) {
    const Tensor& saved = *by_name[name];
    if (t.int64 != nullptr) {
      *t.int64 = saved.data<int64_t>()[0];
      continue;
    }
    auto d = divided.find(name);
    const Tensor& value = d == divided.end() ? saved : d->second;
    std::vector<Tensor> targets =
        t.is_tensor ? std::vector<Tensor>{t.tensor} : Components(*t.variable);
    for (const Tensor& target : targets) {
      if (value.bytes() > 0) {
        std::memcpy(target.raw_data(), value.raw_data(), value.bytes());
      }
    }
  }
  if (counter != nullptr) save_counter_ = counter->data<int64_t>()[0];
  return absl::OkStatus();
}

absl::StatusOr<devices::Tensor> LoadEntry(const std::string& path,
                                          const std::string& name) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
  ASSIGN_OR_RETURN(std::vector<CheckpointEntry> entries,
                   DecodeCheckpoint(bytes, path));
  for (CheckpointEntry& e : entries) {
    if (e.name == name) return std::move(e.value);
  }
  return absl::NotFoundError(
      absl::StrCat("checkpoint '", path, "' has no entry '", name, "'"));
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ListEntries(
    const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
  ASSIGN_OR_RETURN(std::vector<CheckpointEntry> entries,
                   DecodeCheckpoint(bytes, path));
  std::vector<std::pair<std::string, std::string>> out;
  for (const CheckpointEntry& e : entries) {
    out.emplace_back(e.name, Describe(e.value));
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace checkpoint
}  // namespace distribute
