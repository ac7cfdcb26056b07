// NCCL across the worker processes of a MultiWorkerMirroredStrategy: linked
// into a binary (alwayslink), it installs the strategy's native cross-worker
// factory (SetCrossWorkerNativeOps), so that CommunicationImplementation
// NCCL, and AUTO when every local device is a GPU, all-reduce with one NCCL
// group over every worker's GPU instead of collectives over gRPC. The group
// forms over the workers' gRPC servers: the chief makes the NCCL unique id
// and the others fetch it (server/nccl_bootstrap.h).
//
// One GPU per worker process, as Horovod and torch.distributed run: NCCL's
// multi-process bootstrap here drives one rank per process. A worker with
// several local GPUs gets FAILED_PRECONDITION naming the ways out (one
// worker per GPU, or RING / AUTO over gRPC, which are hierarchical).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "devices/cuda/cuda_platform.h"
#include "distribute/cross_device_ops.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "distribute/server/nccl_bootstrap.h"

namespace distribute {
namespace {

// How long the NCCL group may take to form: every worker must reach it.
constexpr absl::Duration kFormTimeout = absl::Minutes(2);

class CrossWorkerNcclAllReduce : public CrossDeviceOps {
 public:
  explicit CrossWorkerNcclAllReduce(CrossWorkerContext context)
      : context_(std::move(context)) {
    set_rank_offset(context_.worker_index);
    set_default_options(context_.options);
  }
  std::string name() const override { return "CrossWorkerNcclAllReduce"; }

 protected:
  absl::StatusOr<std::unique_ptr<devices::Communicator>> MakeCommunicator(
      devices::Platform& platform,
      const std::vector<std::string>& devices) override {
    // The factory checked both.
    auto* cuda = dynamic_cast<devices::cuda::CudaPlatform*>(&platform);
    if (cuda == nullptr || devices.size() != 1) {
      return absl::InternalError(
          "NCCL across workers was bound to other devices than it was made "
          "for");
    }
    absl::StatusOr<devices::cuda::CudaDevice*> gpu = cuda->FindGpu(devices[0]);
    if (!gpu.ok()) return gpu.status();
    if (context_.server == nullptr || context_.worker_addresses.empty()) {
      return absl::InternalError(
          "NCCL across workers was given no server or no workers");
    }
    // Rank w is worker w's GPU; the names serve messages only.
    std::vector<std::string> names;
    for (size_t w = 0; w < context_.worker_addresses.size(); ++w) {
      names.push_back(static_cast<int>(w) == context_.worker_index
                          ? devices[0]
                          : absl::StrCat("the GPU of worker ", w, " (",
                                         context_.worker_addresses[w], ")"));
    }
    absl::StatusOr<std::unique_ptr<devices::cuda::NcclCommunicator>> comm =
        CreateNcclRankOverGrpc(*context_.server, context_.worker_addresses[0],
                               BlobKey{"multi-worker-nccl", 0}, **gpu,
                               context_.worker_index, std::move(names),
                               kFormTimeout);
    if (!comm.ok()) return comm.status();
    return std::unique_ptr<devices::Communicator>(*std::move(comm));
  }

 private:
  const CrossWorkerContext context_;
};

// NCCL's ops for `context`; null (AUTO) or FAILED_PRECONDITION (NCCL asked
// for) where it cannot serve: another platform than 'cuda', or several
// local GPUs.
absl::StatusOr<std::shared_ptr<CrossDeviceOps>> MakeOps(
    const CrossWorkerContext& context) {
  std::string why;
  if (dynamic_cast<devices::cuda::CudaPlatform*>(context.platform) == nullptr) {
    why = absl::StrCat(
        "needs the 'cuda' platform, not '",
        context.platform == nullptr ? "(none)" : context.platform->name(), "'");
  } else if (context.local_devices.size() != 1) {
    why = absl::StrCat(
        "drives one GPU per worker process, and this worker has ",
        context.local_devices.size(),
        " local devices; start one worker per GPU (CUDA_VISIBLE_DEVICES)");
  }
  if (why.empty()) {
    return std::shared_ptr<CrossDeviceOps>(
        std::make_shared<CrossWorkerNcclAllReduce>(context));
  }
  if (!context.required) return std::shared_ptr<CrossDeviceOps>();
  return absl::FailedPreconditionError(absl::StrCat(
      "MultiWorkerMirroredStrategy: NCCL across workers ", why,
      ", or use AUTO or RING (hierarchical collectives over gRPC)"));
}

const bool kInstalled = [] {
  SetCrossWorkerNativeOps(MakeOps);
  return true;
}();

}  // namespace
}  // namespace distribute
