// MirroredStrategy: TF's tf.distribute.MirroredStrategy, a replica per
// device of one machine (any platform: host, cuda, sim:<topology>), with
// mirrored variables kept in sync by all-reduce.
//
//   auto mirrored = MirroredStrategy::Create(platform);  // all GPUs
//   auto two = MirroredStrategy::Create(platform, {"/gpu:0", "/gpu:1"});
//
// Devices are resolved through the platform (strategy_devices.h): a name
// the platform lacks is NOT_FOUND listing the devices it has; duplicates
// and empty lists are INVALID_ARGUMENT, with TF's messages.
#ifndef DISTRIBUTE_MIRRORED_STRATEGY_H_
#define DISTRIBUTE_MIRRORED_STRATEGY_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/platform.h"
#include "distribute/cross_device_ops.h"
#include "distribute/strategy.h"

namespace distribute {

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

}  // namespace distribute

#endif  // DISTRIBUTE_MIRRORED_STRATEGY_H_
