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
#ifndef DEVICES_TPU_TOPOLOGY_H_
#define DEVICES_TPU_TOPOLOGY_H_

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

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
