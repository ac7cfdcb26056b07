// Platform: a set of devices and the means to connect them: the host CPU
// platform, the CUDA platform and the simulator's platform implement it. A
// program picks a platform (see platform_registry.h); strategies resolve
// device names through it and never learn which one it is.
//
// Example:
//   absl::StatusOr<std::unique_ptr<devices::Platform>> platform =
//       devices::CreatePlatform("host:2");
//   absl::StatusOr<devices::Device*> cpu1 = (*platform)->FindDevice("/cpu:1");
//   auto transports =
//   (*platform)->CreateTransportGroup((*platform)->DeviceNames());
#ifndef DEVICES_PLATFORM_H_
#define DEVICES_PLATFORM_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "devices/communicator.h"
#include "devices/device.h"
#include "devices/tpu_topology.h"
#include "devices/transport.h"

namespace devices {

class Platform {
 public:
  virtual ~Platform() = default;

  // The platform's name, e.g. "host", "cuda", "sim:dgx_h100".
  virtual const std::string& name() const = 0;

  // The full names of all devices, in a fixed order.
  virtual std::vector<std::string> DeviceNames() const = 0;

  // The device named `name`, in full or short form ("/gpu:1", "GPU:1",
  // "/job:worker/task:1/device:GPU:0"), canonicalized against the
  // platform's default job (see DeviceName::Canonicalize). The device lives
  // as long as the platform. INVALID_ARGUMENT if the name does not parse,
  // NOT_FOUND listing the available devices if no device has that name.
  // Thread-safe.
  virtual absl::StatusOr<Device*> FindDevice(absl::string_view name) = 0;

  // One Transport endpoint per rank for a group over `device_names` (any
  // form FindDevice accepts), rank i being device_names[i]. Endpoints may be
  // used from different threads and may outlive the platform.
  // INVALID_ARGUMENT for an empty list or a device named twice, NOT_FOUND
  // for an unknown device.
  virtual absl::StatusOr<std::vector<std::unique_ptr<Transport>>>
  CreateTransportGroup(const std::vector<std::string>& device_names) = 0;

  // A Communicator over `device_names` (rank i = device_names[i]), for
  // platforms with a native collective library. UNIMPLEMENTED naming the
  // platform where there is none; FAILED_PRECONDITION naming a device the
  // library does not span (a CPU in an NCCL group); otherwise the errors of
  // CreateTransportGroup.
  virtual absl::StatusOr<std::unique_ptr<Communicator>> CreateCommunicator(
      const std::vector<std::string>& device_names) = 0;

  // The layout of the platform's TPU system (TF's initialize_tpu_system
  // gives it): where each TPU device sits in the mesh of chips.
  // UNIMPLEMENTED naming the platform where it has no TPUs.
  virtual absl::StatusOr<TpuTopology> GetTpuTopology() const {
    return absl::UnimplementedError(absl::StrCat(
        "platform ", name(),
        " has no TPU system (e.g. sim:tpu_v4:2x2x1 or sim:tpu_v5e:4x4 has)"));
  }
};

// For Platform implementations: canonicalizes `name` against
// `default_job_prefix` and returns its index in `device_names` (which hold
// canonical full names). INVALID_ARGUMENT if the name does not parse,
// NOT_FOUND naming `platform_name` and listing `device_names` if it is not
// among them.
absl::StatusOr<size_t> FindDeviceIndex(
    absl::string_view name, absl::string_view default_job_prefix,
    absl::Span<const std::string> device_names,
    absl::string_view platform_name);

// A tensor host code may read: `t` itself when its memory is host-visible
// (or it has no data), else a host copy made by its device (found on
// `platform`). NOT_FOUND for a device the platform lacks; the device's copy
// errors.
absl::StatusOr<Tensor> ToHostTensor(Platform& platform, const Tensor& t);

// Copies `src` into `dst` (same dtype and shape), each on a device of
// `platform` or on the host (device() ""), whatever memory either lives in:
// the source's device copies out of device memory (to the host, itself or a
// peer), the destination's device copies host memory into its own, and host
// memory to host memory is the source device's copy (or a plain one for two
// host tensors). Timing-only tensors (no data) charge the copy where a device
// does it and move nothing. Returns when the copy is done; the errors of the
// devices' Copy*() and FindDevice.
absl::Status CopyTensor(Platform& platform, const Tensor& src, Tensor& dst);

// A new tensor on `device` holding `t` (CopyTensor into a fresh allocation).
absl::StatusOr<Tensor> CopyTensorTo(Platform& platform, const Tensor& t,
                                    Device& device);

// `t` where `device`'s kernels can read it: `t` itself when it is on the
// device, has no data, or is in host memory and the device computes on host
// memory; otherwise a copy on `device` (either memory is a device's own, a
// GPU's, which the other's kernels cannot read).
absl::StatusOr<Tensor> ReadableOn(Platform& platform, const Tensor& t,
                                  Device& device);

// `t` labelled as `device`'s own, for a value host code made for that
// device (a replica's packed or computed value): `t` itself when it is on
// the device; a shape-only tensor of the device when `t` has no data;
// otherwise a fresh tensor of the device holding t's bytes, copied by a
// plain memcpy where both memories are host-visible (no simulated charge:
// the bytes are taken to be the device's already) or by the device's
// CopyFromHost. Moving the result elsewhere (CopyTensorTo) is then charged
// from `device`.
absl::StatusOr<Tensor> AsDeviceValue(const Tensor& t, Device& device);

}  // namespace devices

#endif  // DEVICES_PLATFORM_H_
