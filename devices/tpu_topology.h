// TpuTopology, as tf.tpu.experimental.Topology: the physical layout of a TPU
// system, a mesh of chips (x, y, z) with cores_per_chip TensorCores each,
// and for every task (host) the mesh coordinates of its TPU devices in their
// local order (TPU:0, TPU:1, ...). A platform with TPUs gives it
// (Platform::GetTpuTopology); DeviceAssignment maps a computation's logical
// cores onto it.
//
// Example:
//   absl::StatusOr<devices::TpuTopology> topology =
//       platform.GetTpuTopology();   // e.g. sim:tpu_v4:2x2x1
//   topology->mesh_shape();          // {2, 2, 1, 2}
//   absl::StatusOr<std::string> name =
//       topology->TpuDeviceNameAtCoordinates({1, 0, 0, 1});
//   // "/job:worker/replica:0/task:0/device:TPU:3"
//   std::string bytes = topology->Serialized();   // TF's TopologyProto
//   absl::StatusOr<devices::TpuTopology> same =
//       devices::TpuTopology::FromSerialized(bytes);
#ifndef DEVICES_TPU_TOPOLOGY_H_
#define DEVICES_TPU_TOPOLOGY_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace devices {

// A core's place in the mesh: the chip's x, y, z and the core on the chip.
struct TpuCoordinates {
  int x = 0;
  int y = 0;
  int z = 0;
  int core = 0;

  // "(x, y, z, core)".
  std::string DebugString() const;
  std::array<int, 4> ToArray() const { return {x, y, z, core}; }
  static TpuCoordinates FromArray(const std::array<int, 4>& a) {
    return TpuCoordinates{a[0], a[1], a[2], a[3]};
  }
  friend bool operator==(const TpuCoordinates& a, const TpuCoordinates& b) {
    return a.ToArray() == b.ToArray();
  }
  friend bool operator!=(const TpuCoordinates& a, const TpuCoordinates& b) {
    return !(a == b);
  }
  friend bool operator<(const TpuCoordinates& a, const TpuCoordinates& b) {
    return a.ToArray() < b.ToArray();
  }
};

class TpuTopology {
 public:
  struct Core {
    TpuCoordinates coordinates;
    // Its full device name, e.g. "/job:worker/replica:0/task:1/device:TPU:0".
    std::string name;
  };
  struct Task {
    // The task's host CPU device.
    std::string cpu_device;
    // Its TPU devices, in local order.
    std::vector<Core> tpus;
  };

  // `mesh_shape` is {x, y, z, cores_per_chip}; a task's ordinal (what
  // TaskOrdinalAtCoordinates gives) is its place in `tasks`, which a
  // platform lists in the order of its hosts with TPUs. INVALID_ARGUMENT
  // naming the problem for: a mesh axis below 1, no task, a task without a
  // CPU device, tasks with different numbers of TPU devices (TF requires as
  // many on every task) or none, a core outside the mesh, two cores at one
  // place, or a core without a name.
  static absl::StatusOr<TpuTopology> Create(std::array<int, 4> mesh_shape,
                                            std::vector<Task> tasks);

  // The most places (x * y * z * cores_per_chip) a mesh may have: 2^18,
  // about thirty times a whole TPU v4 pod (4,096 chips of 2 cores) or v5p
  // pod (8,960 chips). Create and FromSerialized refuse larger meshes
  // (INVALID_ARGUMENT): the missing places are listed, so a few bytes of a
  // serialized topology must not make a list of millions.
  static constexpr int64_t kMaxMeshPlaces = int64_t{1} << 18;

  // The topology as TF serializes it (tf.tpu.experimental.Topology
  // .serialized(): a TopologyProto of mesh_shape, num_tasks,
  // num_tpu_devices_per_task and the flattened [task, device, axis]
  // device_coordinates), byte for byte what TF writes for the same
  // topology. Device names are not part of it.
  std::string Serialized() const;

  // A topology from TF's serialized form (as Topology(serialized=...)).
  // The serialized form has no device names: task t's TPU d is named
  // "/job:<job>/replica:0/task:<t>/device:TPU:<d>", its host
  // "/job:<job>/replica:0/task:<t>/device:CPU:0". INVALID_ARGUMENT naming
  // the problem for bytes that do not parse, a mesh that is not 4 positive
  // axes or has more than kMaxMeshPlaces places, counts below 1 (a topology has
  // at least one task and one TPU per task), a number of coordinates other
  // than tasks x devices x 4, a job name that TF would refuse, and
  // whatever Create refuses.
  static absl::StatusOr<TpuTopology> FromSerialized(
      absl::string_view serialized, absl::string_view job = "worker");

  // {x, y, z, cores_per_chip}.
  const std::array<int, 4>& mesh_shape() const { return mesh_shape_; }
  // 4: x, y, z and the core.
  int mesh_rank() const { return 4; }
  int num_tasks() const { return static_cast<int>(tasks_.size()); }
  int num_tpus_per_task() const {
    return static_cast<int>(tasks_.front().tpus.size());
  }
  const std::vector<Task>& tasks() const { return tasks_; }
  // The places of the mesh without a core (a degraded slice), sorted.
  const std::vector<TpuCoordinates>& missing_devices() const {
    return missing_;
  }

  // The task, local TPU ordinal and names of the core at `c`; NOT_FOUND
  // naming `c` when no core is there.
  absl::StatusOr<int> TaskOrdinalAtCoordinates(const TpuCoordinates& c) const;
  absl::StatusOr<int> TpuDeviceOrdinalAtCoordinates(
      const TpuCoordinates& c) const;
  absl::StatusOr<std::string> TpuDeviceNameAtCoordinates(
      const TpuCoordinates& c) const;
  absl::StatusOr<std::string> CpuDeviceNameAtCoordinates(
      const TpuCoordinates& c) const;

 private:
  TpuTopology() = default;
  // (task, ordinal) of the core at `c`.
  absl::StatusOr<std::pair<int, int>> Find(const TpuCoordinates& c) const;

  std::array<int, 4> mesh_shape_{};
  std::vector<Task> tasks_;
  std::map<TpuCoordinates, std::pair<int, int>> at_;
  std::vector<TpuCoordinates> missing_;
};

}  // namespace devices

#endif  // DEVICES_TPU_TOPOLOGY_H_
