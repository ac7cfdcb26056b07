// ParameterServerStrategy, as TF's
// tf.distribute.experimental.ParameterServerStrategy, with the
// ClusterCoordinator of cluster_coordinator.h (TF's
// tf.distribute.experimental.coordinator.ClusterCoordinator): asynchronous
// training on a cluster of a coordinator, workers and parameter servers.
//
// It is a distribute::Strategy. Variables created in its scope live on the
// ps tasks (Variable::Kind::kRemote): whole and round-robin, or split by the
// strategy's variable partitioner into shards along the first axis, each
// shard on the next ps task (TF's placement); ColocateVarsWith puts a new
// variable, whole, on the ps task of another. ON_READ variables live there
// too (TF's AggregatingVariable). A coordinator that creates a variable
// the ps tasks hold already (a restarted one) binds to it. The coordinator
// schedules functions on the workers: each scheduled call runs on whichever
// worker is free, and reads and updates the variables on the ps tasks; calls
// run independently of each other (no all-reduce across workers, no lock step).
// Inside a call, the worker's strategy runs the replica function on the
// worker's devices (Run; one replica on a CPU worker), reduces across them
// (Reduce, ReplicaContext::AllReduce) and updates variables (Assign*, or
// extended().Update for an optimizer's update function).
//
// TF traces a function on the coordinator and ships it, with the variables
// it captured, to the workers; C++ cannot ship code. So every task runs the
// same program: the coordinator makes its strategy with Create, each worker
// with CreateForWorker, and both create the model's variables in the
// strategy's scope in the same order (on a worker, CreateVariable binds to
// the variable the coordinator made under the same name, unnamed variables
// are named "Variable", "Variable_1", ... in creation order). Each worker
// registers its functions by name (RegisterWorkerFunction) and the
// coordinator schedules them by name, with tensors as arguments: the C++
// form of TF's schedule(fn). A worker runs the calls of one function one at
// a time (the coordinator may send a call again after a connection failure
// while the first still runs there), so a function may call Run.
//
// Failures, as TF: a worker that cannot be reached or stops under a call
// (UNAVAILABLE, CANCELLED, ABORTED from the RPC) has its calls scheduled
// again on the others, and is tried again later; so a call runs at least
// once, and may run twice when its worker stopped after the function had
// updated the variables (TF's guarantee too). A function's own error (a ps
// task that cannot be reached among them) fails its RemoteValue, cancels
// the calls still queued, and is returned by the next Join or Schedule.
// Unlike TF, a worker that does not have the function (NOT_FOUND) fails the
// call rather than being waited for: register worker functions before the
// worker's server starts.
//
// Example (every task builds the model alike):
//   std::shared_ptr<distribute::Variable> MakeModel(Strategy& s) {
//     ScopeGuard scope = *s.Scope();
//     return *s.CreateVariable(zeros, {.name = "w"});
//   }
// Example (coordinator):
//   auto strategy = *ParameterServerStrategy::Create(spec, options);
//   auto w = MakeModel(*strategy);          // made on a ps task
//   auto coordinator = *ClusterCoordinator::Create(*strategy);
//   for (int i = 0; i < 100; ++i) coordinator->Schedule("train_step", {});
//   absl::Status s = coordinator->Join(absl::Minutes(5));
//   devices::Tensor trained = *w->Read();
// Example (each worker task, before its server starts):
//   auto strategy = *ParameterServerStrategy::CreateForWorker(*server);
//   auto w = MakeModel(*strategy);          // bound to the ps task's "w"
//   RegisterWorkerFunction(*server, "train_step",
//       [&](PsClient&, std::vector<devices::Tensor> args)
//           -> absl::StatusOr<std::vector<devices::Tensor>> {
//         auto out = strategy->Run([&](ReplicaContext&,
//                                      const std::vector<devices::Tensor>&)
//             -> absl::StatusOr<std::vector<devices::Tensor>> {
//           devices::Tensor grad = ...;     // from w->Read() and a batch
//           absl::Status s = w->AssignSub(grad);
//           if (!s.ok()) return s;
//           return std::vector<devices::Tensor>{};
//         });
//         if (!out.ok()) return out.status();
//         return std::vector<devices::Tensor>{};
//       });
#ifndef DISTRIBUTE_PS_PARAMETER_SERVER_STRATEGY_H_
#define DISTRIBUTE_PS_PARAMETER_SERVER_STRATEGY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "devices/platform.h"
#include "devices/tensor.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/partitioners.h"
#include "distribute/ps/ps_client.h"
#include "distribute/server/channel.h"
#include "distribute/server/server.h"
#include "distribute/strategy.h"

namespace distribute {
namespace ps {

struct ParameterServerStrategyOptions {
  // TF's variable_partitioner: when set, variables of rank >= 1 are split
  // along their first axis as it says; scalars never are.
  std::shared_ptr<const Partitioner> variable_partitioner;
  // The token and TLS of the cluster's servers.
  ChannelOptions channel;
  // Bound on each call to a ps task.
  absl::Duration ps_timeout = absl::Seconds(30);
  // Where Run runs the replicas (TF: the task's GPUs, or its CPU): a
  // platform of the caller's, which must outlive the strategy, and its
  // devices (empty: all of them). nullptr: a host platform of one device,
  // the strategy's own.
  devices::Platform* platform = nullptr;
  std::vector<std::string> devices;
};

// A variable on the ps tasks: its name, dtype, shape and shards.
struct Variable {
  std::string name;
  devices::DType dtype = devices::DType::kFloat32;
  devices::Shape shape;
  std::vector<ShardInfo> shards;
};

class InProcessParameterServers;

namespace ps_internal {
// Holds the platform a strategy made for itself; a base of
// ParameterServerStrategy ahead of Strategy, so that it outlives the
// strategy's devices and collectives.
struct OwnedPlatform {
  std::unique_ptr<devices::Platform> owned_platform;
};
}  // namespace ps_internal

class ParameterServerStrategy : private ps_internal::OwnedPlatform,
                                public distribute::Strategy {
 public:
  // The coordinator's strategy, for a cluster with jobs "worker" and "ps"
  // (each at least one task; a "chief" may be there too): variables created
  // in its scope are made on the ps tasks. INVALID_ARGUMENT naming what is
  // missing, or for bad options.
  static absl::StatusOr<std::unique_ptr<ParameterServerStrategy>> Create(
      const cluster::ClusterSpec& cluster,
      ParameterServerStrategyOptions options = {});
  // A worker task's strategy (its server's cluster and channel options
  // replace options.channel): variables created in its scope are bound to
  // the coordinator's of the same name and placement, not made; reading one
  // the coordinator has not made yet is NOT_FOUND.
  static absl::StatusOr<std::unique_ptr<ParameterServerStrategy>>
  CreateForWorker(const Server& server,
                  ParameterServerStrategyOptions options = {});

  // A strategy of a cluster inside this process (in_process_ps.h): the
  // coordinator's (`coordinator` true: variables created in its scope are
  // made on the ps devices of `servers`) or a worker's (bound to them).
  // Run's replicas are options.devices (required) of options.platform
  // (default: the servers' platform); options.channel and ps_timeout are
  // not used. The coordinator schedules calls with RunOnWorkers, not a
  // ClusterCoordinator.
  static absl::StatusOr<std::unique_ptr<ParameterServerStrategy>>
  CreateInProcess(std::shared_ptr<InProcessParameterServers> servers,
                  bool coordinator, ParameterServerStrategyOptions options);

  std::string name() const override { return "ParameterServerStrategy"; }
  // Whether the cluster is inside this process (CreateInProcess).
  bool in_process() const { return in_process_ != nullptr; }
  // Whether this is the coordinator's strategy (Create), not a worker's.
  bool is_coordinator() const { return coordinator_; }

  // Worker tasks of a cluster of servers (0 in process) and ps tasks.
  int num_workers() const { return static_cast<int>(workers_.size()); }
  int num_ps() const { return static_cast<int>(ps_.size()); }
  // "host:port" of each worker and ps task, in task order (in process: no
  // workers, and the ps devices).
  const std::vector<std::string>& worker_targets() const { return workers_; }
  const std::vector<std::string>& ps_targets() const { return ps_; }
  const ChannelOptions& channel_options() const { return options_.channel; }

  // Strategy::CreateVariable: in the scope, a kRemote variable (see the
  // file comment); dtype and shape are the initial value's.
  using distribute::Strategy::CreateVariable;

  // Creates variable `name` with `initial` (a host tensor) on the ps tasks,
  // outside any scope, and says where it went (the coordinator's strategy
  // only). INVALID_ARGUMENT for an empty name, a tensor not in host memory,
  // or a partitioner that splits another axis than the first;
  // ALREADY_EXISTS when another variable has the name; UNAVAILABLE when a
  // ps task cannot be reached (creating it again then completes it);
  // FAILED_PRECONDITION on a worker's strategy or an in-process one.
  // Thread-safe.
  absl::StatusOr<Variable> CreateVariable(absl::string_view name,
                                          const devices::Tensor& initial);

  // Reads and updates variables from the coordinator (a cluster of
  // servers only: an in-process strategy's client reaches no server).
  PsClient& client() { return *client_; }

 private:
  friend class ParameterServerStrategyExtended;
  ParameterServerStrategy(
      std::unique_ptr<devices::Platform> owned_platform,
      std::unique_ptr<StrategyExtended> extended, bool coordinator,
      std::vector<std::string> workers, std::vector<std::string> ps,
      ParameterServerStrategyOptions options,
      std::shared_ptr<InProcessParameterServers> in_process);
  static absl::StatusOr<std::unique_ptr<ParameterServerStrategy>> Make(
      std::vector<std::string> workers, std::vector<std::string> ps,
      ParameterServerStrategyOptions options, bool coordinator,
      std::shared_ptr<InProcessParameterServers> in_process);

  // The location name of ps task `ps` (its device in process).
  std::string PsLocation(int ps) const;
  // The layout of a variable created in the scope: on the coordinator made
  // on the ps tasks, or bound to one they hold already of as many rows
  // (ALREADY_EXISTS for other rows); on a worker, bound by name.
  absl::StatusOr<Variable> MakeOrBind(const std::string& name,
                                      const devices::Tensor& initial,
                                      std::optional<int> first);
  // Where variable `name` of `dtype` and `shape` goes: its shards, whole on
  // ps task `first` (colocated), else from the next ps task of the
  // round-robin, which it advances; mu_ held.
  absl::StatusOr<Variable> Place(absl::string_view name, devices::DType dtype,
                                 const devices::Shape& shape,
                                 std::optional<int> first)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The ps-level creation, on ps task `first` (or round-robin).
  absl::StatusOr<Variable> CreateOnPs(absl::string_view name,
                                      const devices::Tensor& initial,
                                      std::optional<int> first);

  const bool coordinator_;
  const std::vector<std::string> workers_;
  const std::vector<std::string> ps_;
  const ParameterServerStrategyOptions options_;
  const std::shared_ptr<PsClient> client_;
  const std::shared_ptr<InProcessParameterServers> in_process_;
  absl::Mutex mu_;
  // The ps task of the next variable (or shard), round-robin.
  int next_ps_ ABSL_GUARDED_BY(mu_) = 0;
  // Unnamed variables created in the scope so far.
  int unnamed_ ABSL_GUARDED_BY(mu_) = 0;
};

// A function run on a worker: `ps` reaches the cluster's ps tasks.
using WorkerFunction =
    std::function<absl::StatusOr<std::vector<devices::Tensor>>(
        PsClient& ps, std::vector<devices::Tensor> args)>;

// On a worker task: registers `fn` as `name` on its server, for a
// ClusterCoordinator to schedule. Its PsClient reaches the ps tasks of the
// server's cluster with the server's channel options, each call bounded by
// `ps_timeout`. INVALID_ARGUMENT for an empty name or function, or a
// cluster without ps tasks; ALREADY_EXISTS for a name registered before.
absl::Status RegisterWorkerFunction(
    Server& server, absl::string_view name, WorkerFunction fn,
    absl::Duration ps_timeout = absl::Seconds(30));

namespace ps_internal {
// Worker functions are registered under this prefix: their wrapper always
// answers OK with {code, message, outputs...}, so that any failed call is
// the worker's (or the network's), never the function's.
inline constexpr char kWorkerPrefix[] = "__ps_worker.";
}  // namespace ps_internal

}  // namespace ps
}  // namespace distribute

#endif  // DISTRIBUTE_PS_PARAMETER_SERVER_STRATEGY_H_
