// tf.distribute.MultiWorkerMirroredStrategy: synchronous data-parallel
// training over the workers of a cluster, one process per worker, each with
// its local devices as replicas. Collectives cross processes over gRPC, or
// NCCL on GPUs in a binary that links //distribute:multi_worker_nccl and
// calls RegisterMultiWorkerNccl() before creating the strategy (without
// it, AUTO picks gRPC and NCCL is refused).
//
//   // TF_CONFIG='{"cluster": {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"]},
//   //             "task": {"type": "worker", "index": 1}}'
//   auto strategy = MultiWorkerMirroredStrategy::Create(platform);
//   if (!strategy.ok()) return strategy.status();  // names a bad field
//   (*strategy)->NumReplicasInSync();  // workers x local devices
//   (*strategy)->Run(step_fn, {batch});  // this worker's replicas
//
// As in TF: the workers are the "chief" task (worker 0, when the cluster has
// one) and the "worker" tasks in index order; every worker has the same
// local devices (DefaultDevices: all GPUs of the platform, else its first
// CPU); global replica id = worker index * local devices + local index.
// Create starts this task's Server on its cluster address, builds one
// collective group over every worker's local devices (a GrpcTransport
// endpoint per local device, ranked by global replica id, driven by a
// ScheduleCommunicator whose AUTO selection knows that each worker holds
// `local devices` consecutive ranks), and watches the other workers with a
// PeerMonitor. It returns once every worker's server answers (the
// rendezvous, at most 60 s), so start the workers together. Variables take
// the chief's initial value when created (a broadcast that every worker
// makes).
//
// Failures: a collective that outlasts CommunicationOptions::timeout_seconds
// fails with DEADLINE_EXCEEDED on the workers that wait in it; a worker that
// gives up aborts the group, so workers still inside the collective (or
// entering a later one) fail with DEADLINE_EXCEEDED too, naming it (any
// other failure that makes a worker give up reaches the others as
// UNAVAILABLE). When a worker dies,
// the others' pending and later collectives fail with UNAVAILABLE naming its
// task within about three heartbeats (3 s). The strategy cannot continue after
// either: make a new process group (TF restarts the job from a checkpoint).
//
// A cluster of one worker, or no TF_CONFIG at all, trains in this process
// alone with the local CollectiveAllReduce (no server).
//
// In one process (CreateInProcessWorkers; in_process_cluster.h runs them):
// on a platform whose devices belong to several tasks, such as the
// simulator's sim:dgx_h100_cluster:2 (one task per host), each task is a
// worker with the same roles, replica ids, input sharding, chief broadcast
// and collectives as above; only the transport differs: the platform's own
// transport group over every worker's devices (simulated links) instead of
// gRPC. Under NCCL, and under AUTO when every replica device is a GPU, the
// collectives are the platform's native library over every worker's
// devices (Platform::CreateCommunicator; on the simulator its NCCL model,
// as separate processes of GPUs use NCCL). Otherwise the all-reduce is
// hierarchical (inside each host, then across hosts) under AUTO, and a
// ring under RING.
#ifndef DISTRIBUTE_MULTI_WORKER_MIRRORED_STRATEGY_H_
#define DISTRIBUTE_MULTI_WORKER_MIRRORED_STRATEGY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "devices/platform.h"
#include "distribute/cluster/cluster_resolver.h"
#include "distribute/collective/communication_options.h"
#include "distribute/cross_device_ops.h"
#include "distribute/server/peer_monitor.h"
#include "distribute/server/server.h"
#include "distribute/strategy.h"

namespace distribute {

class InProcessCluster;
namespace internal {
class SettingsBoard;
}  // namespace internal

// What a native cross-worker all-reduce (NCCL) needs to form its group: the
// group spans every worker's local devices, worker w holding ranks
// w * local_devices.size() ..; the chief (worker 0) serves the bootstrap.
struct CrossWorkerContext {
  devices::Platform* platform = nullptr;
  Server* server = nullptr;                   // This worker's, started.
  std::vector<std::string> worker_addresses;  // Worker order; chief first.
  int worker_index = 0;
  std::vector<std::string> local_devices;
  CommunicationOptions options;
  // NCCL was asked for: a factory that cannot serve these devices fails
  // saying why. Otherwise (AUTO) it may decline by returning null, and the
  // strategy keeps its collectives over gRPC.
  bool required = false;
};
using CrossWorkerNativeOpsFactory =
    std::function<absl::StatusOr<std::shared_ptr<CrossDeviceOps>>(
        const CrossWorkerContext&)>;

// Installs (or, with nullptr, removes) the factory MultiWorkerMirroredStrategy
// uses for CommunicationImplementation::kNccl, and under AUTO when every
// local device is a GPU, across real worker processes. The CUDA build's
// //distribute:multi_worker_nccl installs NCCL's (RegisterMultiWorkerNccl
// in multi_worker_nccl.h); without it kNccl is FAILED_PRECONDITION and AUTO
// keeps the collectives over gRPC.
// Thread-safe; affects strategies created afterwards.
void SetCrossWorkerNativeOps(CrossWorkerNativeOpsFactory factory);

// Where worker processes say that they are still waiting for others (TF
// logs "Waiting for the cluster"): while Create's rendezvous or
// AgreeOnSettings waits for a worker that has not answered, `reporter`
// gets a line every kWaitReportInterval, e.g. "MultiWorkerMirroredStrategy:
// still waiting for worker /job:worker/task:1 (10.0.0.2:2222) after 5s of
// 1m; start every worker of the cluster". Null (the default): silent.
// Thread-safe; called from the waiting thread.
using WaitReporter = std::function<void(const std::string&)>;
void SetWaitReporter(WaitReporter reporter);
inline constexpr absl::Duration kWaitReportInterval = absl::Seconds(5);

class MultiWorkerMirroredStrategy : public Strategy {
 public:
  // TF's constructor arguments (cluster_resolver, communication_options)
  // and what a C++ worker also needs.
  struct Options {
    // Null: TFConfigClusterResolver::FromEnvironment() (TF_CONFIG).
    std::unique_ptr<cluster::ClusterResolver> cluster_resolver;
    // implementation AUTO, RING or NCCL; timeout_seconds bounds every
    // collective; bytes_per_pack packs all-reduces and, between processes
    // over gRPC, is the size of the chunks each message streams in (capped
    // by the server's max_message_bytes). Across workers, NCCL (and AUTO
    // when every local device is a GPU) takes the native factory of
    // SetCrossWorkerNativeOps; NCCL without one is FAILED_PRECONDITION
    // naming the library to link. A lone worker uses the local
    // CollectiveAllReduce, which honours NCCL on GPUs.
    CommunicationOptions communication;
    // This worker's Server (cluster token, TLS, message bound, host
    // restriction), which its transports, heartbeats and NCCL bootstrap use
    // as clients too; every worker must give the same token and TLS setup.
    // Its protocol is the resolver's rpc_layer when that is set. A worker
    // whose calls the others refuse fails with their UNAUTHENTICATED or
    // PERMISSION_DENIED.
    ServerOptions server;
    // This worker's replica devices; empty: TF's choice, which with a
    // TFConfigClusterResolver is the process's GPUs, else its first CPU,
    // and with any other resolver follows its num_accelerators(): the first
    // that many GPUs, else TPUs, else the first CPU (FAILED_PRECONDITION
    // when the platform has fewer). Every worker must have as many (worker
    // w's replicas are global replicas w * n .. w * n + n - 1); with
    // several, the all-reduce is hierarchical and their exchanges stay in
    // memory.
    std::vector<std::string> local_devices;
  };

  // Errors: the resolver's (INVALID_ARGUMENT naming the bad TF_CONFIG
  // field); INVALID_ARGUMENT when the task is not a "chief" or "worker" of
  // the cluster; the Server's (UNAVAILABLE when the port is taken);
  // DEADLINE_EXCEEDED naming the workers whose servers did not answer;
  // FAILED_PRECONDITION naming both layouts when the workers have unequal
  // numbers of replicas; ABORTED or UNAVAILABLE when a worker already left
  // (its group aborted, its server stopped) before this one joined.
  static absl::StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>> Create(
      devices::Platform& platform, Options options = {});

  // One strategy per task of `platform`, worker w being the w'th task in
  // index order (task 0 is the chief): its replicas are the task's GPUs,
  // else its first CPU. Every strategy must then run the same program on
  // its own thread at once (InProcessCluster does that); the platform must
  // outlive them. Errors: FAILED_PRECONDITION when the devices belong to
  // fewer than two tasks (naming the platform and what to use instead) or
  // for CommunicationImplementation.NCCL on a platform without a native
  // library for these devices; INVALID_ARGUMENT when the tasks have
  // different numbers of replica devices; the platform's errors of
  // CreateTransportGroup.
  static absl::StatusOr<
      std::vector<std::unique_ptr<MultiWorkerMirroredStrategy>>>
  CreateInProcessWorkers(devices::Platform& platform,
                         CommunicationOptions options = {});

  ~MultiWorkerMirroredStrategy() override;

  std::string name() const override { return "MultiWorkerMirroredStrategy"; }
  cluster::ClusterResolver* ClusterResolver() const override {
    return resolver_.get();
  }

  // This task: "chief" or "worker" ("" without a cluster) and its index.
  const std::string& task_type() const { return task_type_; }
  int64_t task_id() const { return task_id_; }
  // Whether this worker is worker 0 (the chief, else worker 0 of a cluster
  // without one), the one that writes checkpoints and summaries in TF.
  bool IsChief() const { return WorkerIndex() == 0; }
  const CommunicationOptions& communication_options() const { return options_; }
  // This task's server; null when training alone.
  Server* server() const { return server_.get(); }

  // A training program's settings, as (name, value) pairs in the order to
  // check them, e.g. {{"--global_batch", "256"}, {"--optimizer", "sgd"}}.
  using Settings = std::vector<std::pair<std::string, std::string>>;
  // Checks that every worker trains with the same `settings`: workers
  // started with different ones would otherwise train to different
  // results, or fail later without saying why. Every worker must call it,
  // at the same point of its program (the n-th call of each worker meets
  // the n-th of the others): each publishes its settings and compares the
  // others'. FAILED_PRECONDITION on every worker, naming the first setting
  // (in this worker's order; then any another worker gives that this one
  // does not) whose values differ, with both values and both workers;
  // DEADLINE_EXCEEDED (or the transport's error) naming a worker that did
  // not answer within `timeout`. OK at once for a worker training alone.
  absl::Status AgreeOnSettings(const Settings& settings,
                               absl::Duration timeout = absl::Seconds(60));

 private:
  explicit MultiWorkerMirroredStrategy(
      std::unique_ptr<StrategyExtended> extended)
      : Strategy(std::move(extended)) {}

  friend class InProcessCluster;

  std::unique_ptr<cluster::ClusterResolver> resolver_;
  // In-process workers: aborts the collective group of every worker (their
  // pending and later collectives fail with UNAVAILABLE, or
  // DEADLINE_EXCEEDED for a timeout, carrying the reason), as a real worker
  // that gives up does.
  std::function<absl::Status(absl::Status)> abort_group_;
  std::string task_type_;
  int64_t task_id_ = 0;
  CommunicationOptions options_;
  // Across worker processes: every worker's server (this one's own
  // address) and name ("/job:worker/task:1"), in worker order.
  std::vector<std::string> worker_targets_;
  std::vector<std::string> worker_names_;
  // In-process workers: where they meet to compare settings.
  std::shared_ptr<internal::SettingsBoard> settings_board_;
  int settings_calls_ = 0;  // AgreeOnSettings calls so far
  // The monitor goes before the server (members are destroyed in reverse).
  std::unique_ptr<Server> server_;
  std::unique_ptr<PeerMonitor> monitor_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_MULTI_WORKER_MIRRORED_STRATEGY_H_
