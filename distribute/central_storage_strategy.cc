#include "distribute/central_storage_strategy.h"

#include <utility>

#include "devices/device.h"
#include "devices/status_macros.h"
#include "distribute/cross_device_ops.h"
#include "distribute/strategy_devices.h"

namespace distribute {

absl::StatusOr<std::unique_ptr<CentralStorageStrategy>>
CentralStorageStrategy::Create(devices::Platform& platform,
                               std::vector<std::string> compute_devices,
                               std::optional<std::string> parameter_device) {
  if (compute_devices.empty()) compute_devices = DefaultDevices(platform);
  ASSIGN_OR_RETURN(std::vector<std::string> resolved,
                   ResolveDevices(platform, compute_devices));
  std::string param;
  if (parameter_device.has_value()) {
    ASSIGN_OR_RETURN(devices::Device * d,
                     platform.FindDevice(*parameter_device));
    param = d->name();
  } else if (resolved.size() == 1) {
    param = resolved[0];
  } else {
    for (const std::string& n : platform.DeviceNames()) {
      absl::StatusOr<devices::Device*> d = platform.FindDevice(n);
      if (d.ok() && (*d)->kind() == devices::DeviceKind::kCPU) {
        param = n;
        break;
      }
    }
    if (param.empty()) param = resolved[0];
  }
  // TF reduces on the local CPU (ReductionToOneDevice with
  // reduce_to_device the CPU), where there is one.
  auto ops = std::make_shared<ReductionToOneDevice>(
      LocalCpu(platform, resolved[0]).value_or(""));
  RETURN_IF_ERROR(ops->Bind(platform, resolved));
  return std::unique_ptr<CentralStorageStrategy>(
      new CentralStorageStrategy(std::make_unique<StrategyExtended>(
          &platform, resolved, param, std::move(ops))));
}

}  // namespace distribute
