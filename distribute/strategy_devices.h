// Which devices a strategy runs on: names resolved through the platform
// (short forms such as "/gpu:1" or "GPU:1" are accepted and kept in their
// canonical form) and TF's default devices.
#ifndef DISTRIBUTE_STRATEGY_DEVICES_H_
#define DISTRIBUTE_STRATEGY_DEVICES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/device.h"
#include "devices/platform.h"

namespace distribute {

// Canonical names of `names` on the platform; INVALID_ARGUMENT on an empty
// list or duplicates (TF's messages); NOT_FOUND for an unknown device,
// listing the devices the platform has.
absl::StatusOr<std::vector<std::string>> ResolveDevices(
    devices::Platform& platform, const std::vector<std::string>& names);
// All GPUs of the platform, else its first CPU (TF's default devices).
std::vector<std::string> DefaultDevices(devices::Platform& platform);
// The platform's devices of `kind`, in its order.
std::vector<std::string> DevicesOfKind(devices::Platform& platform,
                                       devices::DeviceKind kind);

// The first CPU of the platform in the same task (host) as `device`, as
// TF's "/device:CPU:0" seen from that task; nullopt when the task has none
// or `device` is unknown.
std::optional<std::string> LocalCpu(devices::Platform& platform,
                                    const std::string& device);

// The devices of one task (one host of a multi-host platform).
struct TaskDeviceGroup {
  int task = 0;
  std::vector<std::string> gpus;
  std::vector<std::string> cpus;
};
// The platform's devices grouped by the task their names give (no task:
// task 0), in task order and the platform's order within a task.
// INVALID_ARGUMENT for a device name that does not parse.
absl::StatusOr<std::vector<TaskDeviceGroup>> DevicesByTask(
    devices::Platform& platform);

}  // namespace distribute

#endif  // DISTRIBUTE_STRATEGY_DEVICES_H_
