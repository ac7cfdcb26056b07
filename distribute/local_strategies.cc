#include "distribute/local_strategies.h"

#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/device.h"

namespace distribute {

absl::StatusOr<std::vector<std::string>> ResolveDevices(
    devices::Platform& platform, const std::vector<std::string>& names) {
  if (names.empty()) {
    return absl::InvalidArgumentError("Must specify at least one device.");
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& n : names) {
    absl::StatusOr<devices::Device*> d = platform.FindDevice(n);
    if (!d.ok()) return d.status();
    if (!seen.insert((*d)->name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("No duplicates allowed in `devices` argument: [",
                       absl::StrJoin(names, ", "), "]"));
    }
    out.push_back((*d)->name());
  }
  return out;
}

std::vector<std::string> DevicesOfKind(devices::Platform& platform,
                                       devices::DeviceKind kind) {
  std::vector<std::string> found;
  for (const std::string& n : platform.DeviceNames()) {
    absl::StatusOr<devices::Device*> d = platform.FindDevice(n);
    if (d.ok() && (*d)->kind() == kind) found.push_back(n);
  }
  return found;
}

std::vector<std::string> DefaultDevices(devices::Platform& platform) {
  std::vector<std::string> gpus =
      DevicesOfKind(platform, devices::DeviceKind::kGPU);
  if (!gpus.empty()) return gpus;
  std::vector<std::string> cpus =
      DevicesOfKind(platform, devices::DeviceKind::kCPU);
  if (!cpus.empty()) return {cpus[0]};
  return {platform.DeviceNames().at(0)};
}

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

absl::StatusOr<std::unique_ptr<MirroredStrategy>> MirroredStrategy::Create(
    devices::Platform& platform, std::vector<std::string> devices,
    std::shared_ptr<CrossDeviceOps> cross_device_ops) {
  if (devices.empty()) devices = DefaultDevices(platform);
  absl::StatusOr<std::vector<std::string>> resolved =
      ResolveDevices(platform, devices);
  if (!resolved.ok()) return resolved.status();
  std::string reason = "given by the user";
  if (cross_device_ops == nullptr) {
    CrossDeviceOpsChoice choice = SelectCrossDeviceOps(platform, *resolved);
    cross_device_ops = choice.ops;
    reason = choice.reason;
  }
  absl::Status s = cross_device_ops->Bind(platform, *resolved);
  if (!s.ok()) return s;
  auto strategy = std::unique_ptr<MirroredStrategy>(
      new MirroredStrategy(std::make_unique<StrategyExtended>(
          &platform, *resolved, std::nullopt, std::move(cross_device_ops))));
  strategy->reason_ = std::move(reason);
  return strategy;
}

absl::StatusOr<std::unique_ptr<CentralStorageStrategy>>
CentralStorageStrategy::Create(devices::Platform& platform,
                               std::vector<std::string> compute_devices,
                               std::optional<std::string> parameter_device) {
  if (compute_devices.empty()) compute_devices = DefaultDevices(platform);
  absl::StatusOr<std::vector<std::string>> resolved =
      ResolveDevices(platform, compute_devices);
  if (!resolved.ok()) return resolved.status();
  std::string param;
  if (parameter_device.has_value()) {
    absl::StatusOr<devices::Device*> d = platform.FindDevice(*parameter_device);
    if (!d.ok()) return d.status();
    param = (*d)->name();
  } else if (resolved->size() == 1) {
    param = (*resolved)[0];
  } else {
    for (const std::string& n : platform.DeviceNames()) {
      absl::StatusOr<devices::Device*> d = platform.FindDevice(n);
      if (d.ok() && (*d)->kind() == devices::DeviceKind::kCPU) {
        param = n;
        break;
      }
    }
    if (param.empty()) param = (*resolved)[0];
  }
  auto ops = std::make_shared<ReductionToOneDevice>();
  absl::Status s = ops->Bind(platform, *resolved);
  if (!s.ok()) return s;
  return std::unique_ptr<CentralStorageStrategy>(
      new CentralStorageStrategy(std::make_unique<StrategyExtended>(
          &platform, *resolved, param, std::move(ops))));
}

}  // namespace distribute
