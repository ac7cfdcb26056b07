#include "devices/tpu_topology.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace devices {

std::string TpuCoordinates::DebugString() const {
  return absl::StrCat("(", x, ", ", y, ", ", z, ", ", core, ")");
}

absl::StatusOr<TpuTopology> TpuTopology::Create(std::array<int, 4> mesh_shape,
                                                std::vector<Task> tasks) {
  static constexpr const char* kAxes[] = {"x", "y", "z", "cores_per_chip"};
  for (int i = 0; i < 4; ++i) {
    if (mesh_shape[static_cast<size_t>(i)] < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TPU mesh axis ", kAxes[i], " is ",
          mesh_shape[static_cast<size_t>(i)], "; it must be >= 1"));
    }
  }
  if (tasks.empty()) {
    return absl::InvalidArgumentError("a TPU topology needs at least one task");
  }
  TpuTopology topology;
  topology.mesh_shape_ = mesh_shape;
  const size_t per_task = tasks.front().tpus.size();
  for (size_t t = 0; t < tasks.size(); ++t) {
    if (tasks[t].cpu_device.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("task ", t, " of the TPU topology has no CPU device"));
    }
    if (tasks[t].tpus.empty() || tasks[t].tpus.size() != per_task) {
      return absl::InvalidArgumentError(
          absl::StrCat("task ", t, " has ", tasks[t].tpus.size(),
                       " TPU devices and task 0 ", per_task,
                       ": every task of a TPU system has as many, and at least "
                       "one"));
    }
    for (size_t o = 0; o < tasks[t].tpus.size(); ++o) {
      const Core& core = tasks[t].tpus[o];
      const std::array<int, 4> c = core.coordinates.ToArray();
      for (int i = 0; i < 4; ++i) {
        if (c[static_cast<size_t>(i)] < 0 ||
            c[static_cast<size_t>(i)] >= mesh_shape[static_cast<size_t>(i)]) {
          return absl::InvalidArgumentError(absl::StrCat(
              "TPU ", o, " of task ", t, " is at ",
              core.coordinates.DebugString(), ", outside the mesh (",
              mesh_shape[0], ", ", mesh_shape[1], ", ", mesh_shape[2], ", ",
              mesh_shape[3], ")"));
        }
      }
      if (core.name.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("TPU ", o, " of task ", t, " has no device name"));
      }
      auto [it, inserted] = topology.at_.emplace(
          core.coordinates,
          std::make_pair(static_cast<int>(t), static_cast<int>(o)));
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrCat(
            "two TPU devices are at ", core.coordinates.DebugString(), ": TPU ",
            it->second.second, " of task ", it->second.first, " and TPU ", o,
            " of task ", t));
      }
    }
  }
  for (int x = 0; x < mesh_shape[0]; ++x) {
    for (int y = 0; y < mesh_shape[1]; ++y) {
      for (int z = 0; z < mesh_shape[2]; ++z) {
        for (int core = 0; core < mesh_shape[3]; ++core) {
          const TpuCoordinates c{x, y, z, core};
          if (topology.at_.count(c) == 0) topology.missing_.push_back(c);
        }
      }
    }
  }
  topology.tasks_ = std::move(tasks);
  return topology;
}

absl::StatusOr<std::pair<int, int>> TpuTopology::Find(
    const TpuCoordinates& c) const {
  auto it = at_.find(c);
  if (it == at_.end()) {
    return absl::NotFoundError(absl::StrCat(
        "no TPU core at ", c.DebugString(), " in a mesh of (", mesh_shape_[0],
        ", ", mesh_shape_[1], ", ", mesh_shape_[2], ", ", mesh_shape_[3], ")"));
  }
  return it->second;
}

absl::StatusOr<int> TpuTopology::TaskOrdinalAtCoordinates(
    const TpuCoordinates& c) const {
  absl::StatusOr<std::pair<int, int>> at = Find(c);
  if (!at.ok()) return at.status();
  return at->first;
}

absl::StatusOr<int> TpuTopology::TpuDeviceOrdinalAtCoordinates(
    const TpuCoordinates& c) const {
  absl::StatusOr<std::pair<int, int>> at = Find(c);
  if (!at.ok()) return at.status();
  return at->second;
}

absl::StatusOr<std::string> TpuTopology::TpuDeviceNameAtCoordinates(
    const TpuCoordinates& c) const {
  absl::StatusOr<std::pair<int, int>> at = Find(c);
  if (!at.ok()) return at.status();
  return tasks_[static_cast<size_t>(at->first)]
      .tpus[static_cast<size_t>(at->second)]
      .name;
}

absl::StatusOr<std::string> TpuTopology::CpuDeviceNameAtCoordinates(
    const TpuCoordinates& c) const {
  absl::StatusOr<std::pair<int, int>> at = Find(c);
  if (!at.ok()) return at.status();
  return tasks_[static_cast<size_t>(at->first)].cpu_device;
}

}  // namespace devices
