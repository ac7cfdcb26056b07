#include "distribute/strategy_devices.h"

#include <map>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/device_name.h"
#include "devices/status_macros.h"

namespace distribute {

absl::StatusOr<std::vector<std::string>> ResolveDevices(
    devices::Platform& platform, const std::vector<std::string>& names) {
  if (names.empty()) {
    return absl::InvalidArgumentError("Must specify at least one device.");
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& n : names) {
    ASSIGN_OR_RETURN(devices::Device * d, platform.FindDevice(n));
    if (!seen.insert(d->name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("No duplicates allowed in `devices` argument: [",
                       absl::StrJoin(names, ", "), "]"));
    }
    out.push_back(d->name());
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

absl::StatusOr<std::vector<TaskDeviceGroup>> DevicesByTask(
    devices::Platform& platform) {
  std::map<int, TaskDeviceGroup> tasks;
  for (const std::string& n : platform.DeviceNames()) {
    ASSIGN_OR_RETURN(devices::Device * d, platform.FindDevice(n));
    ASSIGN_OR_RETURN(devices::DeviceName parsed,
                     devices::DeviceName::Parse(d->name()));
    const int task = parsed.task.value_or(0);
    TaskDeviceGroup& t = tasks[task];
    t.task = task;
    if (d->kind() == devices::DeviceKind::kGPU) {
      t.gpus.push_back(d->name());
    } else if (d->kind() == devices::DeviceKind::kCPU) {
      t.cpus.push_back(d->name());
    }
  }
  std::vector<TaskDeviceGroup> out;
  for (auto& [task, devices] : tasks) out.push_back(std::move(devices));
  return out;
}

std::optional<std::string> LocalCpu(devices::Platform& platform,
                                    const std::string& device) {
  absl::StatusOr<devices::Device*> d = platform.FindDevice(device);
  if (!d.ok()) return std::nullopt;
  absl::StatusOr<devices::DeviceName> mine =
      devices::DeviceName::Parse((*d)->name());
  if (!mine.ok()) return std::nullopt;
  for (const std::string& n : platform.DeviceNames()) {
    absl::StatusOr<devices::Device*> other = platform.FindDevice(n);
    if (!other.ok() || (*other)->kind() != devices::DeviceKind::kCPU) continue;
    absl::StatusOr<devices::DeviceName> theirs =
        devices::DeviceName::Parse((*other)->name());
    if (theirs.ok() && theirs->job == mine->job &&
        theirs->replica == mine->replica && theirs->task == mine->task) {
      return (*other)->name();
    }
  }
  return std::nullopt;
}

}  // namespace distribute
