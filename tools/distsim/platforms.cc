#include "tools/distsim/platforms.h"

#include "absl/base/call_once.h"
#include "devices/host_platform.h"
#include "simulator/sim_platform.h"
#ifdef DISTSIM_WITH_CUDA
#include "devices/cuda/cuda_platform.h"
#include "distribute/multi_worker_nccl.h"
#endif

namespace distsim {

void RegisterAllPlatforms() {
  static absl::once_flag once;
  absl::call_once(once, [] {
    devices::RegisterHostPlatform();
    simulator::RegisterSimPlatform();
#ifdef DISTSIM_WITH_CUDA
    devices::cuda::RegisterCudaPlatform();
    distribute::RegisterMultiWorkerNccl();
#endif
  });
}

}  // namespace distsim
