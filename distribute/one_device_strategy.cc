#include "distribute/one_device_strategy.h"

#include <optional>
#include <utility>

#include "devices/status_macros.h"
#include "distribute/cross_device_ops.h"
#include "distribute/strategy_devices.h"

namespace distribute {

absl::StatusOr<std::unique_ptr<OneDeviceStrategy>> OneDeviceStrategy::Create(
    devices::Platform& platform, const std::string& device) {
  ASSIGN_OR_RETURN(std::vector<std::string> resolved,
                   ResolveDevices(platform, {device}));
  auto ops = std::make_shared<ReductionToOneDevice>();
  RETURN_IF_ERROR(ops->Bind(platform, resolved));
  return std::unique_ptr<OneDeviceStrategy>(
      new OneDeviceStrategy(std::make_unique<StrategyExtended>(
          &platform, resolved, std::nullopt, std::move(ops))));
}

}  // namespace distribute
