// The custom training loop of custom_training_loop.h under
// MultiWorkerMirroredStrategy, TF's synchronous training across machines:
// the same program runs on every worker, each worker reads its share of
// every global batch, and every reduce and update spans all of them.
//
//   # The whole cluster simulated in this process (two hosts of eight
//   # simulated H100s each, one worker per host):
//   bazel run //examples:multi_worker
//   # One worker of a real cluster, as TF runs one: start one process per
//   # worker with its own TF_CONFIG (task index 0 here, 1 for the other).
//   export TF_CONFIG='{"cluster": {"worker": ["127.0.0.1:2222",
//       "127.0.0.1:2223"]}, "task": {"type": "worker", "index": 0}}'
//   bazel-bin/examples/multi_worker
//
// Each worker prints the weight it learned (w in y = w x; the data's is 3),
// the same on every worker.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "devices/host_platform.h"
#include "devices/platform_registry.h"
#include "devices/status_macros.h"
#include "distribute/in_process_cluster.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "examples/custom_training_loop.h"
#include "simulator/sim_platform.h"

namespace {

constexpr int kEpochs = 40;

// One worker of the cluster that TF_CONFIG describes (its replicas: the
// host's first CPU, TF's default without GPUs).
absl::Status RunOneWorker() {
  ASSIGN_OR_RETURN(auto platform, devices::CreatePlatform("host"));
  ASSIGN_OR_RETURN(
      auto strategy,
      distribute::MultiWorkerMirroredStrategy::Create(
          *platform, distribute::MultiWorkerMirroredStrategy::Options()));
  ASSIGN_OR_RETURN(float w, examples::TrainLine(*strategy, kEpochs));
  std::printf("worker %d of %d: w = %.6f\n", strategy->WorkerIndex(),
              strategy->NumWorkers(), w);
  return absl::OkStatus();
}

// Every worker of a simulated two-host cluster, each on a thread of this
// process (distribute/in_process_cluster.h).
absl::Status RunSimulatedCluster() {
  ASSIGN_OR_RETURN(auto platform,
                   devices::CreatePlatform("sim:dgx_h100_cluster:2"));
  ASSIGN_OR_RETURN(auto cluster,
                   distribute::InProcessCluster::Create(*platform));
  absl::Mutex mu;
  return cluster->Run(
      [&](distribute::MultiWorkerMirroredStrategy& strategy) -> absl::Status {
        ASSIGN_OR_RETURN(float w, examples::TrainLine(strategy, kEpochs));
        absl::MutexLock lock(&mu);
        std::printf("worker %d of %d: w = %.6f\n", strategy.WorkerIndex(),
                    strategy.NumWorkers(), w);
        return absl::OkStatus();
      });
}

}  // namespace

int main() {
  devices::RegisterHostPlatform();
  simulator::RegisterSimPlatform();
  const bool one_worker = std::getenv("TF_CONFIG") != nullptr;
  absl::Status status = one_worker ? RunOneWorker() : RunSimulatedCluster();
  std::fflush(stdout);
  if (!status.ok()) {
    std::fprintf(stderr, "multi_worker: %s\n", status.ToString().c_str());
    return 1;
  }
  return 0;
}
