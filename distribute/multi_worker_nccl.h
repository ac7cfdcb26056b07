// NCCL across MultiWorkerMirroredStrategy's worker processes, for CUDA
// builds: RegisterMultiWorkerNccl installs it as the strategy's native
// cross-worker all-reduce (SetCrossWorkerNativeOps), used for
// CommunicationImplementation::kNccl and under AUTO when every local device
// is a GPU of the 'cuda' platform. Call it once at start, before creating
// strategies (as the platforms are registered).
//
//   distribute::RegisterMultiWorkerNccl();
//   auto strategy = distribute::MultiWorkerMirroredStrategy::Create(...);
#ifndef DISTRIBUTE_MULTI_WORKER_NCCL_H_
#define DISTRIBUTE_MULTI_WORKER_NCCL_H_

namespace distribute {

// Idempotent and thread-safe.
void RegisterMultiWorkerNccl();

}  // namespace distribute

#endif  // DISTRIBUTE_MULTI_WORKER_NCCL_H_
