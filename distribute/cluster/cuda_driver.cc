#include "distribute/cluster/cuda_driver.h"

#include <dlfcn.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace distribute {
namespace cluster {
namespace {

// The driver API's entry points by their C signatures (CUresult is an int
// enum); declared here so that nothing of CUDA is needed to build.
using CuInitFn = int (*)(unsigned int flags);
using CuDeviceGetCountFn = int (*)(int* count);
using CuGetErrorNameFn = int (*)(int error, const char** name);

// The CUresult values read here, from the driver API's documentation.
constexpr int kCudaSuccess = 0;
constexpr int kCudaErrorStubLibrary = 34;
constexpr int kCudaErrorNoDevice = 100;

std::string ErrorName(void* handle, int error) {
  auto get_name =
      reinterpret_cast<CuGetErrorNameFn>(dlsym(handle, "cuGetErrorName"));
  const char* name = nullptr;
  if (get_name != nullptr && get_name(error, &name) == kCudaSuccess &&
      name != nullptr) {
    return absl::StrCat(name, " (", error, ")");
  }
  return absl::StrCat("CUresult ", error);
}

}  // namespace

absl::StatusOr<int64_t> CudaDriverGpuCount(absl::string_view library) {
  const std::string name(library);
  // Kept loaded for the life of the process: the driver is not made to be
  // unloaded, and the CUDA runtime will load the same one.
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    // Not installed is no GPU; installed but unloadable (a missing
    // dependency, another architecture) is worth saying.
    const char* error = dlerror();
    const std::string why = error != nullptr ? error : "unknown error";
    // Only the library itself missing is no driver: the loader names the
    // file it could not find ("NAME: cannot open shared object file: No such
    // file or directory" from glibc, "Error loading shared library NAME: No
    // such file or directory" from musl), which for a missing dependency is
    // that one (musl adds "(needed by ...)").
    const std::string named = absl::StrCat(name, ": ");
    if ((absl::StartsWith(why, named) ||
         absl::StrContains(why, absl::StrCat(" ", named))) &&
        absl::StrContains(why, "No such file or directory") &&
        !absl::StrContains(why, "needed by")) {
      return 0;
    }
    return absl::FailedPreconditionError(
        absl::StrCat("the CUDA driver library ", name,
                     " is there but cannot be loaded: ", why));
  }
  auto init = reinterpret_cast<CuInitFn>(dlsym(handle, "cuInit"));
  auto get_count =
      reinterpret_cast<CuDeviceGetCountFn>(dlsym(handle, "cuDeviceGetCount"));
  if (init == nullptr || get_count == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the CUDA driver library ", name,
        " lacks cuInit or cuDeviceGetCount; it is not a CUDA driver"));
  }
  const int init_result = init(0);
  if (init_result == kCudaErrorNoDevice ||
      init_result == kCudaErrorStubLibrary) {
    return 0;
  }
  if (init_result != kCudaSuccess) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the CUDA driver (", name, ") failed cuInit with ",
        ErrorName(handle, init_result),
        "; check that the NVIDIA kernel module and the driver library are "
        "of one version (reboot after a driver upgrade), or hide the GPUs "
        "with CUDA_VISIBLE_DEVICES=-1"));
  }
  int count = 0;
  const int count_result = get_count(&count);
  if (count_result != kCudaSuccess) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the CUDA driver (", name, ") failed cuDeviceGetCount with ",
        ErrorName(handle, count_result)));
  }
  return count;
}

}  // namespace cluster
}  // namespace distribute
