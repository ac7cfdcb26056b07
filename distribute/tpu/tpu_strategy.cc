#include "distribute/tpu/tpu_strategy.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/dtype.h"
#include "devices/shape.h"
#include "devices/status_macros.h"
#include "distribute/context.h"
#include "distribute/strategy_devices.h"

namespace distribute {
namespace {

// One replica per TPU core, in the platform's order.
absl::StatusOr<tpu::DeviceAssignment> EveryCore(
    const devices::TpuTopology& topology) {
  std::vector<std::vector<tpu::DeviceAssignment::Coordinates>> cores;
  for (const devices::TpuTopology::Task& task : topology.tasks()) {
    for (const devices::TpuTopology::Core& core : task.tpus) {
      cores.push_back({core.coordinates});
    }
  }
  return tpu::DeviceAssignment::Create(topology, std::move(cores));
}

}  // namespace

absl::StatusOr<std::unique_ptr<TPUStrategy>> TPUStrategy::Create(
    devices::Platform& platform, Options options) {
  absl::StatusOr<devices::TpuTopology> topology = platform.GetTpuTopology();
  if (absl::IsUnimplemented(topology.status())) {
    return absl::FailedPreconditionError(
        absl::StrCat("TPUStrategy needs TPUs: ", topology.status().message()));
  }
  RETURN_IF_ERROR(topology.status());
  if (!options.device_assignment.has_value()) {
    ASSIGN_OR_RETURN(tpu::DeviceAssignment every, EveryCore(*topology));
    options.device_assignment = std::move(every);
  }
  const tpu::DeviceAssignment& assignment = *options.device_assignment;
  std::vector<std::string> replicas;
  for (int r = 0; r < assignment.num_replicas(); ++r) {
    // Every logical core must be a device of this platform.
    for (int k = 0; k < assignment.num_cores_per_replica(); ++k) {
      ASSIGN_OR_RETURN(std::string name, assignment.TpuDevice(r, k));
      // The platform's core at the same place must be that device: an
      // assignment of another slice may name devices this one also has.
      const devices::TpuCoordinates at = *assignment.coordinates(r, k);
      absl::StatusOr<std::string> here =
          topology->TpuDeviceNameAtCoordinates(at);
      absl::StatusOr<devices::Device*> device = platform.FindDevice(name);
      if (!here.ok() || *here != name || !device.ok()) {
        return absl::NotFoundError(absl::StrCat(
            "logical core ", k, " of replica ", r, " of the device assignment ",
            "is ", name, " at ", at.DebugString(), ", which platform ",
            platform.name(),
            " does not have there: build the assignment from this platform's "
            "GetTpuTopology()"));
      }
      if ((*device)->kind() != devices::DeviceKind::kTPU) {
        return absl::InvalidArgumentError(
            absl::StrCat("logical core ", k, " of replica ", r, " is ", name,
                         ", which is not a TPU"));
      }
    }
    replicas.push_back(*assignment.TpuDevice(r, 0));
  }
  ASSIGN_OR_RETURN(std::vector<std::string> resolved,
                   ResolveDevices(platform, replicas));
  std::shared_ptr<CrossDeviceOps> ops = options.cross_device_ops;
  if (ops == nullptr) ops = std::make_shared<CollectiveAllReduce>();
  RETURN_IF_ERROR(ops->Bind(platform, resolved));
  return std::unique_ptr<TPUStrategy>(new TPUStrategy(
      std::make_unique<StrategyExtended>(&platform, std::move(resolved),
                                         std::nullopt, std::move(ops)),
      *std::move(options.device_assignment)));
}

absl::StatusOr<std::string> TPUStrategy::LogicalDevice(int replica,
                                                       int logical_core) const {
  return assignment_.TpuDevice(replica, logical_core);
}

absl::StatusOr<int> TPUStrategy::CurrentReplica(absl::string_view what) const {
  ReplicaContext* context = GetReplicaContext();
  if (context == nullptr || &context->strategy() != this) {
    return absl::FailedPreconditionError(
        absl::StrCat(what,
                     " places a replica's tensor on its logical cores: call it "
                     "inside this TPUStrategy's Run"));
  }
  return context->ReplicaIdInSyncGroup();
}

absl::StatusOr<devices::Tensor> TPUStrategy::OnLogicalCore(
    const devices::Tensor& tensor, int replica, int logical_core) const {
  ASSIGN_OR_RETURN(std::string name,
                   assignment_.TpuDevice(replica, logical_core));
  if (tensor.device() == name) return tensor;
  devices::Platform& platform = extended().platform();
  ASSIGN_OR_RETURN(devices::Device * device, platform.FindDevice(name));
  return devices::CopyTensorTo(platform, tensor, *device);
}

absl::StatusOr<devices::Tensor> TPUStrategy::AssignToLogicalDevice(
    const devices::Tensor& tensor, int logical_core) const {
  ASSIGN_OR_RETURN(int replica, CurrentReplica("AssignToLogicalDevice"));
  return OnLogicalCore(tensor, replica, logical_core);
}

absl::StatusOr<std::vector<devices::Tensor>>
TPUStrategy::ReplicateToLogicalDevices(const devices::Tensor& tensor) const {
  ASSIGN_OR_RETURN(int replica, CurrentReplica("ReplicateToLogicalDevices"));
  std::vector<devices::Tensor> out;
  for (int k = 0; k < num_cores_per_replica(); ++k) {
    ASSIGN_OR_RETURN(devices::Tensor t, OnLogicalCore(tensor, replica, k));
    out.push_back(std::move(t));
  }
  return out;
}

absl::StatusOr<std::vector<devices::Tensor>> TPUStrategy::SplitToLogicalDevices(
    const devices::Tensor& tensor,
    const std::vector<int64_t>& partition_dimensions) const {
  ASSIGN_OR_RETURN(int replica, CurrentReplica("SplitToLogicalDevices"));
  const devices::Shape& shape = tensor.shape();
  const int rank = shape.rank();
  if (static_cast<int>(partition_dimensions.size()) != rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("partition_dimensions has ", partition_dimensions.size(),
                     " counts for a tensor of rank ", rank, " (shape ",
                     shape.DebugString(), "): give one per dimension"));
  }
  int64_t tiles = 1;
  std::vector<int64_t> tile_dims(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    const int64_t parts = partition_dimensions[static_cast<size_t>(i)];
    if (parts < 1 || parts > num_cores_per_replica()) {
      return absl::InvalidArgumentError(
          absl::StrCat("partition_dimensions[", i, "] is ", parts,
                       "; it must be in [1, ", num_cores_per_replica(), "]"));
    }
    if (shape.dim(i) % parts != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("dimension ", i, " of shape ", shape.DebugString(),
                       " does not split into ", parts, " equal tiles"));
    }
    // Each count is at most the cores, so the product stays small until it
    // passes them (then it is refused below).
    if (tiles <= num_cores_per_replica()) tiles *= parts;
    tile_dims[static_cast<size_t>(i)] = shape.dim(i) / parts;
  }
  if (tiles != num_cores_per_replica()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "partition_dimensions [", absl::StrJoin(partition_dimensions, ", "),
        "] make ",
        tiles > num_cores_per_replica() ? "more" : absl::StrCat(tiles),
        " tiles but each replica has ", num_cores_per_replica(),
        " logical cores: their product must equal that"));
  }
  ASSIGN_OR_RETURN(devices::Shape tile_shape, devices::Shape::Make(tile_dims));

  devices::Platform& platform = extended().platform();
  ASSIGN_OR_RETURN(devices::Tensor host,
                   devices::ToHostTensor(platform, tensor));
  const size_t element = devices::DTypeSize(tensor.dtype());
  // Row-major strides of the whole tensor, in elements.
  std::vector<int64_t> strides(static_cast<size_t>(rank), 1);
  for (int i = rank - 2; i >= 0; --i) {
    strides[static_cast<size_t>(i)] =
        strides[static_cast<size_t>(i) + 1] * shape.dim(i + 1);
  }
  std::vector<devices::Tensor> out;
  for (int64_t k = 0; k < tiles; ++k) {
    // The tile's first element, from its place in the grid (last dimension
    // fastest).
    std::vector<int64_t> origin(static_cast<size_t>(rank));
    int64_t rest = k;
    for (int i = rank - 1; i >= 0; --i) {
      const int64_t parts = partition_dimensions[static_cast<size_t>(i)];
      origin[static_cast<size_t>(i)] =
          (rest % parts) * tile_dims[static_cast<size_t>(i)];
      rest /= parts;
    }
    devices::Tensor tile;
    if (!host.has_data()) {
      tile = devices::Tensor::ShapeOnly(tensor.dtype(), tile_shape, "");
    } else {
      ASSIGN_OR_RETURN(devices::Tensor made,
                       devices::Tensor::Host(tensor.dtype(), tile_shape));
      tile = std::move(made);
      // Copy the tile's innermost rows one by one.
      const int64_t row = rank == 0 ? 1 : tile_dims.back();
      const int64_t rows = row == 0 ? 0 : tile_shape.num_elements() / row;
      const char* src = static_cast<const char*>(host.raw_data());
      char* dst = static_cast<char*>(tile.raw_data());
      std::vector<int64_t> at(static_cast<size_t>(rank), 0);
      for (int64_t r = 0; r < rows; ++r) {
        int64_t offset = 0;
        for (int i = 0; i < rank; ++i) {
          offset +=
              (origin[static_cast<size_t>(i)] + at[static_cast<size_t>(i)]) *
              strides[static_cast<size_t>(i)];
        }
        std::memcpy(dst + static_cast<size_t>(r * row) * element,
                    src + static_cast<size_t>(offset) * element,
                    static_cast<size_t>(row) * element);
        // Next row: odometer over every dimension but the last.
        for (int i = rank - 2; i >= 0; --i) {
          if (++at[static_cast<size_t>(i)] <
              tile_dims[static_cast<size_t>(i)]) {
            break;
          }
          at[static_cast<size_t>(i)] = 0;
        }
      }
    }
    ASSIGN_OR_RETURN(devices::Tensor placed,
                     OnLogicalCore(tile, replica, static_cast<int>(k)));
    out.push_back(std::move(placed));
  }
  return out;
}

}  // namespace distribute
