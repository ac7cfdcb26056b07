#include "distribute/one_device_strategy.h"

#include <optional>
#include <utility>

#include "distribute/cross_device_ops.h"
#include "distribute/strategy_devices.h"

namespace distribute {

absl::StatusOr<std::unique_ptr<OneDeviceStrategy>> OneDeviceStrategy::Create(
    devices::Platform& platform, const std::string& device) {
  absl::StatusOr<std::vector<std::string>> resolved =
      ResolveDevices(platform, {device});
  if (!resolved.ok()) return resolved.status();
  auto ops = std::make_shared<ReductionToOneDevice>();
  absl::Status s = ops->Bind(platform, *resolved);
  if (!s.ok()) return s;
  return std::unique_ptr<OneDeviceStrategy>(
      new OneDeviceStrategy(std::make_unique<StrategyExtended>(
          &platform, *resolved, std::nullopt, std::move(ops))));
}

}  // namespace distribute
