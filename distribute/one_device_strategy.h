// OneDeviceStrategy: TF's tf.distribute.OneDeviceStrategy, one replica on
// one device of any platform (host, cuda, sim:<topology>).
//
//   auto one = OneDeviceStrategy::Create(platform, "/gpu:0");
//
// The device is resolved through the platform (strategy_devices.h).
#ifndef DISTRIBUTE_ONE_DEVICE_STRATEGY_H_
#define DISTRIBUTE_ONE_DEVICE_STRATEGY_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "devices/platform.h"
#include "distribute/strategy.h"

namespace distribute {

class OneDeviceStrategy : public Strategy {
 public:
  static absl::StatusOr<std::unique_ptr<OneDeviceStrategy>> Create(
      devices::Platform& platform, const std::string& device);
  std::string name() const override { return "OneDeviceStrategy"; }

 private:
  using Strategy::Strategy;
};

}  // namespace distribute

#endif  // DISTRIBUTE_ONE_DEVICE_STRATEGY_H_
