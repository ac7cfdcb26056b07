// TPUStrategy, as tf.distribute.TPUStrategy: synchronous training on the TPU
// cores of a platform's TPU system (on this project's platforms, a simulated
// TPU slice such as sim:tpu_v4:4x4x4), one replica per block of cores of a
// DeviceAssignment. Each replica runs on its logical core 0; its other
// logical cores take tensors through AssignToLogicalDevice,
// ReplicateToLogicalDevices and SplitToLogicalDevices (TF's
// experimental_*_logical_device(s)), which here move the data there, since
// there is no compiler to take them as sharding hints.
//
// Example:
//   auto platform = simulator::SimPlatform::FromSpec("sim:tpu_v4:2x2x1");
//   distribute::tpu::DeviceAssignment::BuildOptions build;
//   build.computation_shape = {1, 1, 1, 2};   // a chip per replica
//   build.num_replicas = 4;
//   distribute::TPUStrategy::Options options;
//   options.device_assignment = *distribute::tpu::DeviceAssignment::Build(
//       *(*platform)->GetTpuTopology(), build);
//   auto strategy = *distribute::TPUStrategy::Create(**platform, options);
//   strategy->Run([&](distribute::ReplicaContext& ctx, const auto& args)
//                     -> absl::StatusOr<std::vector<devices::Tensor>> {
//     absl::StatusOr<devices::Tensor> on_core_1 =
//         strategy->AssignToLogicalDevice(args[0], 1);
//     ...
//   }, {batch});
#ifndef DISTRIBUTE_TPU_TPU_STRATEGY_H_
#define DISTRIBUTE_TPU_TPU_STRATEGY_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devices/platform.h"
#include "devices/tensor.h"
#include "distribute/cross_device_ops.h"
#include "distribute/strategy.h"
#include "distribute/tpu/device_assignment.h"

namespace distribute {

class TPUStrategy : public Strategy {
 public:
  struct Options {
    // Unset: every TPU core is a replica of one core, in the platform's
    // device order (TF's default).
    std::optional<tpu::DeviceAssignment> device_assignment;
    // Unset: CollectiveAllReduce (AUTO) over the replicas' logical cores 0
    // in replica order, so that a ring-ordered assignment gives a ring of
    // neighbouring chips.
    std::shared_ptr<CrossDeviceOps> cross_device_ops;
  };

  // FAILED_PRECONDITION when the platform has no TPU system; NOT_FOUND when
  // the assignment names a core the platform lacks (an assignment built for
  // another slice).
  static absl::StatusOr<std::unique_ptr<TPUStrategy>> Create(
      devices::Platform& platform, Options options = {});

  std::string name() const override { return "TPUStrategy"; }

  const tpu::DeviceAssignment& device_assignment() const { return assignment_; }
  int num_cores_per_replica() const {
    return assignment_.num_cores_per_replica();
  }
  // The device of `logical_core` of `replica`; INVALID_ARGUMENT out of
  // range.
  absl::StatusOr<std::string> LogicalDevice(int replica,
                                            int logical_core) const;

  // Inside this strategy's Run: `tensor` on the calling replica's
  // `logical_core` (itself when it is there already, else a copy).
  // FAILED_PRECONDITION outside this strategy's Run; INVALID_ARGUMENT for a
  // logical core out of range.
  absl::StatusOr<devices::Tensor> AssignToLogicalDevice(
      const devices::Tensor& tensor, int logical_core) const;
  // Inside Run: `tensor` on every logical core of the calling replica, in
  // logical-core order.
  absl::StatusOr<std::vector<devices::Tensor>> ReplicateToLogicalDevices(
      const devices::Tensor& tensor) const;
  // Inside Run: `tensor` cut into a grid of tiles, partition_dimensions[i]
  // along dimension i, tile k (row-major in the grid) on logical core k.
  // The counts multiply to num_cores_per_replica() (as TF) and, here, each
  // divides its dimension. INVALID_ARGUMENT otherwise, or for a count per
  // dimension missing or below 1.
  absl::StatusOr<std::vector<devices::Tensor>> SplitToLogicalDevices(
      const devices::Tensor& tensor,
      const std::vector<int64_t>& partition_dimensions) const;

 private:
  TPUStrategy(std::unique_ptr<StrategyExtended> extended,
              tpu::DeviceAssignment assignment)
      : Strategy(std::move(extended)), assignment_(std::move(assignment)) {}

  // The calling replica of this strategy's Run, or FAILED_PRECONDITION
  // naming `what`.
  absl::StatusOr<int> CurrentReplica(absl::string_view what) const;
  // `tensor` on logical core `logical_core` of `replica`.
  absl::StatusOr<devices::Tensor> OnLogicalCore(const devices::Tensor& tensor,
                                                int replica,
                                                int logical_core) const;

  const tpu::DeviceAssignment assignment_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_TPU_TPU_STRATEGY_H_
