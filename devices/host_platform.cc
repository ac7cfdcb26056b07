#include "devices/host_platform.h"

#include <utility>

#include "absl/base/call_once.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "devices/device_name.h"
#include "devices/platform_registry.h"
#include "devices/status_macros.h"

namespace devices {

absl::StatusOr<std::unique_ptr<HostPlatform>> HostPlatform::Create(
    HostPlatformOptions options) {
  if (options.num_devices < 1 || options.num_devices > kMaxHostDevices) {
    return absl::InvalidArgumentError(
        absl::StrCat("the host platform needs between 1 and ", kMaxHostDevices,
                     " devices, not ", options.num_devices));
  }
  if (options.memory_capacity < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("host device memory capacity must be >= 0, not ",
                     options.memory_capacity));
  }
  ASSIGN_OR_RETURN(DeviceName prefix, DeviceName::Parse(options.job_prefix));
  if (prefix.type.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("host platform job prefix '", options.job_prefix,
                     "' must name only job, replica and task, not a device"));
  }
  return std::unique_ptr<HostPlatform>(new HostPlatform(std::move(options)));
}

absl::StatusOr<HostPlatformOptions> HostPlatform::ParseSpec(
    absl::string_view spec) {
  HostPlatformOptions options;
  if (spec == "host") return options;
  constexpr absl::string_view kPrefix = "host:";
  int count = 0;
  if (spec.substr(0, kPrefix.size()) != kPrefix ||
      !absl::SimpleAtoi(spec.substr(kPrefix.size()), &count) || count < 1 ||
      count > kMaxHostDevices) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad host platform spec '", spec,
                     "'; use 'host' or 'host:N' with N "
                     "devices, 1 <= N <= ",
                     kMaxHostDevices));
  }
  options.num_devices = count;
  return options;
}

HostPlatform::HostPlatform(HostPlatformOptions options)
    : options_(std::move(options)) {
  for (int i = 0; i < options_.num_devices; ++i) {
    // Canonicalize fills in what the prefix leaves out (replica, task).
    std::string full = *DeviceName::Canonicalize(
        absl::StrCat("/device:CPU:", i), options_.job_prefix);
    devices_.push_back(
        std::make_unique<HostDevice>(full, options_.memory_capacity));
    names_.push_back(std::move(full));
  }
}

absl::StatusOr<Device*> HostPlatform::FindDevice(absl::string_view name) {
  ASSIGN_OR_RETURN(size_t index,
                   FindDeviceIndex(name, options_.job_prefix, names_, name_));
  return devices_[index].get();
}

absl::StatusOr<std::vector<std::unique_ptr<Transport>>>
HostPlatform::CreateTransportGroup(
    const std::vector<std::string>& device_names) {
  if (device_names.empty()) {
    return absl::InvalidArgumentError(
        "CreateTransportGroup needs at least one device name");
  }
  std::vector<std::string> full_names;
  std::vector<bool> used(names_.size(), false);
  for (const std::string& name : device_names) {
    ASSIGN_OR_RETURN(size_t index,
                     FindDeviceIndex(name, options_.job_prefix, names_, name_));
    if (used[index]) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", names_[index],
                       " appears more than once in the "
                       "transport group; each rank needs its own device"));
    }
    used[index] = true;
    full_names.push_back(names_[index]);
  }
  return CreateHostTransportGroup(std::move(full_names), options_.transport);
}

absl::StatusOr<std::unique_ptr<Communicator>> HostPlatform::CreateCommunicator(
    const std::vector<std::string>& /*device_names*/) {
  return absl::UnimplementedError(
      "the host platform has no Communicator (no native collective library); "
      "run collective algorithms over CreateTransportGroup instead");
}

void RegisterHostPlatform() {
  static absl::once_flag once;
  absl::call_once(once, [] {
    // The only other registrant of "host" would be a second copy of this
    // function, so the status can only be OK or ALREADY_EXISTS.
    absl::Status registered = RegisterPlatformFactory(
        "host",
        [](absl::string_view spec)
            -> absl::StatusOr<std::unique_ptr<Platform>> {
          ASSIGN_OR_RETURN(HostPlatformOptions options,
                           HostPlatform::ParseSpec(spec));
          ASSIGN_OR_RETURN(std::unique_ptr<HostPlatform> platform,
                           HostPlatform::Create(std::move(options)));
          return std::unique_ptr<Platform>(std::move(platform));
        });
    (void)registered;
  });
}

}  // namespace devices
