// A cluster of MultiWorkerMirroredStrategy workers inside one process: one
// worker per task of a platform whose devices span several tasks (the
// simulator's multi-host topologies, e.g. sim:dgx_h100_cluster:2, are one
// task per host). Each worker runs the same training program as a real
// worker process would, on its own host thread, with the same roles (task 0
// is the chief), global replica ids, input sharding, chief broadcast of the
// initial values and collectives; the collectives cross the platform's
// transports (on the simulator: simulated NVLink and network links, charged
// by the simulator) instead of gRPC.
//
//   auto platform = devices::CreatePlatform("sim:dgx_h100_cluster:2");
//   auto cluster = InProcessCluster::Create(**platform);
//   absl::Status s = (*cluster)->Run(
//       [&](MultiWorkerMirroredStrategy& strategy) -> absl::Status {
//         // strategy.WorkerIndex() is this worker's task; replicas
//         // strategy.extended().ReplicaIdOffset() .. + 7 of 16.
//         return TrainOnce(strategy);   // the same program on every worker
//       });
//
// Determinism: each worker's thread is bound to its task's host device (its
// first CPU, else its first replica device) and all of them start together,
// so on the simulator every worker is an actor from the start and the same
// program gives the same trace whatever the host's thread scheduling.
#ifndef DISTRIBUTE_IN_PROCESS_CLUSTER_H_
#define DISTRIBUTE_IN_PROCESS_CLUSTER_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "devices/platform.h"
#include "distribute/collective/communication_options.h"
#include "distribute/multi_worker_mirrored_strategy.h"

namespace distribute {

class InProcessCluster {
 public:
  // The workers of MultiWorkerMirroredStrategy::CreateInProcessWorkers (its
  // errors: FAILED_PRECONDITION for a platform of one task, ...), and the
  // devices their threads bind to. `platform` must outlive the cluster.
  static absl::StatusOr<std::unique_ptr<InProcessCluster>> Create(
      devices::Platform& platform, CommunicationOptions options = {});

  InProcessCluster(const InProcessCluster&) = delete;
  InProcessCluster& operator=(const InProcessCluster&) = delete;

  int num_workers() const { return static_cast<int>(workers_.size()); }
  // Worker w (0 <= w < num_workers()): task w, the chief for w == 0.
  MultiWorkerMirroredStrategy& worker(int w) const {
    return *workers_[static_cast<size_t>(w)];
  }
  // The device worker w's thread is bound to while it runs.
  const std::string& worker_host_device(int w) const {
    return host_devices_[static_cast<size_t>(w)]->name();
  }

  using WorkerFn = std::function<absl::Status(MultiWorkerMirroredStrategy&)>;

  // Runs fn(worker(w)) for every worker at once, each on its own thread,
  // and waits for all of them. OK when every worker returns OK; otherwise
  // the status of the lowest-numbered failing worker, its code kept, its
  // message prefixed with the task ("worker task 1
  // (/job:worker/replica:0/task:1): ...") and followed by the other failing
  // workers' messages, then the workers that returned OK, if any. A worker
  // whose fn fails aborts the collective group, as a real worker that gives
  // up does: the others' pending and later collectives fail with
  // UNAVAILABLE naming its task. A worker that returns OK while the others
  // still run collectives with it leaves them waiting for it: on the
  // simulator the deadlock is found and their waits fail with
  // DEADLINE_EXCEEDED naming the peer that never came. A replica that fails
  // while its worker's other replicas wait for it is bounded by
  // CommunicationOptions::timeout_seconds. The strategies cannot be used
  // after a failure. Not reentrant.
  absl::Status Run(const WorkerFn& fn);

 private:
  InProcessCluster() = default;

  std::vector<std::unique_ptr<MultiWorkerMirroredStrategy>> workers_;
  std::vector<devices::Device*> host_devices_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_IN_PROCESS_CLUSTER_H_
