// How many GPUs a node has, asked of `nvidia-smi --list-gpus` as
// TensorFlow's SlurmClusterResolver asks, in a child process: counting
// does not start CUDA in this process, so CUDA_VISIBLE_DEVICES can still
// be set afterwards (SlurmClusterResolver::ApplyCudaVisibleDevices).

#ifndef DISTRIBUTE_CLUSTER_NVIDIA_SMI_H_
#define DISTRIBUTE_CLUSTER_NVIDIA_SMI_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace distribute {
namespace cluster {

// Runs `program --list-gpus` (a name searched on PATH, or a path) with no
// input, in a process group of its own, and counts the lines of its output
// that start with "GPU " (MIG instances are listed indented under their GPU
// and are not counted), as TF does. nvidia-smi lists every GPU of the node
// whatever CUDA_VISIBLE_DEVICES says (TF asks it only where that variable is
// unset, and so does SlurmClusterResolver).
//
// Errors name the program: NOT_FOUND when it is not on PATH (no NVIDIA
// driver installed) or the path does not exist; FAILED_PRECONDITION when it
// cannot be started, exits with a non-zero status or is killed (with the
// start of its output, such as "NVIDIA-SMI has failed because it couldn't
// communicate with the NVIDIA driver"); DEADLINE_EXCEEDED when it has not
// finished within `timeout`, after which its process group is killed.
// Returns within `timeout` plus about a second (the wait for the killed
// child, which is left behind if it cannot die, e.g. stuck in a wedged
// driver). Once it has exited, something it started that still holds its
// output open is killed after 200 ms rather than waited for.
absl::StatusOr<int64_t> NvidiaSmiGpuCount(
    absl::string_view program = "nvidia-smi",
    absl::Duration timeout = absl::Seconds(10));

}  // namespace cluster
}  // namespace distribute

#endif  // DISTRIBUTE_CLUSTER_NVIDIA_SMI_H_
