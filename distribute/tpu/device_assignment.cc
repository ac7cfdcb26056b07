#include "distribute/tpu/device_assignment.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/status_macros.h"

namespace distribute {
namespace tpu {
namespace {

constexpr int kRank = 4;
using Dims = std::array<int, kRank>;

std::string DimsString(const Dims& d) {
  return absl::StrCat("[", absl::StrJoin(d, " "), "]");
}

int64_t Product(const Dims& d) {
  int64_t p = 1;
  for (int v : d) p *= v;
  return p;
}

int64_t CeilOfRatio(int64_t n, int64_t m) { return (n + m - 1) / m; }

// How many blocks of shape * stride fit along each axis of the mesh, times
// the stride (TF's replica_counts). Precondition: every block fits.
Dims ReplicaCounts(const Dims& mesh, const Dims& shape, const Dims& stride) {
  Dims counts{};
  for (int i = 0; i < kRank; ++i) {
    counts[i] = (mesh[i] / (shape[i] * stride[i])) * stride[i];
  }
  return counts;
}

// The ring through an x by y mesh at height z, without chip (0, 0): along
// x and back in pairs of rows, then down the first column.
std::vector<std::array<int, 3>> OpenRing2d(int x_size, int y_size, int z) {
  std::vector<std::array<int, 3>> ring;
  for (int i = 0; i < y_size / 2; ++i) {
    for (int j = 1; j < x_size; ++j) ring.push_back({j, 2 * i, z});
    for (int j = x_size - 1; j > 0; --j) ring.push_back({j, 2 * i + 1, z});
  }
  for (int i = y_size - 1; i > 0; --i) ring.push_back({0, i, z});
  return ring;
}

}  // namespace

std::vector<std::array<int, 3>> Ring3d(int x_size, int y_size, int z_size) {
  std::vector<std::array<int, 3>> ring;
  // Two axes of size 1: a line.
  if (x_size == 1 && y_size == 1) {
    for (int i = 0; i < z_size; ++i) ring.push_back({0, 0, i});
    return ring;
  }
  if (x_size == 1 && z_size == 1) {
    for (int i = 0; i < y_size; ++i) ring.push_back({0, i, 0});
    return ring;
  }
  if (y_size == 1 && z_size == 1) {
    for (int i = 0; i < x_size; ++i) ring.push_back({i, 0, 0});
    return ring;
  }
  // An odd side has no such ring: plain order, as TF.
  if ((x_size > 1 && x_size % 2 != 0) || (y_size > 1 && y_size % 2 != 0) ||
      (z_size > 1 && z_size % 2 != 0)) {
    for (int z = 0; z < z_size; ++z) {
      for (int y = 0; y < y_size; ++y) {
        for (int x = 0; x < x_size; ++x) ring.push_back({x, y, z});
      }
    }
    return ring;
  }
  ring.push_back({0, 0, 0});
  // One axis of size 1: a flat ring in the other two.
  if (z_size == 1) {
    for (const auto& c : OpenRing2d(x_size, y_size, 0)) ring.push_back(c);
    return ring;
  }
  if (y_size == 1) {
    for (const auto& [x, z, y] : OpenRing2d(x_size, z_size, 0)) {
      ring.push_back({x, y, z});
    }
    return ring;
  }
  if (x_size == 1) {
    for (const auto& [y, z, x] : OpenRing2d(y_size, z_size, 0)) {
      ring.push_back({x, y, z});
    }
    return ring;
  }
  // Every side even and above 1: a 2D ring per z, every other one reversed,
  // closed through the column at (0, 0).
  for (int i = 0; i < z_size; ++i) {
    std::vector<std::array<int, 3>> layer = OpenRing2d(x_size, y_size, i);
    if (i % 2 != 0) std::reverse(layer.begin(), layer.end());
    for (const auto& c : layer) ring.push_back(c);
  }
  for (int i = z_size - 1; i > 0; --i) ring.push_back({0, 0, i});
  return ring;
}

absl::StatusOr<DeviceAssignment> DeviceAssignment::Create(
    devices::TpuTopology topology,
    std::vector<std::vector<Coordinates>> core_assignment) {
  if (core_assignment.empty()) {
    return absl::InvalidArgumentError(
        "a device assignment needs at least one replica");
  }
  const size_t cores = core_assignment.front().size();
  std::map<int, std::map<int, std::vector<int>>> by_task;
  std::map<Coordinates, std::pair<size_t, size_t>> used;
  for (size_t r = 0; r < core_assignment.size(); ++r) {
    if (core_assignment[r].empty() || core_assignment[r].size() != cores) {
      return absl::InvalidArgumentError(absl::StrCat(
          "replica ", r, " has ", core_assignment[r].size(),
          " cores and replica 0 ", cores,
          ": every replica has as many logical cores, and at least one"));
    }
    for (size_t k = 0; k < cores; ++k) {
      const Coordinates& c = core_assignment[r][k];
      absl::StatusOr<int> task = topology.TaskOrdinalAtCoordinates(c);
      if (!task.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("logical core ", k, " of replica ", r, ": ",
                         task.status().message()));
      }
      auto [it, inserted] = used.emplace(c, std::make_pair(r, k));
      if (!inserted) {
        return absl::InvalidArgumentError(
            absl::StrCat("the core at ", c.DebugString(), " is logical core ",
                         it->second.second, " of replica ", it->second.first,
                         " and logical core ", k, " of replica ", r,
                         ": a core runs one logical core"));
      }
      by_task[*task][static_cast<int>(k)].push_back(static_cast<int>(r));
    }
  }
  DeviceAssignment assignment(std::move(topology), std::move(core_assignment));
  assignment.replicas_by_task_ = std::move(by_task);
  return assignment;
}

int64_t DeviceAssignment::MaxReplicas(const devices::TpuTopology& topology,
                                      const BuildOptions& options) {
  const Dims mesh = topology.mesh_shape();
  const Dims shape = options.computation_shape.value_or(Dims{1, 1, 1, 1});
  const Dims stride = options.computation_stride.value_or(Dims{1, 1, 1, 1});
  for (int i = 0; i < kRank; ++i) {
    if (shape[i] < 1 || stride[i] < 1 ||
        int64_t{shape[i]} * stride[i] > mesh[i]) {
      return 0;
    }
  }
  int64_t count = Product(ReplicaCounts(mesh, shape, stride));
  if (!topology.missing_devices().empty()) {
    count = std::min<int64_t>(count, int64_t{topology.num_tasks()} *
                                         topology.num_tpus_per_task() /
                                         Product(shape));
  }
  return count;
}

absl::StatusOr<DeviceAssignment> DeviceAssignment::Build(
    const devices::TpuTopology& topology, const BuildOptions& options) {
  const Dims mesh = topology.mesh_shape();
  const Dims shape = options.computation_shape.value_or(Dims{1, 1, 1, 1});
  const Dims stride = options.computation_stride.value_or(Dims{1, 1, 1, 1});
  for (int i = 0; i < kRank; ++i) {
    if (shape[i] < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "computation_shape must be positive; got computation_shape=",
          DimsString(shape)));
    }
    if (stride[i] < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "computation_stride must be positive; got computation_stride=",
          DimsString(stride)));
    }
  }
  Dims footprint{};
  for (int i = 0; i < kRank; ++i) {
    if (int64_t{shape[i]} * stride[i] > mesh[i]) {
      Dims wide{};
      for (int j = 0; j < kRank; ++j) {
        wide[j] = static_cast<int>(
            std::min<int64_t>(int64_t{shape[j]} * stride[j], INT32_MAX));
      }
      return absl::InvalidArgumentError(absl::StrCat(
          "computation footprint ", DimsString(wide),
          " does not fit in TPU topology shape ", DimsString(mesh)));
    }
    footprint[i] = shape[i] * stride[i];
  }
  const Dims replica_counts = ReplicaCounts(mesh, shape, stride);
  const int64_t max_replicas = Product(replica_counts);
  const int num_replicas = options.num_replicas;
  if (num_replicas < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_replicas must be at least 1; got ", num_replicas));
  }
  if (num_replicas > max_replicas) {
    return absl::InvalidArgumentError(absl::StrCat(
        "requested ", num_replicas, " replicas but only ", max_replicas,
        " replicas with shape ", DimsString(shape), " and computation_stride ",
        DimsString(stride), " fit in a TPU mesh of shape ", DimsString(mesh)));
  }
  const int64_t cores_per_replica = Product(shape);
  std::vector<std::vector<Coordinates>> assignment(
      static_cast<size_t>(num_replicas));

  if (!topology.missing_devices().empty()) {
    // A degraded slice: replicas take the cores in task order, strides
    // ignored (as TF, which requires there be none).
    if (Product(stride) != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "this TPU slice misses ", topology.missing_devices().size(),
          " cores, and a computation_stride (", DimsString(stride),
          ") cannot be honoured on it: give none"));
    }
    const int64_t per_task = topology.num_tpus_per_task();
    if (num_replicas * cores_per_replica > topology.num_tasks() * per_task) {
      return absl::InvalidArgumentError(absl::StrCat(
          "requested ", num_replicas, " replicas of ", cores_per_replica,
          " cores but this TPU slice has ", topology.num_tasks() * per_task,
          " cores (it misses ", topology.missing_devices().size(), ")"));
    }
    for (int64_t r = 0; r < num_replicas; ++r) {
      for (int64_t k = 0; k < cores_per_replica; ++k) {
        const int64_t id = r * cores_per_replica + k;
        assignment[static_cast<size_t>(r)].push_back(
            topology.tasks()[static_cast<size_t>(id / per_task)]
                .tpus[static_cast<size_t>(id % per_task)]
                .coordinates);
      }
    }
    return Create(topology, std::move(assignment));
  }

  // The grid of replicas: as close to a cube as the mesh allows, the most
  // constrained axes first, and among equal ones the core axis first, then
  // x, y and z (so replicas share a chip, then a host, before they spread).
  Dims replica_shape{};
  {
    std::vector<std::pair<int, int>> order;  // (count, (axis + 1) % 4)
    for (int i = 0; i < kRank; ++i) {
      order.emplace_back(replica_counts[i], (i + 1) % kRank);
    }
    std::sort(order.begin(), order.end());
    int64_t remaining = num_replicas;
    int remaining_dims = kRank;
    for (const auto& [count, key] : order) {
      const int i = (key + kRank - 1) % kRank;
      // As TF: the float root, rounded up.
      const int64_t target = static_cast<int64_t>(std::ceil(
          std::pow(static_cast<double>(remaining), 1.0 / remaining_dims)));
      replica_shape[i] = static_cast<int>(std::min<int64_t>(target, count));
      remaining = CeilOfRatio(remaining, replica_shape[i]);
      --remaining_dims;
    }
    if (remaining != 1) {
      return absl::InternalError(
          absl::StrCat("the replica grid ", DimsString(replica_shape),
                       " holds fewer than ", num_replicas, " replicas"));
    }
  }

  // TF tiles full replications of blocks that take every core of their
  // chips, without strides, in ring order.
  bool tiling_3d = shape[3] == mesh[3] && Product(stride) == 1 &&
                   num_replicas == max_replicas;
  if (options.device_order_mode == DeviceOrderMode::kRing && !tiling_3d) {
    return absl::InvalidArgumentError(
        "device_order_mode=DeviceOrderMode.RING is not compatible with the 3D "
        "tiling current topology.  Try setting "
        "device_order_mode=DeviceOrderMode.AUTO (ring order needs a full "
        "replication, no computation_stride, and blocks that take every core "
        "of their chips)");
  }
  if (options.device_order_mode != DeviceOrderMode::kAuto) {
    tiling_3d = options.device_order_mode == DeviceOrderMode::kRing;
  }
  if (tiling_3d) {
    const std::vector<std::array<int, 3>> inner =
        Ring3d(shape[0], shape[1], shape[2]);
    const std::vector<std::array<int, 3>> outer =
        Ring3d(replica_shape[0], replica_shape[1], replica_shape[2]);
    if (static_cast<int64_t>(outer.size()) < num_replicas) {
      return absl::InternalError(absl::StrCat(
          "the ring of replica blocks ", DimsString(replica_shape), " holds ",
          outer.size(), " of ", num_replicas, " replicas"));
    }
    for (int r = 0; r < num_replicas; ++r) {
      const std::array<int, 3>& o = outer[static_cast<size_t>(r)];
      for (int64_t index = 0; index < cores_per_replica; ++index) {
        const std::array<int, 3>& in =
            inner[static_cast<size_t>(index / mesh[3])];
        assignment[static_cast<size_t>(r)].push_back(Coordinates{
            o[0] * shape[0] + in[0], o[1] * shape[1] + in[1],
            o[2] * shape[2] + in[2], static_cast<int>(index % mesh[3])});
      }
    }
    return Create(topology, std::move(assignment));
  }

  for (int r = 0; r < num_replicas; ++r) {
    // The replica's position in the grid, the core axis varying fastest.
    int64_t t = r;
    Dims pos{};
    for (int axis : {3, 0, 1, 2}) {
      pos[axis] = static_cast<int>(t % replica_shape[axis]);
      t /= replica_shape[axis];
    }
    Dims offset{};
    for (int i = 0; i < kRank; ++i) {
      offset[i] = (pos[i] / stride[i]) * footprint[i] + pos[i] % stride[i];
    }
    // The block's cores in row-major order of computation_shape.
    for (int a = 0; a < shape[0]; ++a) {
      for (int b = 0; b < shape[1]; ++b) {
        for (int c = 0; c < shape[2]; ++c) {
          for (int d = 0; d < shape[3]; ++d) {
            assignment[static_cast<size_t>(r)].push_back(Coordinates{
                offset[0] + a * stride[0], offset[1] + b * stride[1],
                offset[2] + c * stride[2], offset[3] + d * stride[3]});
          }
        }
      }
    }
  }
  return Create(topology, std::move(assignment));
}

absl::Status DeviceAssignment::CheckIndex(int replica, int logical_core) const {
  if (replica < 0 || replica >= num_replicas()) {
    return absl::InvalidArgumentError(
        absl::StrCat("replica ", replica, " is not in [0, ", num_replicas(),
                     ") of this device assignment"));
  }
  if (logical_core < 0 || logical_core >= num_cores_per_replica()) {
    return absl::InvalidArgumentError(
        absl::StrCat("logical core ", logical_core, " is not in [0, ",
                     num_cores_per_replica(), "): each replica has ",
                     num_cores_per_replica(), " cores"));
  }
  return absl::OkStatus();
}

absl::StatusOr<DeviceAssignment::Coordinates> DeviceAssignment::coordinates(
    int replica, int logical_core) const {
  RETURN_IF_ERROR(CheckIndex(replica, logical_core));
  return assignment_[static_cast<size_t>(replica)]
                    [static_cast<size_t>(logical_core)];
}

absl::StatusOr<int> DeviceAssignment::TpuOrdinal(int replica,
                                                 int logical_core) const {
  ASSIGN_OR_RETURN(Coordinates c, coordinates(replica, logical_core));
  return topology_.TpuDeviceOrdinalAtCoordinates(c);
}

absl::StatusOr<std::string> DeviceAssignment::TpuDevice(
    int replica, int logical_core) const {
  ASSIGN_OR_RETURN(Coordinates c, coordinates(replica, logical_core));
  return topology_.TpuDeviceNameAtCoordinates(c);
}

absl::StatusOr<std::string> DeviceAssignment::HostDevice(
    int replica, int logical_core) const {
  ASSIGN_OR_RETURN(Coordinates c, coordinates(replica, logical_core));
  return topology_.CpuDeviceNameAtCoordinates(c);
}

absl::StatusOr<std::vector<int>> DeviceAssignment::LookupReplicas(
    int task_id, int logical_core) const {
  auto task = replicas_by_task_.find(task_id);
  if (task != replicas_by_task_.end()) {
    auto core = task->second.find(logical_core);
    if (core != task->second.end()) return core->second;
  }
  return absl::NotFoundError(
      absl::StrCat("Can not find any replica in task: ", task_id,
                   " contains logical_core: ", logical_core));
}

}  // namespace tpu
}  // namespace distribute
