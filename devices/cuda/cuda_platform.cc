#include "devices/cuda/cuda_platform.h"

#include <cuda_runtime.h>

#include <utility>

#include "absl/base/call_once.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "devices/cuda/cuda_kernel_library.h"
#include "devices/cuda/cuda_kernels.h"
#include "devices/cuda/cuda_status.h"
#include "devices/cuda/cuda_transport.h"
#include "devices/cuda/nccl_communicator.h"
#include "devices/device_name.h"
#include "devices/platform_registry.h"
#include "devices/status_macros.h"

namespace devices {
namespace cuda {
namespace {

// Enables peer access from every GPU to every other that supports it.
absl::Status EnablePeerAccess(
    const std::vector<std::unique_ptr<CudaDevice>>& gpus) {
  for (const auto& from : gpus) {
    ScopedCudaDevice on_device(from->ordinal());
    RETURN_IF_ERROR(on_device.status());
    for (const auto& to : gpus) {
      if (to->ordinal() == from->ordinal()) continue;
      int can_access = 0;
      RETURN_IF_ERROR(CudaStatus(
          cudaDeviceCanAccessPeer(&can_access, from->ordinal(), to->ordinal()),
          "cudaDeviceCanAccessPeer"));
      if (can_access == 0) continue;
      const cudaError_t error = cudaDeviceEnablePeerAccess(to->ordinal(), 0);
      if (error == cudaErrorPeerAccessAlreadyEnabled ||
          error == cudaErrorTooManyPeers) {
        // Not an error here; clear it. A GPU may map at most 8 peers (more
        // GPUs without NVSwitch): copies to the rest stage through the
        // driver, as cudaMemcpyPeerAsync does without peer access.
        cudaGetLastError();
        continue;
      }
      RETURN_IF_ERROR(
          CudaStatus(error, absl::StrCat("cudaDeviceEnablePeerAccess from ",
                                         from->name(), " to ", to->name())));
    }
  }
  return absl::OkStatus();
}

// FAILED_PRECONDITION, naming the GPU's compute capability, when the build
// has no kernel image that `gpu` can run: every op would fail to launch.
absl::Status CheckKernelImage(const CudaDevice& gpu) {
  ScopedCudaDevice on_device(gpu.ordinal());
  RETURN_IF_ERROR(on_device.status());
  const cudaError_t probe = ProbeKernelImage();
  if (probe != cudaErrorNoKernelImageForDevice &&
      probe != cudaErrorInvalidDeviceFunction) {
    return CudaStatus(probe,
                      absl::StrCat("loading the CUDA kernels on ", gpu.name()));
  }
  cudaGetLastError();  // Reported below; not the next launch's error.
  const int major = gpu.compute_capability().major;
  const int minor = gpu.compute_capability().minor;
  return absl::FailedPreconditionError(absl::StrCat(
      gpu.name(), " has compute capability ", major, ".", minor,
      ", which this build's CUDA kernels do not cover (",
      cudaGetErrorName(probe), "); add -gencode=arch=compute_", major, minor,
      ",code=sm_", major, minor,
      " to the nvcc flags in third_party/cuda/cuda.bzl and rebuild, or hide "
      "the GPU with CUDA_VISIBLE_DEVICES"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CudaPlatform>> CudaPlatform::Create(
    CudaPlatformOptions options) {
  if (options.num_gpus == 0 || options.num_gpus < -1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the CUDA platform needs num_gpus >= 1 (or -1 for all), not ",
        options.num_gpus));
  }
  if (options.gpu_memory_limit < 0 || options.host_memory_capacity < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory sizes must be >= 0, got gpu_memory_limit ",
                     options.gpu_memory_limit, " and host_memory_capacity ",
                     options.host_memory_capacity));
  }
  ASSIGN_OR_RETURN(DeviceName prefix, DeviceName::Parse(options.job_prefix));
  if (prefix.type.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA platform job prefix '", options.job_prefix,
                     "' must name only job, replica and task, not a device"));
  }
  ASSIGN_OR_RETURN(int count, CudaDeviceCount());
  if (options.num_gpus > count) {
    return absl::FailedPreconditionError(
        absl::StrCat("the CUDA platform was asked for ", options.num_gpus,
                     " GPUs but this process sees ", count,
                     " (check CUDA_VISIBLE_DEVICES)"));
  }
  const int num_gpus = options.num_gpus == -1 ? count : options.num_gpus;
  std::unique_ptr<CudaPlatform> platform(new CudaPlatform(std::move(options)));
  const CudaPlatformOptions& o = platform->options_;
  for (int i = 0; i < num_gpus; ++i) {
    std::string full = *DeviceName::Canonicalize(
        absl::StrCat("/device:GPU:", i), o.job_prefix);
    CudaDeviceOptions device_options;
    device_options.memory_limit = o.gpu_memory_limit;
    device_options.make_kernels = MakeCudaKernelLibrary;
    ASSIGN_OR_RETURN(std::unique_ptr<CudaDevice> gpu,
                     CudaDevice::Create(full, i, device_options));
    RETURN_IF_ERROR(CheckKernelImage(*gpu));
    platform->gpus_.push_back(std::move(gpu));
    platform->names_.push_back(std::move(full));
  }
  RETURN_IF_ERROR(EnablePeerAccess(platform->gpus_));
  if (o.include_host_cpu) {
    std::string full = *DeviceName::Canonicalize("/device:CPU:0", o.job_prefix);
    platform->cpu_ = std::make_unique<HostDevice>(full, o.host_memory_capacity);
    platform->names_.push_back(std::move(full));
  }
  return platform;
}

absl::StatusOr<CudaPlatformOptions> CudaPlatform::ParseSpec(
    absl::string_view spec) {
  CudaPlatformOptions options;
  if (spec == "cuda") return options;
  constexpr absl::string_view kPrefix = "cuda:";
  int count = 0;
  if (spec.substr(0, kPrefix.size()) != kPrefix ||
      !absl::SimpleAtoi(spec.substr(kPrefix.size()), &count) || count < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad CUDA platform spec '", spec,
        "'; use 'cuda' (every GPU) or 'cuda:N' (the first N GPUs, N >= 1)"));
  }
  options.num_gpus = count;
  return options;
}

CudaPlatform::CudaPlatform(CudaPlatformOptions options)
    : options_(std::move(options)) {}

absl::StatusOr<Device*> CudaPlatform::FindDevice(absl::string_view name) {
  ASSIGN_OR_RETURN(size_t index,
                   FindDeviceIndex(name, options_.job_prefix, names_, name_));
  if (index < gpus_.size()) return gpus_[index].get();
  return cpu_.get();
}

absl::StatusOr<CudaDevice*> CudaPlatform::FindGpu(absl::string_view name) {
  ASSIGN_OR_RETURN(size_t index,
                   FindDeviceIndex(name, options_.job_prefix, names_, name_));
  if (index >= gpus_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", name, "' is the host CPU (", names_[index], "), not a GPU"));
  }
  return gpus_[index].get();
}

absl::StatusOr<std::vector<size_t>> CudaPlatform::ResolveGroup(
    const std::vector<std::string>& device_names, absl::string_view what) {
  if (device_names.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " needs at least one device name"));
  }
  std::vector<size_t> indices;
  std::vector<bool> used(names_.size(), false);
  for (const std::string& name : device_names) {
    ASSIGN_OR_RETURN(size_t index,
                     FindDeviceIndex(name, options_.job_prefix, names_, name_));
    if (used[index]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device ", names_[index], " appears more than once in the ", what,
          "; each rank needs its own device"));
    }
    used[index] = true;
    indices.push_back(index);
  }
  return indices;
}

absl::StatusOr<std::vector<std::unique_ptr<Transport>>>
CudaPlatform::CreateTransportGroup(
    const std::vector<std::string>& device_names) {
  ASSIGN_OR_RETURN(std::vector<size_t> indices,
                   ResolveGroup(device_names, "transport group"));
  std::vector<std::string> full_names;
  for (size_t index : indices) full_names.push_back(names_[index]);
  return CreateCudaTransportGroup(std::move(full_names));
}

absl::StatusOr<std::unique_ptr<Communicator>> CudaPlatform::CreateCommunicator(
    const std::vector<std::string>& device_names) {
  ASSIGN_OR_RETURN(std::vector<size_t> indices,
                   ResolveGroup(device_names, "NCCL communicator"));
  std::vector<CudaDevice*> devices;
  for (size_t index : indices) {
    if (index >= gpus_.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "an NCCL communicator spans GPUs only, not ", names_[index],
          "; use CreateTransportGroup for groups with the CPU"));
    }
    devices.push_back(gpus_[index].get());
  }
  ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicator> communicator,
                   NcclCommunicator::CreateLocal(std::move(devices)));
  return std::unique_ptr<Communicator>(std::move(communicator));
}

void RegisterCudaPlatform() {
  static absl::once_flag once;
  absl::call_once(once, [] {
    // The only other registrant of "cuda" would be a second copy of this
    // function, so the status can only be OK or ALREADY_EXISTS.
    absl::Status registered = RegisterPlatformFactory(
        "cuda",
        [](absl::string_view spec)
            -> absl::StatusOr<std::unique_ptr<Platform>> {
          ASSIGN_OR_RETURN(CudaPlatformOptions options,
                           CudaPlatform::ParseSpec(spec));
          ASSIGN_OR_RETURN(std::unique_ptr<CudaPlatform> platform,
                           CudaPlatform::Create(std::move(options)));
          return std::unique_ptr<Platform>(std::move(platform));
        });
    (void)registered;
  });
}

}  // namespace cuda
}  // namespace devices
