#include "distribute/mirrored_strategy.h"

#include <optional>
#include <utility>

#include "devices/status_macros.h"
#include "distribute/strategy_devices.h"

namespace distribute {

absl::StatusOr<std::unique_ptr<MirroredStrategy>> MirroredStrategy::Create(
    devices::Platform& platform, std::vector<std::string> devices,
    std::shared_ptr<CrossDeviceOps> cross_device_ops) {
  if (devices.empty()) devices = DefaultDevices(platform);
  ASSIGN_OR_RETURN(std::vector<std::string> resolved,
                   ResolveDevices(platform, devices));
  std::string reason = "given by the user";
  if (cross_device_ops == nullptr) {
    CrossDeviceOpsChoice choice = SelectCrossDeviceOps(platform, resolved);
    cross_device_ops = choice.ops;
    reason = choice.reason;
  }
  RETURN_IF_ERROR(cross_device_ops->Bind(platform, resolved));
  auto strategy = std::unique_ptr<MirroredStrategy>(
      new MirroredStrategy(std::make_unique<StrategyExtended>(
          &platform, resolved, std::nullopt, std::move(cross_device_ops))));
  strategy->reason_ = std::move(reason);
  return strategy;
}

}  // namespace distribute
