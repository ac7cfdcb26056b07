// NCCL across the worker processes of a MultiWorkerMirroredStrategy:
// RegisterMultiWorkerNccl installs the strategy's native cross-worker
// factory (SetCrossWorkerNativeOps), so that CommunicationImplementation
// NCCL, and AUTO when every local device is a GPU, all-reduce with one NCCL
// group over every worker's GPUs instead of collectives over gRPC. The group
// forms over the workers' gRPC servers: the chief makes the NCCL unique id
// and the others fetch it (server/nccl_bootstrap.h).
//
// Worker w with L local GPUs drives ranks w*L .. w*L + L - 1 of one group of
// (workers x L) ranks, joined in one NCCL group call
// (NcclCommunicator::CreateRanks); every worker has the same number of local
// devices, as MultiWorkerMirroredStrategy requires. NCCL's own topology
// detection then keeps the traffic between a worker's GPUs on NVLink and
// crosses the network once per ring step, which is what a hierarchical
// all-reduce would do by hand.
#include "distribute/multi_worker_nccl.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "devices/cuda/cuda_platform.h"
#include "devices/status_macros.h"
#include "distribute/cross_device_ops.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "distribute/server/nccl_bootstrap.h"

namespace distribute {
namespace {

// How long the NCCL group may take to form: every worker must reach it.
constexpr absl::Duration kFormTimeout = absl::Minutes(2);

class CrossWorkerNcclAllReduce : public CrossDeviceOps {
 public:
  // `gpus`: the context's local devices, in order (MakeOps resolved them).
  CrossWorkerNcclAllReduce(CrossWorkerContext context,
                           std::vector<devices::cuda::CudaDevice*> gpus)
      : context_(std::move(context)), gpus_(std::move(gpus)) {
    set_rank_offset(context_.worker_index * per_worker());
    set_default_options(context_.options);
  }
  std::string name() const override { return "CrossWorkerNcclAllReduce"; }

 protected:
  absl::StatusOr<std::unique_ptr<devices::Communicator>> MakeCommunicator(
      devices::Platform&, const std::vector<std::string>& devices) override {
    if (devices != context_.local_devices) {
      return absl::InternalError(
          "NCCL across workers was bound to other devices than it was made "
          "for");
    }
    // Rank w * L + i is worker w's i-th GPU; the names serve messages only.
    std::vector<std::string> names;
    for (size_t w = 0; w < context_.worker_addresses.size(); ++w) {
      for (int i = 0; i < per_worker(); ++i) {
        names.push_back(static_cast<int>(w) == context_.worker_index
                            ? devices[static_cast<size_t>(i)]
                            : absl::StrCat("GPU ", i, " of worker ", w, " (",
                                           context_.worker_addresses[w], ")"));
      }
    }
    // The chief checks every other worker's count of the group's ranks
    // before it makes the id, so unequal GPU counts fail everywhere at once
    // (where every worker is up; else after the form timeout).
    std::vector<std::string> others;
    if (context_.worker_index == 0) {
      others.assign(context_.worker_addresses.begin() + 1,
                    context_.worker_addresses.end());
    }
    ASSIGN_OR_RETURN(std::unique_ptr<devices::cuda::NcclCommunicator> comm,
                     CreateNcclRanksOverGrpc(
                         *context_.server, context_.worker_addresses[0],
                         BlobKey{"multi-worker-nccl", 0}, gpus_, rank_offset(),
                         std::move(names), kFormTimeout, std::move(others)));
    return std::unique_ptr<devices::Communicator>(std::move(comm));
  }

 private:
  int per_worker() const { return static_cast<int>(gpus_.size()); }

  const CrossWorkerContext context_;
  const std::vector<devices::cuda::CudaDevice*> gpus_;  // One rank each.
};

// NCCL's ops for `context`; null (AUTO) or FAILED_PRECONDITION (NCCL asked
// for) where it cannot serve: another platform than 'cuda', or local
// devices that are not all GPUs.
absl::StatusOr<std::shared_ptr<CrossDeviceOps>> MakeOps(
    const CrossWorkerContext& context) {
  std::string why;
  std::vector<devices::cuda::CudaDevice*> gpus;
  auto* cuda = dynamic_cast<devices::cuda::CudaPlatform*>(context.platform);
  if (cuda == nullptr) {
    why = absl::StrCat(
        "needs the 'cuda' platform, not '",
        context.platform == nullptr ? "(none)" : context.platform->name(), "'");
  } else if (context.local_devices.empty()) {
    why = "needs at least one local GPU";
  } else {
    for (const std::string& name : context.local_devices) {
      absl::StatusOr<devices::cuda::CudaDevice*> gpu = cuda->FindGpu(name);
      if (!gpu.ok()) {
        why = absl::StrCat("runs on GPUs only, and local device '", name,
                           "' is not one of this worker's GPUs");
        break;
      }
      gpus.push_back(*gpu);
    }
  }
  if (why.empty()) {
    return std::shared_ptr<CrossDeviceOps>(
        std::make_shared<CrossWorkerNcclAllReduce>(context, std::move(gpus)));
  }
  if (!context.required) return std::shared_ptr<CrossDeviceOps>();
  return absl::FailedPreconditionError(
      absl::StrCat("MultiWorkerMirroredStrategy: NCCL across workers ", why,
                   "; use AUTO or RING (collectives over gRPC) otherwise"));
}

}  // namespace

void RegisterMultiWorkerNccl() { SetCrossWorkerNativeOps(MakeOps); }

}  // namespace distribute
