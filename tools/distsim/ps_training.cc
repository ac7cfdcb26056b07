#include "tools/distsim/ps_training.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "devices/elementwise_kernels.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/input/dataset.h"
#include "distribute/input/element.h"
#include "distribute/input/input_context.h"
#include "distribute/models/adam.h"
#include "distribute/models/execution_context.h"
#include "distribute/models/losses.h"
#include "distribute/models/mlp.h"
#include "distribute/models/sgd.h"
#include "distribute/models/synthetic_data.h"
#include "distribute/ps/cluster_coordinator.h"
#include "distribute/ps/in_process_ps.h"
#include "distribute/ps/parameter_server_strategy.h"
#include "distribute/ps/per_worker_dataset.h"
#include "distribute/ps/ps_client.h"
#include "distribute/server/local_ports.h"
#include "distribute/server/remote_function_client.h"
#include "distribute/server/server.h"
#include "distribute/strategy.h"
#include "distribute/strategy_devices.h"
#include "distribute/variables.h"

namespace distsim {
namespace {

using devices::Tensor;
namespace ps = distribute::ps;
namespace models = distribute::models;

absl::StatusOr<std::unique_ptr<models::Optimizer>> MakePsOptimizer(
    const TrainOptions& options) {
  if (options.optimizer == "sgd") {
    ASSIGN_OR_RETURN(
        auto sgd, models::SGD::Create(options.learning_rate, options.momentum));
    return std::unique_ptr<models::Optimizer>(new models::SGD(sgd));
  }
  if (options.optimizer == "adam") {
    ASSIGN_OR_RETURN(auto adam, models::Adam::Create(options.learning_rate));
    return std::unique_ptr<models::Optimizer>(new models::Adam(adam));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown optimizer '", options.optimizer, "': use sgd or adam"));
}

std::string SlotName(const std::string& param, const std::string& slot) {
  return absl::StrCat(param, "/", slot);
}

// The model, optimizer and data every task of the cluster makes alike from
// the same options.
struct PsModel {
  std::shared_ptr<const models::Mlp> model;
  std::shared_ptr<const models::Optimizer> optimizer;
  std::vector<std::string> names;
  std::vector<std::string> slots;
  std::shared_ptr<models::ClassificationSource> data;
  int64_t examples = 0;
};

absl::StatusOr<PsModel> MakePsModel(const TrainOptions& options) {
  if (options.steps < 1 || options.global_batch < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter_server training needs positive steps (", options.steps,
        ") and batch (", options.global_batch, ")"));
  }
  std::vector<int64_t> sizes = {options.num_features};
  sizes.insert(sizes.end(), options.hidden.begin(), options.hidden.end());
  sizes.push_back(options.num_classes);
  ASSIGN_OR_RETURN(auto mlp, models::Mlp::Create(sizes));
  ASSIGN_OR_RETURN(auto optimizer, MakePsOptimizer(options));
  PsModel out;
  out.model = std::make_shared<const models::Mlp>(std::move(mlp));
  out.optimizer = std::move(optimizer);
  out.names = out.model->ParamNames();
  out.slots = out.optimizer->SlotNames();
  out.examples = options.num_examples > 0
                     ? options.num_examples
                     : options.steps * options.global_batch;
  ASSIGN_OR_RETURN(auto source, models::ClassificationSource::Create(
                                    out.examples, options.num_features,
                                    options.num_classes, options.seed + 1));
  out.data = std::make_shared<models::ClassificationSource>(source);
  return out;
}

// The model's variables and their optimizer slots, made in the strategy's
// scope in the same order on every task (on the ps tasks by the
// coordinator's strategy, bound to them by a worker's).
struct PsVariables {
  std::vector<std::shared_ptr<distribute::Variable>> params;
  std::vector<std::vector<std::shared_ptr<distribute::Variable>>> slots;
};

absl::StatusOr<PsVariables> MakeVariables(distribute::Strategy& strategy,
                                          const TrainOptions& options,
                                          const PsModel& m) {
  models::ExecutionContext host;
  ASSIGN_OR_RETURN(auto init, m.model->InitParams(host, options.seed));
  ASSIGN_OR_RETURN(auto scope, strategy.Scope());
  PsVariables out;
  for (size_t i = 0; i < m.names.size(); ++i) {
    distribute::VariableOptions param;
    param.name = m.names[i];
    ASSIGN_OR_RETURN(auto made, strategy.CreateVariable(init[i], param));
    out.params.push_back(std::move(made));
    ASSIGN_OR_RETURN(auto zeros,
                     m.optimizer->CreateSlotsForVariable(host, init[i]));
    out.slots.emplace_back();
    for (size_t k = 0; k < m.slots.size(); ++k) {
      distribute::VariableOptions slot;
      slot.name = SlotName(m.names[i], m.slots[k]);
      slot.trainable = false;
      // Every replica of a worker computes the same change of a slot (from
      // the all-reduced gradient); it is applied once.
      slot.aggregation = distribute::VariableAggregation::kOnlyFirstReplica;
      ASSIGN_OR_RETURN(auto made_slot, strategy.CreateVariable(zeros[k], slot));
      out.slots.back().push_back(std::move(made_slot));
    }
  }
  return out;
}

// Worker `id` of `workers`' input: its shard of the example indices,
// repeated, batched and made into examples.
absl::StatusOr<distribute::data::Dataset> WorkerBatches(
    const TrainOptions& o, std::shared_ptr<models::ClassificationSource> data,
    int64_t examples, int workers, int id) {
  ASSIGN_OR_RETURN(
      auto batches,
      distribute::data::Dataset::Range(examples).Shard(workers, id));
  ASSIGN_OR_RETURN(auto batched, batches.Repeat().Batch(o.global_batch));
  return batched.Map([o, data](distribute::data::Element e)
                         -> absl::StatusOr<distribute::data::Element> {
    const int64_t rows = e[0].num_elements();
    ASSIGN_OR_RETURN(auto x,
                     Tensor::Host(devices::DType::kFloat32,
                                  devices::Shape({rows, o.num_features})));
    ASSIGN_OR_RETURN(
        auto y, Tensor::Host(devices::DType::kInt32, devices::Shape({rows})));
    for (int64_t r = 0; r < rows; ++r) {
      y.data<int32_t>()[r] = data->Example(
          e[0].data<int64_t>()[r], x.data<float>() + r * o.num_features);
    }
    return distribute::data::Element{std::move(x), std::move(y)};
  });
}

// One training step on a worker, written against the Strategy API: Run
// over the worker's replicas on `batch` (features, labels), the gradients
// all-reduced among them, the optimizer applied to each variable through
// extended().Update (its slots on copies, whose change is added to theirs
// on the ps tasks); the loss reduced over the replicas.
absl::StatusOr<Tensor> PsTrainStep(distribute::Strategy& worker,
                                   const PsVariables& vars, const PsModel& m,
                                   const TrainOptions& o,
                                   const distribute::data::Element& batch,
                                   int64_t step) {
  // The batch's rows split evenly over the worker's replicas (the first
  // ones take a row more when they do not divide); every replica's loss
  // and gradient are scaled by the global batch, so their sum is the
  // batch's.
  ASSIGN_OR_RETURN(
      auto args, [&]() -> absl::StatusOr<std::vector<distribute::RunArg>> {
        const int replicas = worker.NumReplicasInSync();
        std::vector<distribute::RunArg> out;
        if (replicas == 1) {
          for (size_t c = 0; c < 2; ++c) {
            out.emplace_back(std::in_place_type<Tensor>, batch[c]);
          }
          return out;
        }
        const int64_t rows = batch[0].shape().dim(0);
        std::vector<distribute::data::Element> parts;
        for (int r = 0; r < replicas; ++r) {
          const int64_t begin = rows * r / replicas;
          const int64_t end = rows * (r + 1) / replicas;
          ASSIGN_OR_RETURN(auto part,
                           distribute::data::SliceElement(batch, begin, end));
          parts.push_back(std::move(part));
        }
        for (size_t c = 0; c < 2; ++c) {
          ASSIGN_OR_RETURN(auto value,
                           worker.ExperimentalDistributeValuesFromFunction(
                               [&](const distribute::ValueContext& ctx)
                                   -> absl::StatusOr<Tensor> {
                                 return parts[static_cast<size_t>(
                                     ctx.replica_id_in_sync_group())][c];
                               }));
          out.emplace_back(std::in_place_type<distribute::DistributedValues>,
                           std::move(value));
        }
        return out;
      }());
  ASSIGN_OR_RETURN(
      auto out,
      worker.Run(
          [&](distribute::ReplicaContext& ctx, const std::vector<Tensor>& a)
              -> absl::StatusOr<std::vector<Tensor>> {
            absl::Status charge;
            models::ExecutionContext exec = ReplicaExecution(ctx, &charge);
            std::vector<Tensor> params;
            for (const auto& v : vars.params) {
              ASSIGN_OR_RETURN(auto value, v->Read());
              params.push_back(std::move(value));
            }
            ASSIGN_OR_RETURN(auto acts, m.model->Forward(exec, params, a[0]));
            ASSIGN_OR_RETURN(auto loss,
                             models::SparseSoftmaxCrossEntropyLoss(
                                 exec, acts.logits, a[1], o.global_batch));
            ASSIGN_OR_RETURN(auto grads, m.model->Backward(exec, params, acts,
                                                           loss.dlogits));
            RETURN_IF_ERROR(charge);
            ASSIGN_OR_RETURN(auto reduced,
                             ctx.AllReduce(distribute::ReduceOp::kSum, grads));
            for (size_t i = 0; i < vars.params.size(); ++i) {
              // The optimizer on copies of the slots; what it changed in them
              // is added on the ps tasks, as the variable's update.
              std::vector<Tensor> before, slots;
              for (const auto& slot : vars.slots[i]) {
                ASSIGN_OR_RETURN(auto read, slot->Read());
                ASSIGN_OR_RETURN(
                    auto value,
                    devices::ToHostTensor(worker.extended().platform(), read));
                ASSIGN_OR_RETURN(auto copy,
                                 Tensor::Host(value.dtype(), value.shape()));
                if (value.bytes() > 0) {
                  std::memcpy(copy.raw_data(), value.raw_data(), value.bytes());
                }
                before.push_back(std::move(value));
                slots.push_back(std::move(copy));
              }
              RETURN_IF_ERROR(worker.extended().Update(
                  *vars.params[i],
                  [&](Tensor& w, const std::vector<Tensor>& g) {
                    return m.optimizer->ApplyToVariable(
                        exec, w, g[0], absl::MakeSpan(slots), step);
                  },
                  {reduced[i]}));
              for (size_t k = 0; k < slots.size(); ++k) {
                ASSIGN_OR_RETURN(auto delta, Tensor::Host(slots[k].dtype(),
                                                          slots[k].shape()));
                ASSIGN_OR_RETURN(auto sub,
                                 devices::Sub(slots[k], before[k], delta));
                RETURN_IF_ERROR(vars.slots[i][k]->AssignAdd(delta));
              }
            }
            RETURN_IF_ERROR(charge);
            return std::vector<Tensor>{loss.loss};
          },
          args));
  return worker.Reduce(distribute::ReduceOp::kSum, out[0]);
}

// A worker task's functions: its input pipeline ("batches": its shard of
// the example indices) and "train_step".
absl::Status RegisterWorker(distribute::Server& server,
                            const TrainOptions& options, const PsModel& m) {
  distribute::Server* self = &server;
  const TrainOptions o = options;
  const std::shared_ptr<models::ClassificationSource> data = m.data;
  const int64_t examples = m.examples;
  RETURN_IF_ERROR(ps::RegisterWorkerDataset(
      *self, "batches",
      [o, data, examples](const distribute::InputContext& ctx)
          -> absl::StatusOr<distribute::data::Dataset> {
        return WorkerBatches(o, data, examples, ctx.num_input_pipelines(),
                             ctx.input_pipeline_id());
      }));
  // The worker's strategy, bound to the coordinator's variables, lives as
  // long as the function that uses it.
  ASSIGN_OR_RETURN(auto strategy,
                   ps::ParameterServerStrategy::CreateForWorker(server));
  std::shared_ptr<ps::ParameterServerStrategy> worker = std::move(strategy);
  auto vars = MakeVariables(*worker, options, m);
  RETURN_IF_ERROR(vars.status());
  return ps::RegisterWorkerFunction(
      *self, "train_step",
      [self, o, m, worker, vars = *std::move(vars)](
          ps::PsClient&,
          std::vector<Tensor> args) -> absl::StatusOr<std::vector<Tensor>> {
        ASSIGN_OR_RETURN(auto batch, ps::NextElement(*self, args[0]));
        if (!batch.has_value()) {
          return absl::OutOfRangeError("the worker's data ended");
        }
        const int64_t step = args[1].data<int64_t>()[0];
        ASSIGN_OR_RETURN(auto loss,
                         PsTrainStep(*worker, vars, m, o, *batch, step));
        return std::vector<Tensor>{std::move(loss)};
      });
}

// The coordinator's part: variables and slots on the ps tasks, the steps
// scheduled on the workers, the trained weights read back.
absl::StatusOr<TrainResult> Coordinate(
    const TrainOptions& options, const PsModel& m,
    const distribute::cluster::ClusterSpec& spec,
    const distribute::ChannelOptions& channel, const StepCallback& on_step) {
  ps::ParameterServerStrategyOptions strategy_options;
  strategy_options.channel = channel;
  ASSIGN_OR_RETURN(auto strategy,
                   ps::ParameterServerStrategy::Create(spec, strategy_options));
  ASSIGN_OR_RETURN(auto vars, MakeVariables(*strategy, options, m));
  ASSIGN_OR_RETURN(auto coordinator, ps::ClusterCoordinator::Create(*strategy));
  ASSIGN_OR_RETURN(auto iterator,
                   coordinator->CreatePerWorkerDataset("batches"));
  std::vector<ps::RemoteValue> losses;
  for (int64_t step = 0; step < options.steps; ++step) {
    ASSIGN_OR_RETURN(
        auto value,
        (coordinator)
            ->Schedule("train_step", {iterator.handle(),
                                      Tensor::FromVector<int64_t>({step})}));
    losses.push_back(std::move(value));
  }
  TrainResult result;
  for (int64_t step = 0; step < options.steps; ++step) {
    ASSIGN_OR_RETURN(auto loss, losses[static_cast<size_t>(step)].Get());
    StepReport report;
    report.step = step + 1;
    report.loss = static_cast<double>(loss[0].data<float>()[0]);
    if (!result.initial_loss.has_value()) result.initial_loss = report.loss;
    result.final_loss = report.loss;
    if (on_step) {
      RETURN_IF_ERROR(on_step(report));
    }
  }
  RETURN_IF_ERROR(coordinator->Join(absl::InfiniteDuration()));
  for (const auto& v : vars.params) {
    ASSIGN_OR_RETURN(auto w, v->Read());
    result.weights.push_back(std::move(w));
  }
  result.weights_checksum = WeightsChecksum(result.weights);
  return result;
}

// Functions every worker and ps task of a cluster of processes serves for
// the chief: "ready" answers once the task's functions are registered,
// with the task's training flags, "shutdown" ends the task.
constexpr char kReadyFunction[] = "distsim/ps_task_ready";
constexpr char kShutdownFunction[] = "distsim/ps_task_shutdown";

// TrainingFlags as "flag=value" lines in a uint8 tensor, and back.
Tensor EncodeFlags(const TrainOptions& options) {
  std::string text;
  for (const auto& [flag, value] : TrainingFlags(options)) {
    absl::StrAppend(&text, flag, "=", value, "\n");
  }
  return Tensor::FromVector<uint8_t>(
      std::vector<uint8_t>(text.begin(), text.end()));
}

// OK when the task's flags (`answer`, its ready call's) are the chief's;
// FAILED_PRECONDITION naming the first flag that differs otherwise.
absl::Status CheckSameFlags(const TrainOptions& options,
                            const std::vector<Tensor>& answer,
                            absl::string_view task) {
  if (answer.size() != 1 || answer[0].dtype() != devices::DType::kUInt8) {
    return absl::InternalError(
        absl::StrCat(task, " answered its ready call without its flags"));
  }
  const uint8_t* bytes = answer[0].data<uint8_t>();
  const std::string theirs(bytes, bytes + answer[0].num_elements());
  for (const auto& [flag, value] : TrainingFlags(options)) {
    const std::string mine = absl::StrCat(flag, "=", value);
    bool found = false;
    for (absl::string_view line : absl::StrSplit(theirs, '\n')) {
      if (line == mine) found = true;
      if (found || !absl::StartsWith(line, absl::StrCat(flag, "="))) continue;
      return absl::FailedPreconditionError(absl::StrCat(
          task, " was started with ", line, " where the chief has ", mine,
          "; start every task of the cluster with the same training flags"));
    }
    if (!found) {
      return absl::FailedPreconditionError(
          absl::StrCat(task, " does not say its ", flag,
                       "; start every task of the "
                       "cluster with the same distsim binary"));
    }
  }
  return absl::OkStatus();
}

// Ends every task (name, target) that answers.
void StopTasks(distribute::RemoteFunctionClient& client,
               const std::vector<std::pair<std::string, std::string>>& tasks,
               const std::function<void(const std::string&)>& log) {
  for (const auto& [name, target] : tasks) {
    absl::StatusOr<std::vector<Tensor>> stopped =
        client.Call(target, kShutdownFunction, {}, absl::Seconds(10));
    if (!stopped.ok() && log) {
      log(absl::StrCat("could not end ", name, " at ", target, ": ",
                       stopped.status().message()));
    }
  }
}

}  // namespace

absl::StatusOr<TrainResult> TrainClassifierOnSimulatedParameterServers(
    const TrainOptions& options, devices::Platform& platform, int workers,
    int num_ps, const StepCallback& on_step,
    std::vector<std::string>* replica_devices) {
  ASSIGN_OR_RETURN(PsModel m, MakePsModel(options));
  ASSIGN_OR_RETURN(auto tasks, distribute::DevicesByTask(platform));
  const int hosts = static_cast<int>(tasks.size());
  if (workers < 1 || num_ps < 1 || workers + num_ps > hosts) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter_server on platform ", platform.name(),
                     " puts each of ", workers, " worker(s) and ", num_ps,
                     " ps task(s) on a host of its own, but it has ", hosts,
                     " host(s): pick a topology with more hosts (e.g. "
                     "sim:dgx_h100_cluster:",
                     std::max(workers, 1) + std::max(num_ps, 1),
                     ") or lower --num_workers / --num_ps"));
  }
  // A task's host device: its CPU, else its first GPU.
  auto host_of = [&](int task) -> absl::StatusOr<std::string> {
    const distribute::TaskDeviceGroup& t = tasks[static_cast<size_t>(task)];
    if (!t.cpus.empty()) return t.cpus[0];
    if (!t.gpus.empty()) return t.gpus[0];
    return absl::InvalidArgumentError(absl::StrCat(
        "host ", task, " of platform ", platform.name(), " has no device"));
  };
  std::vector<std::string> ps_devices;
  for (int p = 0; p < num_ps; ++p) {
    ASSIGN_OR_RETURN(auto device, host_of(workers + p));
    ps_devices.push_back(std::move(device));
  }
  ASSIGN_OR_RETURN(auto servers,
                   ps::InProcessParameterServers::Create(platform, ps_devices));
  ps::ParameterServerStrategyOptions strategy_options;
  ASSIGN_OR_RETURN(auto chief_device, host_of(0));
  strategy_options.devices = {chief_device};
  ASSIGN_OR_RETURN(auto coordinator,
                   ps::ParameterServerStrategy::CreateInProcess(
                       servers, /*coordinator=*/true, strategy_options));
  ASSIGN_OR_RETURN(auto vars, MakeVariables(*coordinator, options, m));

  std::vector<std::unique_ptr<ps::ParameterServerStrategy>> strategies;
  std::vector<PsVariables> worker_vars;
  std::vector<std::unique_ptr<distribute::data::Iterator>> inputs;
  std::vector<devices::Device*> threads;
  for (int w = 0; w < workers; ++w) {
    // A worker's replicas are its host's GPUs, else its CPU (TF's).
    std::vector<std::string> replicas = tasks[static_cast<size_t>(w)].gpus;
    if (replicas.empty()) {
      ASSIGN_OR_RETURN(auto cpu, host_of(w));
      replicas = {cpu};
    }
    if (replica_devices != nullptr) {
      replica_devices->insert(replica_devices->end(), replicas.begin(),
                              replicas.end());
    }
    strategy_options.devices = replicas;
    ASSIGN_OR_RETURN(auto strategy,
                     ps::ParameterServerStrategy::CreateInProcess(
                         servers, /*coordinator=*/false, strategy_options));
    ASSIGN_OR_RETURN(auto bound, MakeVariables(*strategy, options, m));
    ASSIGN_OR_RETURN(auto batches,
                     WorkerBatches(options, m.data, m.examples, workers, w));
    std::unique_ptr<distribute::data::Iterator> iterator =
        batches.MakeIterator();
    ASSIGN_OR_RETURN(auto host, host_of(w));
    ASSIGN_OR_RETURN(auto thread, platform.FindDevice(host));
    strategies.push_back(std::move(strategy));
    worker_vars.push_back(std::move(bound));
    inputs.push_back(std::move(iterator));
    threads.push_back(thread);
  }
  std::vector<std::optional<double>> losses(static_cast<size_t>(options.steps));
  RETURN_IF_ERROR(ps::RunOnWorkers(
      threads, options.steps, [&](int w, int64_t step) -> absl::Status {
        const size_t k = static_cast<size_t>(w);
        ASSIGN_OR_RETURN(auto batch, inputs[k]->GetNext());
        if (!batch.has_value()) {
          return absl::OutOfRangeError("the worker's data ended");
        }
        ASSIGN_OR_RETURN(auto loss, PsTrainStep(*strategies[k], worker_vars[k],
                                                m, options, *batch, step));
        if (loss.has_data()) {
          losses[static_cast<size_t>(step)] =
              static_cast<double>(loss.data<float>()[0]);
        }
        return absl::OkStatus();
      }));
  TrainResult result;
  for (int64_t step = 0; step < options.steps; ++step) {
    StepReport report;
    report.step = step + 1;
    report.loss = losses[static_cast<size_t>(step)];
    if (report.loss.has_value()) {
      if (!result.initial_loss.has_value()) result.initial_loss = report.loss;
      result.final_loss = report.loss;
    }
    if (on_step) {
      RETURN_IF_ERROR(on_step(report));
    }
  }
  for (const auto& v : vars.params) {
    ASSIGN_OR_RETURN(auto w, v->Read());
    ASSIGN_OR_RETURN(auto host, devices::ToHostTensor(platform, w));
    result.weights.push_back(std::move(host));
  }
  result.weights_checksum = WeightsChecksum(result.weights);
  return result;
}

absl::StatusOr<TrainResult> TrainClassifierOnParameterServers(
    const TrainOptions& options, int workers, int num_ps,
    const StepCallback& on_step) {
  if (workers < 1 || num_ps < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter_server training needs at least one worker (",
                     workers, ") and one ps task (", num_ps, ")"));
  }
  ASSIGN_OR_RETURN(PsModel m, MakePsModel(options));

  // The cluster: servers of this process.
  ASSIGN_OR_RETURN(std::vector<int> ports,
                   distribute::UnusedLocalPorts(workers + num_ps));
  std::vector<std::string> worker_addresses, ps_addresses;
  for (int i = 0; i < workers + num_ps; ++i) {
    (i < workers ? worker_addresses : ps_addresses)
        .push_back(absl::StrCat("127.0.0.1:", ports[static_cast<size_t>(i)]));
  }
  ASSIGN_OR_RETURN(auto spec,
                   distribute::cluster::ClusterSpec::Create(
                       {{"worker", worker_addresses}, {"ps", ps_addresses}}));
  std::vector<std::unique_ptr<distribute::Server>> servers;
  for (int w = 0; w < workers; ++w) {
    ASSIGN_OR_RETURN(auto server,
                     distribute::Server::Create(spec, "worker", w));
    RETURN_IF_ERROR(RegisterWorker(*server, options, m));
    servers.push_back(std::move(server));
  }
  // The stores live as long as their servers serve (the registry holds
  // them weakly).
  std::vector<std::shared_ptr<ps::VariableStore>> stores;
  for (int p = 0; p < num_ps; ++p) {
    ASSIGN_OR_RETURN(auto server, distribute::Server::Create(spec, "ps", p));
    ASSIGN_OR_RETURN(auto store,
                     ps::VariableStore::Install(server->function_registry()));
    stores.push_back(std::move(store));
    servers.push_back(std::move(server));
  }
  for (auto& server : servers) {
    RETURN_IF_ERROR(server->Start());
  }
  absl::StatusOr<TrainResult> result =
      Coordinate(options, m, spec, {}, on_step);
  for (auto& server : servers) server->Stop();
  return result;
}

absl::Status ServeParameterServerTask(
    const TrainOptions& options, const distribute::cluster::ClusterSpec& spec,
    const std::string& task_type, int task_index,
    const distribute::ServerOptions& server_options,
    const std::function<void(const std::string&)>& log) {
  if (task_type != "worker" && task_type != "ps") {
    return absl::InvalidArgumentError(absl::StrCat(
        "a parameter-server cluster's tasks are chief, worker and ps; this "
        "one is '",
        task_type, "'"));
  }
  ASSIGN_OR_RETURN(PsModel m, MakePsModel(options));
  distribute::ServerOptions start_later = server_options;
  start_later.start = false;
  ASSIGN_OR_RETURN(auto server, distribute::Server::Create(
                                    spec, task_type, task_index, start_later));
  std::shared_ptr<ps::VariableStore> store;
  if (task_type == "worker") {
    RETURN_IF_ERROR(RegisterWorker(*server, options, m));
  } else {
    ASSIGN_OR_RETURN(auto installed,
                     ps::VariableStore::Install(server->function_registry()));
    store = std::move(installed);
  }
  auto done = std::make_shared<absl::Notification>();
  // Shutdown calls may come at once (a retried call): one notifies.
  auto once = std::make_shared<absl::once_flag>();
  const Tensor flags = EncodeFlags(options);
  absl::Status registered = server->function_registry().Register(
      kReadyFunction,
      [flags](std::vector<Tensor>) -> absl::StatusOr<std::vector<Tensor>> {
        return std::vector<Tensor>{flags};
      });
  RETURN_IF_ERROR(registered);
  registered = server->function_registry().Register(
      kShutdownFunction,
      [done, once](std::vector<Tensor>) -> absl::StatusOr<std::vector<Tensor>> {
        absl::call_once(*once, [&] { done->Notify(); });
        return std::vector<Tensor>{};
      });
  RETURN_IF_ERROR(registered);
  RETURN_IF_ERROR(server->Start());
  if (log) {
    log(absl::StrCat(task_type, " ", task_index, " serving at ",
                     server->target(), " until the chief is done"));
  }
  done->WaitForNotification();
  // Stop lets calls in flight (the chief's shutdown call) finish first.
  server->Stop();
  return absl::OkStatus();
}

absl::StatusOr<TrainResult> CoordinateParameterServerTraining(
    const TrainOptions& options, const distribute::cluster::ClusterSpec& spec,
    const distribute::ChannelOptions& channel, absl::Duration startup_timeout,
    const StepCallback& on_step,
    const std::function<void(const std::string&)>& log) {
  ASSIGN_OR_RETURN(PsModel m, MakePsModel(options));
  std::vector<std::pair<std::string, std::string>> tasks;  // (name, target)
  for (const std::string& job : {std::string("worker"), std::string("ps")}) {
    absl::StatusOr<std::vector<int64_t>> indices = spec.task_indices(job);
    if (!spec.has_job(job) || !indices.ok() || indices->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("the parameter-server cluster has no ", job,
                       " tasks; give TF_CONFIG's cluster a \"", job, "\" job"));
    }
    for (const int64_t i : *indices) {
      ASSIGN_OR_RETURN(std::string target, spec.task_address(job, i));
      tasks.emplace_back(absl::StrCat(job, " ", i), target);
    }
  }
  // Every task up, and started with the chief's flags, before the
  // variables go to the ps tasks. A task that differs is reported once
  // every task is up, so that all of them can be ended.
  distribute::RemoteFunctionClient client(channel);
  const absl::Time deadline = absl::Now() + startup_timeout;
  std::vector<std::pair<std::string, std::string>> up;
  absl::Status startup;
  for (const auto& [name, target] : tasks) {
    absl::Time next_report = absl::Now() + absl::Seconds(5);
    while (true) {
      // Each try bounded by what is left of the startup time.
      const absl::Duration left =
          std::max(absl::Milliseconds(1), deadline - absl::Now());
      absl::StatusOr<std::vector<Tensor>> ready = client.Call(
          target, kReadyFunction, {}, std::min(absl::Seconds(5), left));
      if (ready.ok()) {
        up.emplace_back(name, target);
        absl::Status same = CheckSameFlags(options, *ready, name);
        if (startup.ok()) startup = same;
        break;
      }
      if (ready.status().code() != absl::StatusCode::kUnavailable &&
          ready.status().code() != absl::StatusCode::kDeadlineExceeded) {
        StopTasks(client, up, log);
        return absl::Status(
            ready.status().code(),
            absl::StrCat(name, " at ", target, ": ", ready.status().message()));
      }
      if (absl::Now() >= deadline) {
        StopTasks(client, up, log);
        return absl::DeadlineExceededError(absl::StrCat(
            name, " at ", target, " did not come up within ",
            absl::FormatDuration(startup_timeout),
            "; start every task of TF_CONFIG's cluster (",
            "distsim train --strategy=parameter_server with its TF_CONFIG)"));
      }
      if (log && absl::Now() >= next_report) {
        log(absl::StrCat("waiting for ", name, " at ", target));
        next_report = absl::Now() + absl::Seconds(5);
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
  }
  if (!startup.ok()) {
    StopTasks(client, tasks, log);
    return startup;
  }
  absl::StatusOr<TrainResult> result =
      Coordinate(options, m, spec, channel, on_step);
  // The tasks end with the job, whether it succeeded or not.
  StopTasks(client, tasks, log);
  return result;
}

}  // namespace distsim
