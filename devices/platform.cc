#include "devices/platform.h"

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/device_name.h"
#include "devices/status_macros.h"

namespace devices {

absl::StatusOr<size_t> FindDeviceIndex(
    absl::string_view name, absl::string_view default_job_prefix,
    absl::Span<const std::string> device_names,
    absl::string_view platform_name) {
  ASSIGN_OR_RETURN(std::string canonical,
                   DeviceName::Canonicalize(name, default_job_prefix));
  for (size_t i = 0; i < device_names.size(); ++i) {
    if (device_names[i] == canonical) return i;
  }
  return absl::NotFoundError(absl::StrCat(
      "platform '", platform_name, "' has no device '", name, "' (", canonical,
      "); available devices: ",
      device_names.empty() ? "none" : absl::StrJoin(device_names, ", ")));
}

absl::StatusOr<Tensor> ToHostTensor(Platform& platform, const Tensor& t) {
  if (t.host_accessible() || !t.has_data()) return t;
  ASSIGN_OR_RETURN(Device * device, platform.FindDevice(t.device()));
  ASSIGN_OR_RETURN(Tensor out, Tensor::Host(t.dtype(), t.shape()));
  RETURN_IF_ERROR(device->CopyToHost(t, out.raw_data()));
  return out;
}

absl::Status CopyTensor(Platform& platform, const Tensor& src, Tensor& dst) {
  if (!src.SameShapeAndType(dst)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CopyTensor from ", src.DebugString(), " to ",
                     dst.DebugString(), ": shapes and dtypes must match"));
  }
  auto device_of = [&](const Tensor& t) -> absl::StatusOr<Device*> {
    if (t.device().empty()) return nullptr;  // a host tensor
    return platform.FindDevice(t.device());
  };
  ASSIGN_OR_RETURN(Device * source, device_of(src));
  ASSIGN_OR_RETURN(Device * destination, device_of(dst));
  // Host memory into device memory: only the destination's device can write
  // there (a host device's CopyToDevice cannot).
  if (src.host_accessible() && dst.has_data() && !dst.host_accessible()) {
    if (destination == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("CopyTensor: ", dst.DebugString(),
                       " is in device memory but names no device of platform '",
                       platform.name(), "'"));
    }
    return destination->CopyFromHost(src.raw_data(), dst);
  }
  if (source != nullptr) return source->CopyToDevice(src, dst);
  if (!src.has_data() || !dst.has_data()) return absl::OkStatus();
  if (!src.host_accessible()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CopyTensor: ", src.DebugString(),
                     " is in device memory but names no device of platform '",
                     platform.name(), "'"));
  }
  if (destination != nullptr) {
    return destination->CopyFromHost(src.raw_data(), dst);
  }
  std::memcpy(dst.raw_data(), src.raw_data(), src.bytes());
  return absl::OkStatus();
}

absl::StatusOr<Tensor> CopyTensorTo(Platform& platform, const Tensor& t,
                                    Device& device) {
  ASSIGN_OR_RETURN(Tensor out, device.Allocate(t.dtype(), t.shape()));
  RETURN_IF_ERROR(CopyTensor(platform, t, out));
  return out;
}

absl::StatusOr<Tensor> ReadableOn(Platform& platform, const Tensor& t,
                                  Device& device) {
  const bool own_memory =
      device.allocator().memory_space() == MemorySpace::kDevice;
  if (t.device() == device.name() || !t.has_data() ||
      (t.host_accessible() && !own_memory)) {
    return t;
  }
  return CopyTensorTo(platform, t, device);
}

absl::StatusOr<Tensor> AsDeviceValue(const Tensor& t, Device& device) {
  if (t.device() == device.name()) return t;
  if (!t.has_data())
    return Tensor::ShapeOnly(t.dtype(), t.shape(), device.name());
  ASSIGN_OR_RETURN(Tensor local, device.Allocate(t.dtype(), t.shape()));
  if (t.bytes() == 0) return local;
  if (local.host_accessible() && t.host_accessible()) {
    std::memcpy(local.raw_data(), t.raw_data(), t.bytes());
    return local;
  }
  if (!t.host_accessible()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AsDeviceValue: ", t.DebugString(),
        " is in another device's memory; copy it with CopyTensorTo"));
  }
  RETURN_IF_ERROR(device.CopyFromHost(t.raw_data(), local));
  return local;
}

}  // namespace devices
