// The single-machine strategies: OneDeviceStrategy, MirroredStrategy and
// CentralStorageStrategy, on any platform (host, cuda, sim:<topology>).
//
//   devices::Platform& platform = ...;            // e.g. sim:dgx_h100
//   auto mirrored = MirroredStrategy::Create(platform);  // all GPUs
//   auto one = OneDeviceStrategy::Create(platform, "/gpu:0");
//   auto central = CentralStorageStrategy::Create(platform, {"/gpu:0",
//   "/gpu:1"});
//
// Device names are resolved through the platform (short forms such as
// "/gpu:1" or "GPU:1" are accepted) and kept in their canonical form; a name
// the platform lacks is NOT_FOUND listing the devices it has; duplicates and
// empty lists are INVALID_ARGUMENT, with TF's messages.
#ifndef DISTRIBUTE_LOCAL_STRATEGIES_H_
#define DISTRIBUTE_LOCAL_STRATEGIES_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/device.h"
#include "devices/platform.h"
#include "distribute/cross_device_ops.h"
#include "distribute/strategy.h"

namespace distribute {

// Canonical names of `names` on the platform; INVALID_ARGUMENT on an empty
// list or duplicates; NOT_FOUND for an unknown device.
absl::StatusOr<std::vector<std::string>> ResolveDevices(
    devices::Platform& platform, const std::vector<std::string>& names);
// All GPUs of the platform, else its first CPU (TF's default devices).
std::vector<std::string> DefaultDevices(devices::Platform& platform);
// The platform's devices of `kind`, in its order.
std::vector<std::string> DevicesOfKind(devices::Platform& platform,
                                       devices::DeviceKind kind);

class OneDeviceStrategy : public Strategy {
 public:
  static absl::StatusOr<std::unique_ptr<OneDeviceStrategy>> Create(
      devices::Platform& platform, const std::string& device);
  std::string name() const override { return "OneDeviceStrategy"; }

 private:
  using Strategy::Strategy;
};

class MirroredStrategy : public Strategy {
 public:
  // devices empty: DefaultDevices(). cross_device_ops null: chosen by
  // SelectCrossDeviceOps (the reason is kept in cross_device_ops_reason()).
  static absl::StatusOr<std::unique_ptr<MirroredStrategy>> Create(
      devices::Platform& platform, std::vector<std::string> devices = {},
      std::shared_ptr<CrossDeviceOps> cross_device_ops = nullptr);
  std::string name() const override { return "MirroredStrategy"; }
  const std::string& cross_device_ops_reason() const { return reason_; }

 private:
  using Strategy::Strategy;
  std::string reason_;
};

class CentralStorageStrategy : public Strategy {
 public:
  // compute_devices empty: DefaultDevices(). parameter_device unset: the
  // compute device when there is one, else the platform's first CPU (else
  // the first compute device).
  static absl::StatusOr<std::unique_ptr<CentralStorageStrategy>> Create(
      devices::Platform& platform,
      std::vector<std::string> compute_devices = {},
      std::optional<std::string> parameter_device = std::nullopt);
  std::string name() const override { return "CentralStorageStrategy"; }

 private:
  using Strategy::Strategy;
};

}  // namespace distribute

#endif  // DISTRIBUTE_LOCAL_STRATEGIES_H_
