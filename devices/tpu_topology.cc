#include "devices/tpu_topology.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "devices/tpu_topology.pb.h"

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
  // Every axis is at least 1, so the running product never shrinks and
  // stops before it could overflow.
  int64_t places = 1;
  for (int axis : mesh_shape) {
    places *= axis;
    if (places > kMaxMeshPlaces) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a TPU mesh of (", mesh_shape[0], ", ", mesh_shape[1], ", ",
          mesh_shape[2], ", ", mesh_shape[3], ") has more than ",
          kMaxMeshPlaces, " places, the most supported"));
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

std::string TpuTopology::Serialized() const {
  TpuTopologyProto proto;
  for (int axis : mesh_shape_) proto.add_mesh_shape(axis);
  proto.set_num_tasks(num_tasks());
  proto.set_num_tpu_devices_per_task(num_tpus_per_task());
  for (const Task& task : tasks_) {
    for (const Core& core : task.tpus) {
      for (int c : core.coordinates.ToArray()) proto.add_device_coordinates(c);
    }
  }
  return proto.SerializeAsString();
}

namespace {

// TF's job names: a letter, then letters, digits and underscores.
bool IsJobName(absl::string_view job) {
  if (job.empty() || !absl::ascii_isalpha(static_cast<unsigned char>(job[0])))
    return false;
  for (char c : job) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_')
      return false;
  }
  return true;
}

}  // namespace

absl::StatusOr<TpuTopology> TpuTopology::FromSerialized(
    absl::string_view serialized, absl::string_view job) {
  if (!IsJobName(job)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "\"", job,
        "\" is not a job name; use a letter followed by letters, digits or "
        "underscores, e.g. \"worker\""));
  }
  TpuTopologyProto proto;
  if (!proto.ParseFromArray(serialized.data(),
                            static_cast<int>(serialized.size()))) {
    return absl::InvalidArgumentError(
        "the serialized TPU topology does not parse as a TopologyProto");
  }
  if (proto.mesh_shape_size() != 4) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the serialized TPU topology has a mesh of ", proto.mesh_shape_size(),
        " axes; it must have 4 (x, y, z, cores per chip)"));
  }
  std::array<int, 4> mesh{};
  for (int i = 0; i < 4; ++i)
    mesh[static_cast<size_t>(i)] = proto.mesh_shape(i);
  if (proto.num_tasks() < 1 || proto.num_tpu_devices_per_task() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the serialized TPU topology has ", proto.num_tasks(), " tasks of ",
        proto.num_tpu_devices_per_task(),
        " TPU devices; a topology has at least one task with at least one"));
  }
  // Below 2^62: both counts are int32.
  const int64_t devices =
      int64_t{proto.num_tasks()} * proto.num_tpu_devices_per_task();
  const int coordinates = proto.device_coordinates_size();
  if (coordinates % 4 != 0 || coordinates / 4 != devices) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the serialized TPU topology has ", coordinates,
        " device coordinates; it needs 4 for each of num_tasks (",
        proto.num_tasks(), ") x num_tpu_devices_per_task (",
        proto.num_tpu_devices_per_task(), ") = ", devices, " devices"));
  }
  // The counts are bounded by the input's size from here on (each
  // coordinate took at least a byte).
  std::vector<Task> tasks(static_cast<size_t>(proto.num_tasks()));
  int at = 0;
  for (int t = 0; t < proto.num_tasks(); ++t) {
    Task& task = tasks[static_cast<size_t>(t)];
    const std::string prefix =
        absl::StrCat("/job:", job, "/replica:0/task:", t);
    task.cpu_device = absl::StrCat(prefix, "/device:CPU:0");
    for (int d = 0; d < proto.num_tpu_devices_per_task(); ++d) {
      std::array<int, 4> c{};
      for (int i = 0; i < 4; ++i) {
        c[static_cast<size_t>(i)] = proto.device_coordinates(at++);
      }
      task.tpus.push_back(Core{TpuCoordinates::FromArray(c),
                               absl::StrCat(prefix, "/device:TPU:", d)});
    }
  }
  return Create(mesh, std::move(tasks));
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
  RETURN_IF_ERROR(at.status());
  return at->first;
}

absl::StatusOr<int> TpuTopology::TpuDeviceOrdinalAtCoordinates(
    const TpuCoordinates& c) const {
  absl::StatusOr<std::pair<int, int>> at = Find(c);
  RETURN_IF_ERROR(at.status());
  return at->second;
}

absl::StatusOr<std::string> TpuTopology::TpuDeviceNameAtCoordinates(
    const TpuCoordinates& c) const {
  absl::StatusOr<std::pair<int, int>> at = Find(c);
  RETURN_IF_ERROR(at.status());
  return tasks_[static_cast<size_t>(at->first)]
      .tpus[static_cast<size_t>(at->second)]
      .name;
}

absl::StatusOr<std::string> TpuTopology::CpuDeviceNameAtCoordinates(
    const TpuCoordinates& c) const {
  absl::StatusOr<std::pair<int, int>> at = Find(c);
  RETURN_IF_ERROR(at.status());
  return tasks_[static_cast<size_t>(at->first)].cpu_device;
}

}  // namespace devices
