#include "devices/platform.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/device_name.h"

namespace devices {

absl::StatusOr<size_t> FindDeviceIndex(
    absl::string_view name, absl::string_view default_job_prefix,
    absl::Span<const std::string> device_names,
    absl::string_view platform_name) {
  absl::StatusOr<std::string> canonical =
      DeviceName::Canonicalize(name, default_job_prefix);
  if (!canonical.ok()) return canonical.status();
  for (size_t i = 0; i < device_names.size(); ++i) {
    if (device_names[i] == *canonical) return i;
  }
  return absl::NotFoundError(absl::StrCat(
      "platform '", platform_name, "' has no device '", name, "' (", *canonical,
      "); available devices: ",
      device_names.empty() ? "none" : absl::StrJoin(device_names, ", ")));
}

absl::StatusOr<Tensor> ToHostTensor(Platform& platform, const Tensor& t) {
  if (t.host_accessible() || !t.has_data()) return t;
  absl::StatusOr<Device*> device = platform.FindDevice(t.device());
  if (!device.ok()) return device.status();
  absl::StatusOr<Tensor> out = Tensor::Host(t.dtype(), t.shape());
  if (!out.ok()) return out.status();
  absl::Status s = (*device)->CopyToHost(t, out->raw_data());
  if (!s.ok()) return s;
  return out;
}

}  // namespace devices
