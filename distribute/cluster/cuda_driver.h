// How many GPUs the CUDA driver shows this process, without linking CUDA.
//
// The driver library is loaded at run time (dlopen), so a binary built on
// a laptop without CUDA still runs there and reports no GPU, and one built
// anywhere counts the GPUs of the machine it runs on. The count is the
// driver's own: it already applies the process's CUDA_VISIBLE_DEVICES, as
// TensorFlow's device listing does.

#ifndef DISTRIBUTE_CLUSTER_CUDA_DRIVER_H_
#define DISTRIBUTE_CLUSTER_CUDA_DRIVER_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distribute {
namespace cluster {

// The driver's library name, as the dynamic loader finds it.
inline constexpr absl::string_view kCudaDriverLibrary = "libcuda.so.1";

// The number of CUDA devices `library` (a name the loader searches for, or
// a path) reports after cuInit. 0, not an error, where nothing suggests a
// GPU: the library is not there (no driver installed), it is the
// toolkit's link stub, or cuInit finds no device. FAILED_PRECONDITION when
// it is there but cannot be loaded, lacks cuInit or cuDeviceGetCount, or
// cuInit or cuDeviceGetCount fail otherwise (an installed driver that
// cannot run, such as one whose kernel module is of another version): the
// message names the library and the loader's or driver's error. (TF logs
// such a driver and counts no GPU; a count asked for is better refused.)
absl::StatusOr<int64_t> CudaDriverGpuCount(
    absl::string_view library = kCudaDriverLibrary);

}  // namespace cluster
}  // namespace distribute

#endif  // DISTRIBUTE_CLUSTER_CUDA_DRIVER_H_
