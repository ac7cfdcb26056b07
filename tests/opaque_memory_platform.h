// A test platform whose devices' memory the program must treat as device
// memory, as on a GPU: tensors are not host_accessible() (their allocator
// says MemorySpace::kDevice) although the bytes live in host RAM, each
// stored XOR-ed with a mask, so that host code which reads or reduces device
// memory through its pointer (as it could not on a GPU) gets wrong values
// and fails its test; transports and device-to-device copies move the stored
// bytes unchanged, as peer copies do. Its devices copy with Copy*() and compute
// with their own KernelLibrary, which refuses tensors that are not on its
// device (as the CUDA library does) and runs the host kernels on staged host
// copies, so results equal the host platform's bit for bit. It lets the
// strategies' device-memory paths (model ops on the device's kernels, variable
// updates, reductions, gathers) run where there is no GPU. Tests only.
//
// Example:
//   auto platform = *distsim_testing::OpaqueMemoryPlatform::Create(2);
//   auto strategy = *distribute::MirroredStrategy::Create(
//       *platform, {"/cpu:0", "/cpu:1"});
#ifndef TESTS_OPAQUE_MEMORY_PLATFORM_H_
#define TESTS_OPAQUE_MEMORY_PLATFORM_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "devices/host_platform.h"
#include "devices/platform.h"

namespace distsim_testing {

class OpaqueMemoryDevice;

class OpaqueMemoryPlatform : public devices::Platform {
 public:
  // num_devices CPU devices named as the host platform's ("/cpu:0", ...);
  // the last num_host_memory_devices of them are the host platform's own
  // devices (host memory), as the CPUs beside a machine's GPUs.
  // `job_prefix` as HostPlatformOptions::job_prefix (say
  // "/job:worker/replica:0/task:1" for a task of a multi-worker cluster);
  // nullopt: the host platform's default.
  static absl::StatusOr<std::unique_ptr<OpaqueMemoryPlatform>> Create(
      int num_devices, int num_host_memory_devices = 0,
      std::optional<std::string> job_prefix = std::nullopt);
  ~OpaqueMemoryPlatform() override;
  OpaqueMemoryPlatform(const OpaqueMemoryPlatform&) = delete;
  OpaqueMemoryPlatform& operator=(const OpaqueMemoryPlatform&) = delete;

  const std::string& name() const override { return name_; }
  // How many copies into, out of or between the devices' opaque memory
  // (CopyFromHost, CopyToHost, CopyToDevice) they have made.
  int64_t copies() const;
  std::vector<std::string> DeviceNames() const override;
  absl::StatusOr<devices::Device*> FindDevice(absl::string_view name) override;
  // The host platform's shared-memory transports (they move bytes through
  // pointers, which works on this memory).
  absl::StatusOr<std::vector<std::unique_ptr<devices::Transport>>>
  CreateTransportGroup(const std::vector<std::string>& device_names) override;
  // UNIMPLEMENTED: no native collective library.
  absl::StatusOr<std::unique_ptr<devices::Communicator>> CreateCommunicator(
      const std::vector<std::string>& device_names) override;

 private:
  explicit OpaqueMemoryPlatform(std::unique_ptr<devices::HostPlatform> host);

  const std::string name_ = "opaque";
  std::unique_ptr<devices::HostPlatform> host_;
  std::vector<std::unique_ptr<OpaqueMemoryDevice>> devices_;
};

}  // namespace distsim_testing

#endif  // TESTS_OPAQUE_MEMORY_PLATFORM_H_
