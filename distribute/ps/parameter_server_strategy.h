// ParameterServerStrategy, as TF's
// tf.distribute.experimental.ParameterServerStrategy, with the
// ClusterCoordinator of cluster_coordinator.h (TF's
// tf.distribute.experimental.coordinator.ClusterCoordinator): asynchronous
// training on a cluster of a coordinator, workers and parameter servers.
//
// The coordinator (the chief, or any client) creates the variables, which
// live on the ps tasks: whole and round-robin, or split by the strategy's
// variable partitioner into shards along the first axis, each shard on the
// next ps task (TF's placement). It then schedules functions on the
// workers: each scheduled call runs on whichever worker is free, and
// reads and updates the variables on the ps tasks through a PsClient;
// calls run independently of each other (no all-reduce, no lock step).
//
// TF traces a function on the coordinator and ships it to the workers; C++
// cannot ship code, so every worker registers its functions by name
// (RegisterWorkerFunction; every task runs the same binary) and the
// coordinator schedules them by name, with tensors as arguments. For the
// same reason this is not a distribute::Strategy: there is no Run on local
// replicas, only scheduling on remote workers.
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
// Example (coordinator):
//   auto strategy = *ParameterServerStrategy::Create(spec, options);
//   auto w = *strategy->CreateVariable("w", zeros);
//   auto coordinator = *ClusterCoordinator::Create(*strategy);
//   for (int i = 0; i < 100; ++i) coordinator->Schedule("train_step", {});
//   absl::Status s = coordinator->Join(absl::Minutes(5));
// Example (each worker task):
//   RegisterWorkerFunction(*server, "train_step",
//       [](PsClient& ps, std::vector<devices::Tensor> args)
//           -> absl::StatusOr<std::vector<devices::Tensor>> {
//         absl::StatusOr<devices::Tensor> w = ps.Read("w");
//         if (!w.ok()) return w.status();
//         devices::Tensor step = ...;   // from a gradient
//         absl::Status s = ps.AssignAdd("w", step);
//         if (!s.ok()) return s;
//         return std::vector<devices::Tensor>{};
//       });
#ifndef DISTRIBUTE_PS_PARAMETER_SERVER_STRATEGY_H_
#define DISTRIBUTE_PS_PARAMETER_SERVER_STRATEGY_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "devices/tensor.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/partitioners.h"
#include "distribute/ps/ps_client.h"
#include "distribute/server/channel.h"
#include "distribute/server/server.h"

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
};

// A variable on the ps tasks: its name, dtype, shape and shards.
struct Variable {
  std::string name;
  devices::DType dtype = devices::DType::kFloat32;
  devices::Shape shape;
  std::vector<ShardInfo> shards;
};

class ParameterServerStrategy {
 public:
  // For a cluster with jobs "worker" and "ps" (each at least one task; a
  // "chief" may be there too). INVALID_ARGUMENT naming what is missing.
  static absl::StatusOr<std::unique_ptr<ParameterServerStrategy>> Create(
      const cluster::ClusterSpec& cluster,
      ParameterServerStrategyOptions options = {});

  int num_workers() const { return static_cast<int>(workers_.size()); }
  int num_ps() const { return static_cast<int>(ps_.size()); }
  // "host:port" of each worker and ps task, in task order.
  const std::vector<std::string>& worker_targets() const { return workers_; }
  const std::vector<std::string>& ps_targets() const { return ps_; }
  const ChannelOptions& channel_options() const { return options_.channel; }

  // Creates variable `name` with `initial` (a host tensor) on the ps tasks
  // (see the file comment). INVALID_ARGUMENT for an empty name, a tensor not
  // in host memory, or a partitioner that splits another axis than the
  // first; ALREADY_EXISTS when another variable has the name; UNAVAILABLE
  // when a ps task cannot be reached (creating it again then completes it).
  // Thread-safe.
  absl::StatusOr<Variable> CreateVariable(absl::string_view name,
                                          const devices::Tensor& initial);

  // Reads and updates variables from the coordinator.
  PsClient& client() { return *client_; }

 private:
  ParameterServerStrategy(std::vector<std::string> workers,
                          std::vector<std::string> ps,
                          ParameterServerStrategyOptions options);

  const std::vector<std::string> workers_;
  const std::vector<std::string> ps_;
  const ParameterServerStrategyOptions options_;
  std::unique_ptr<PsClient> client_;
  absl::Mutex mu_;
  // The ps task of the next variable (or shard), round-robin.
  int next_ps_ ABSL_GUARDED_BY(mu_) = 0;
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
