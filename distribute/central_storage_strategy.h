// CentralStorageStrategy: TF's tf.distribute.experimental.
// CentralStorageStrategy, a replica per compute device with variables kept
// once, on a parameter device.
//
//   auto central =
//       CentralStorageStrategy::Create(platform, {"/gpu:0", "/gpu:1"});
//
// Devices are resolved through the platform (strategy_devices.h).
#ifndef DISTRIBUTE_CENTRAL_STORAGE_STRATEGY_H_
#define DISTRIBUTE_CENTRAL_STORAGE_STRATEGY_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/platform.h"
#include "distribute/strategy.h"

namespace distribute {

class CentralStorageStrategy : public Strategy {
 public:
  // compute_devices empty: DefaultDevices(). parameter_device unset: the
  // compute device when there is one, else the platform's first CPU (else
  // the first compute device). Reductions run on the CPU of the first
  // compute device's host, as TF's (ReductionToOneDevice to the local CPU),
  // or on the first compute device where that host has no CPU.
  static absl::StatusOr<std::unique_ptr<CentralStorageStrategy>> Create(
      devices::Platform& platform,
      std::vector<std::string> compute_devices = {},
      std::optional<std::string> parameter_device = std::nullopt);
  std::string name() const override { return "CentralStorageStrategy"; }

 private:
  using Strategy::Strategy;
};

}  // namespace distribute

#endif  // DISTRIBUTE_CENTRAL_STORAGE_STRATEGY_H_
