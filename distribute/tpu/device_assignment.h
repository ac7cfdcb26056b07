// DeviceAssignment, as tf.tpu.experimental.DeviceAssignment: which physical
// TPU core runs each logical core of each replica of a computation. A
// computation of one core per replica is data parallelism; a computation
// shape of several cores gives each replica a block of cores (model
// parallelism, TPUStrategy's logical devices).
//
// Build() follows TF's device_assignment(): replicas tile the mesh in blocks
// of computation_shape * computation_stride cores, the replica grid chosen
// as close to a cube as the mesh allows, cores of one chip first; a full
// replication of blocks that take every core of their chips follows TF's 3D
// ring order (DeviceOrderMode::kAuto; kRing asks for it, kMesh refuses it),
// so that neighbouring replicas are neighbouring chips; a degraded slice
// (missing cores) is filled in task order.
//
// Example:
//   absl::StatusOr<devices::TpuTopology> topology = platform.GetTpuTopology();
//   distribute::tpu::DeviceAssignment::BuildOptions options;
//   options.computation_shape = {1, 1, 1, 2};   // both cores of a chip
//   options.num_replicas = 4;
//   absl::StatusOr<distribute::tpu::DeviceAssignment> assignment =
//       distribute::tpu::DeviceAssignment::Build(*topology, options);
//   assignment->TpuDevice(/*replica=*/3, /*logical_core=*/1);
#ifndef DISTRIBUTE_TPU_DEVICE_ASSIGNMENT_H_
#define DISTRIBUTE_TPU_DEVICE_ASSIGNMENT_H_

#include <array>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/tpu_topology.h"

namespace distribute {
namespace tpu {

class DeviceAssignment {
 public:
  using Coordinates = devices::TpuCoordinates;

  // `core_assignment[replica][logical_core]` is the place of that core.
  // INVALID_ARGUMENT for no replica, replicas of different numbers of cores
  // (or none), a place where the topology has no core, or one core given
  // twice.
  static absl::StatusOr<DeviceAssignment> Create(
      devices::TpuTopology topology,
      std::vector<std::vector<Coordinates>> core_assignment);

  // TF's DeviceOrderMode: how replicas are laid out on the mesh.
  enum class DeviceOrderMode {
    // Ring order where it applies (a full replication of blocks of whole
    // chips, without strides), else the grid.
    kAuto,
    // Ring order; INVALID_ARGUMENT where it does not apply.
    kRing,
    // The grid.
    kMesh,
  };

  struct BuildOptions {
    // The block of cores of one replica, {x, y, z, core}; {1, 1, 1, 1} when
    // unset.
    std::optional<std::array<int, 4>> computation_shape;
    // The spacing of those cores in the mesh; {1, 1, 1, 1} when unset.
    std::optional<std::array<int, 4>> computation_stride;
    int num_replicas = 1;
    DeviceOrderMode device_order_mode = DeviceOrderMode::kAuto;
  };
  // TF's DeviceAssignment.build. INVALID_ARGUMENT, with TF's messages, for
  // a shape or stride below 1, a block that does not fit the mesh, more
  // replicas than fit (or fewer than 1), kRing where ring order does not
  // apply, or, on a degraded slice, a stride or more cores than it has.
  static absl::StatusOr<DeviceAssignment> Build(
      const devices::TpuTopology& topology, const BuildOptions& options);
  static absl::StatusOr<DeviceAssignment> Build(
      const devices::TpuTopology& topology) {
    return Build(topology, BuildOptions());
  }

  // How many replicas Build lays out with `options`' computation shape and
  // stride (num_replicas and the order ignored): the blocks that fit the
  // mesh, and on a degraded slice no more than its cores hold. 0 when a
  // block does not fit or a count is below 1.
  static int64_t MaxReplicas(const devices::TpuTopology& topology,
                             const BuildOptions& options);

  const devices::TpuTopology& topology() const { return topology_; }
  int num_replicas() const { return static_cast<int>(assignment_.size()); }
  int num_cores_per_replica() const {
    return static_cast<int>(assignment_.front().size());
  }
  // [replica][logical_core] -> place.
  const std::vector<std::vector<Coordinates>>& core_assignment() const {
    return assignment_;
  }

  // Each of these is INVALID_ARGUMENT for a replica or logical core out of
  // range.
  absl::StatusOr<Coordinates> coordinates(int replica, int logical_core) const;
  // The local ordinal of the core's TPU device on its task.
  absl::StatusOr<int> TpuOrdinal(int replica = 0, int logical_core = 0) const;
  // The names of the core's TPU device and of its task's CPU.
  absl::StatusOr<std::string> TpuDevice(int replica = 0,
                                        int logical_core = 0) const;
  absl::StatusOr<std::string> HostDevice(int replica = 0,
                                         int logical_core = 0) const;
  // The replicas, sorted, whose `logical_core` runs on task `task_id`;
  // NOT_FOUND (TF's ValueError) when there is none.
  absl::StatusOr<std::vector<int>> LookupReplicas(int task_id,
                                                  int logical_core) const;

 private:
  DeviceAssignment(devices::TpuTopology topology,
                   std::vector<std::vector<Coordinates>> assignment)
      : topology_(std::move(topology)), assignment_(std::move(assignment)) {}
  absl::Status CheckIndex(int replica, int logical_core) const;

  devices::TpuTopology topology_;
  std::vector<std::vector<Coordinates>> assignment_;
  // task -> logical core -> sorted replicas.
  std::map<int, std::map<int, std::vector<int>>> replicas_by_task_;
};

// TF's ring orders of a mesh of chips, exposed for tests: a Hamiltonian
// cycle through an x * y * z mesh of even sides (2D rings stacked along z
// and joined at a corner), so that consecutive replicas are neighbours.
std::vector<std::array<int, 3>> Ring3d(int x_size, int y_size, int z_size);

}  // namespace tpu
}  // namespace distribute

#endif  // DISTRIBUTE_TPU_DEVICE_ASSIGNMENT_H_
