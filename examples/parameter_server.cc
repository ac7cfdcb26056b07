// Asynchronous training with ParameterServerStrategy and ClusterCoordinator
// (TF's tf.distribute.experimental.ParameterServerStrategy): w in y = w x
// is created in the strategy's scope and lives on a ps task; two workers
// each run "train_step" on the batches the coordinator (this program's main
// thread) schedules, whichever worker is free: the step runs the replica
// function with Strategy::Run on the worker's device, reads w and applies
// its update to the ps without waiting for the other worker.
//
//   bazel run //examples:parameter_server
//
// Every task here is a gRPC server of this process on 127.0.0.1; in a real
// cluster each runs in its own process (TF_CONFIG's "worker" and "ps"
// jobs). Each task builds the model alike (MakeModel): on the coordinator
// that makes w on the ps, on a worker it binds to it. C++ cannot ship a
// function to a worker, so each worker registers "train_step" and the
// coordinator schedules it by name. The learned w is printed; the data's
// is 3.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/ps/cluster_coordinator.h"
#include "distribute/ps/parameter_server_strategy.h"
#include "distribute/ps/ps_client.h"
#include "distribute/server/local_ports.h"
#include "distribute/server/server.h"
#include "distribute/strategy.h"
#include "distribute/variables.h"

namespace {

using devices::Tensor;

constexpr int kWorkers = 2;
constexpr int kExamples = 64;
constexpr int kBatch = 16;
constexpr int kEpochs = 40;
constexpr float kLearningRate = 0.5f;

// The model, made alike on every task in its strategy's scope.
absl::StatusOr<std::shared_ptr<distribute::Variable>> MakeModel(
    distribute::Strategy& strategy) {
  ASSIGN_OR_RETURN(auto scope, strategy.Scope());
  distribute::VariableOptions options;
  options.name = "w";
  return strategy.CreateVariable(Tensor::FromVector<float>({0.0f}), options);
}

// A worker's "train_step": one gradient step of y = w x on the batch it is
// given, applied to w on the ps.
absl::Status RegisterTrainStep(distribute::Server& server) {
  absl::StatusOr<std::shared_ptr<distribute::ps::ParameterServerStrategy>>
      strategy =
          distribute::ps::ParameterServerStrategy::CreateForWorker(server);
  RETURN_IF_ERROR(strategy.status());
  auto w = MakeModel(**strategy);
  RETURN_IF_ERROR(w.status());
  return distribute::ps::RegisterWorkerFunction(
      server, "train_step",
      [strategy = *strategy, w = *w](
          distribute::ps::PsClient&,
          std::vector<Tensor> batch) -> absl::StatusOr<std::vector<Tensor>> {
        ASSIGN_OR_RETURN(
            auto out,
            strategy->Run(
                [&](distribute::ReplicaContext&, const std::vector<Tensor>& xy)
                    -> absl::StatusOr<std::vector<Tensor>> {
                  ASSIGN_OR_RETURN(Tensor now, w->Read());
                  const float wv = now.data<float>()[0];
                  const float* x = xy[0].data<float>();
                  const float* y = xy[1].data<float>();
                  float grad = 0;
                  for (int64_t i = 0; i < xy[0].num_elements(); ++i) {
                    grad += 2 * (wv * x[i] - y[i]) * x[i];
                  }
                  RETURN_IF_ERROR(w->AssignSub(Tensor::FromVector<float>(
                      {kLearningRate * grad / xy[0].num_elements()})));
                  return std::vector<Tensor>{};
                },
                {batch[0], batch[1]}));
        return std::vector<Tensor>{};
      });
}

absl::StatusOr<float> Train() {
  // The cluster: workers and one ps task, each a server on a free port.
  ASSIGN_OR_RETURN(std::vector<int> ports,
                   distribute::UnusedLocalPorts(kWorkers + 1));
  std::vector<std::string> workers, ps;
  for (int i = 0; i <= kWorkers; ++i) {
    (i < kWorkers ? workers : ps)
        .push_back(absl::StrCat("127.0.0.1:", ports[static_cast<size_t>(i)]));
  }
  ASSIGN_OR_RETURN(auto spec, distribute::cluster::ClusterSpec::Create(
                                  {{"worker", workers}, {"ps", ps}}));
  std::vector<std::unique_ptr<distribute::Server>> servers;
  for (int i = 0; i < kWorkers; ++i) {
    ASSIGN_OR_RETURN(auto server,
                     distribute::Server::Create(spec, "worker", i));
    RETURN_IF_ERROR(RegisterTrainStep(*server));
    servers.push_back(std::move(server));
  }
  ASSIGN_OR_RETURN(auto ps_server, distribute::Server::Create(spec, "ps", 0));
  ASSIGN_OR_RETURN(auto store, distribute::ps::VariableStore::Install(
                                   ps_server->function_registry()));
  servers.push_back(std::move(ps_server));
  for (auto& server : servers) {
    RETURN_IF_ERROR(server->Start());
  }

  // The coordinator: the variable on the ps, then the steps, scheduled.
  ASSIGN_OR_RETURN(auto strategy,
                   distribute::ps::ParameterServerStrategy::Create(spec));
  ASSIGN_OR_RETURN(auto w, MakeModel(*strategy));
  ASSIGN_OR_RETURN(auto coordinator,
                   distribute::ps::ClusterCoordinator::Create(*strategy));
  for (int epoch = 0; epoch < kEpochs; ++epoch) {
    for (int start = 0; start < kExamples; start += kBatch) {
      std::vector<float> xs, ys;
      for (int i = start; i < start + kBatch; ++i) {
        xs.push_back(static_cast<float>(i) / kExamples);
        ys.push_back(3.0f * xs.back());
      }
      ASSIGN_OR_RETURN(auto call,
                       (coordinator)
                           ->Schedule("train_step", {Tensor::FromVector(xs),
                                                     Tensor::FromVector(ys)}));
    }
  }
  RETURN_IF_ERROR(coordinator->Join(absl::Minutes(5)));
  ASSIGN_OR_RETURN(Tensor learned, w->Read());
  return learned.data<float>()[0];
}

}  // namespace

int main() {
  absl::StatusOr<float> w = Train();
  if (!w.ok()) {
    std::fprintf(stderr, "parameter_server: %s\n",
                 w.status().ToString().c_str());
    return 1;
  }
  std::printf("w = %.6f\n", *w);
  return 0;
}
