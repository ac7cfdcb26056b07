#include "tools/distsim/ps_training.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "devices/elementwise_kernels.h"
#include "devices/tensor.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/input/dataset.h"
#include "distribute/models/adam.h"
#include "distribute/models/execution_context.h"
#include "distribute/models/losses.h"
#include "distribute/models/mlp.h"
#include "distribute/models/sgd.h"
#include "distribute/models/synthetic_data.h"
#include "distribute/ps/cluster_coordinator.h"
#include "distribute/ps/parameter_server_strategy.h"
#include "distribute/ps/per_worker_dataset.h"
#include "distribute/ps/ps_client.h"
#include "distribute/server/server.h"

namespace distsim {
namespace {

using devices::Tensor;
namespace ps = distribute::ps;
namespace models = distribute::models;

absl::StatusOr<int> FreePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  const bool ok =
      bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  close(fd);
  if (!ok) return absl::UnavailableError("no free port on 127.0.0.1");
  return static_cast<int>(ntohs(addr.sin_port));
}

absl::StatusOr<std::unique_ptr<models::Optimizer>> MakePsOptimizer(
    const TrainOptions& options) {
  if (options.optimizer == "sgd") {
    auto sgd = models::SGD::Create(options.learning_rate, options.momentum);
    if (!sgd.ok()) return sgd.status();
    return std::unique_ptr<models::Optimizer>(new models::SGD(*sgd));
  }
  if (options.optimizer == "adam") {
    auto adam = models::Adam::Create(options.learning_rate);
    if (!adam.ok()) return adam.status();
    return std::unique_ptr<models::Optimizer>(new models::Adam(*adam));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown optimizer '", options.optimizer, "': use sgd or adam"));
}

std::string SlotName(const std::string& param, const std::string& slot) {
  return absl::StrCat(param, "/", slot);
}

}  // namespace

absl::StatusOr<TrainResult> TrainClassifierOnParameterServers(
    const TrainOptions& options, int workers, int num_ps,
    const StepCallback& on_step) {
  if (workers < 1 || num_ps < 1 || options.steps < 1 ||
      options.global_batch < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "parameter_server training needs at least one worker (", workers,
        ") and one ps task (", num_ps, "), and positive steps and batch"));
  }
  std::vector<int64_t> sizes = {options.num_features};
  sizes.insert(sizes.end(), options.hidden.begin(), options.hidden.end());
  sizes.push_back(options.num_classes);
  auto mlp = models::Mlp::Create(sizes);
  if (!mlp.ok()) return mlp.status();
  auto optimizer = MakePsOptimizer(options);
  if (!optimizer.ok()) return optimizer.status();
  const std::shared_ptr<const models::Mlp> model =
      std::make_shared<const models::Mlp>(*std::move(mlp));
  const std::shared_ptr<const models::Optimizer> opt = *std::move(optimizer);
  const std::vector<std::string> names = model->ParamNames();
  const std::vector<std::string> slots = opt->SlotNames();
  const int64_t examples = options.num_examples > 0
                               ? options.num_examples
                               : options.steps * options.global_batch;
  auto source = models::ClassificationSource::Create(
      examples, options.num_features, options.num_classes, options.seed + 1);
  if (!source.ok()) return source.status();
  const auto data = std::make_shared<models::ClassificationSource>(*source);

  // The cluster: servers of this process.
  std::vector<std::string> worker_addresses, ps_addresses;
  for (int i = 0; i < workers + num_ps; ++i) {
    absl::StatusOr<int> port = FreePort();
    if (!port.ok()) return port.status();
    (i < workers ? worker_addresses : ps_addresses)
        .push_back(absl::StrCat("127.0.0.1:", *port));
  }
  auto spec = distribute::cluster::ClusterSpec::Create(
      {{"worker", worker_addresses}, {"ps", ps_addresses}});
  if (!spec.ok()) return spec.status();
  std::vector<std::unique_ptr<distribute::Server>> servers;
  const TrainOptions o = options;
  for (int w = 0; w < workers; ++w) {
    auto server = distribute::Server::Create(*spec, "worker", w);
    if (!server.ok()) return server.status();
    distribute::Server* self = server->get();
    // This worker's batches: its shard of the example indices.
    absl::Status registered = ps::RegisterWorkerDataset(
        *self, "batches",
        [o, data, examples](const distribute::InputContext& ctx)
            -> absl::StatusOr<distribute::data::Dataset> {
          auto batches = distribute::data::Dataset::Range(examples).Shard(
              ctx.num_input_pipelines(), ctx.input_pipeline_id());
          if (!batches.ok()) return batches.status();
          auto batched = batches->Repeat().Batch(o.global_batch);
          if (!batched.ok()) return batched.status();
          return batched->Map([o, data](distribute::data::Element e)
                                  -> absl::StatusOr<distribute::data::Element> {
            const int64_t rows = e[0].num_elements();
            auto x = Tensor::Host(devices::DType::kFloat32,
                                  devices::Shape({rows, o.num_features}));
            if (!x.ok()) return x.status();
            auto y =
                Tensor::Host(devices::DType::kInt32, devices::Shape({rows}));
            if (!y.ok()) return y.status();
            for (int64_t r = 0; r < rows; ++r) {
              y->data<int32_t>()[r] =
                  data->Example(e[0].data<int64_t>()[r],
                                x->data<float>() + r * o.num_features);
            }
            return distribute::data::Element{*std::move(x), *std::move(y)};
          });
        });
    if (!registered.ok()) return registered;
    registered = ps::RegisterWorkerFunction(
        *self, "train_step",
        [self, o, model, opt, names, slots](
            ps::PsClient& client,
            std::vector<Tensor> args) -> absl::StatusOr<std::vector<Tensor>> {
          auto batch = ps::NextElement(*self, args[0]);
          if (!batch.ok()) return batch.status();
          if (!batch->has_value()) {
            return absl::OutOfRangeError("the worker's data ended");
          }
          const int64_t step = args[1].data<int64_t>()[0];
          models::ExecutionContext host;
          std::vector<Tensor> params, slot_values;
          for (const std::string& name : names) {
            auto v = client.Read(name);
            if (!v.ok()) return v.status();
            params.push_back(*std::move(v));
            for (const std::string& slot : slots) {
              auto s = client.Read(SlotName(name, slot));
              if (!s.ok()) return s.status();
              slot_values.push_back(*std::move(s));
            }
          }
          auto acts = model->Forward(host, params, (**batch)[0]);
          if (!acts.ok()) return acts.status();
          auto loss = models::SparseSoftmaxCrossEntropyLoss(
              host, acts->logits, (**batch)[1], o.global_batch);
          if (!loss.ok()) return loss.status();
          auto grads = model->Backward(host, params, *acts, loss->dlogits);
          if (!grads.ok()) return grads.status();
          // The optimizer on this worker's copy; the change goes to the ps.
          std::vector<Tensor> before;
          for (const Tensor& p : params) {
            auto copy = Tensor::Host(p.dtype(), p.shape());
            if (!copy.ok()) return copy.status();
            std::memcpy(copy->raw_data(), p.raw_data(), p.bytes());
            before.push_back(*std::move(copy));
          }
          absl::Status applied =
              opt->Apply(host, params, *grads, slot_values, step);
          if (!applied.ok()) return applied;
          for (size_t i = 0; i < names.size(); ++i) {
            auto delta = Tensor::Host(params[i].dtype(), params[i].shape());
            if (!delta.ok()) return delta.status();
            auto sub = devices::Sub(params[i], before[i], *delta);
            if (!sub.ok()) return sub.status();
            absl::Status pushed = client.AssignAdd(names[i], *delta);
            if (!pushed.ok()) return pushed;
            for (size_t k = 0; k < slots.size(); ++k) {
              pushed = client.Assign(SlotName(names[i], slots[k]),
                                     slot_values[i * slots.size() + k]);
              if (!pushed.ok()) return pushed;
            }
          }
          return std::vector<Tensor>{loss->loss};
        });
    if (!registered.ok()) return registered;
    servers.push_back(*std::move(server));
  }
  // The stores live as long as their servers serve (the registry holds
  // them weakly).
  std::vector<std::shared_ptr<ps::VariableStore>> stores;
  for (int p = 0; p < num_ps; ++p) {
    auto server = distribute::Server::Create(*spec, "ps", p);
    if (!server.ok()) return server.status();
    auto store = ps::VariableStore::Install((*server)->function_registry());
    if (!store.ok()) return store.status();
    stores.push_back(*std::move(store));
    servers.push_back(*std::move(server));
  }
  for (auto& server : servers) {
    absl::Status started = server->Start();
    if (!started.ok()) return started;
  }

  // The coordinator: variables and slots on the ps tasks, then the steps.
  auto strategy = ps::ParameterServerStrategy::Create(*spec);
  if (!strategy.ok()) return strategy.status();
  models::ExecutionContext host;
  auto init = model->InitParams(host, options.seed);
  if (!init.ok()) return init.status();
  for (size_t i = 0; i < names.size(); ++i) {
    auto made = (*strategy)->CreateVariable(names[i], (*init)[i]);
    if (!made.ok()) return made.status();
    auto zeros = opt->CreateSlotsForVariable(host, (*init)[i]);
    if (!zeros.ok()) return zeros.status();
    for (size_t k = 0; k < slots.size(); ++k) {
      auto slot = (*strategy)->CreateVariable(SlotName(names[i], slots[k]),
                                              (*zeros)[k]);
      if (!slot.ok()) return slot.status();
    }
  }
  auto coordinator = ps::ClusterCoordinator::Create(**strategy);
  if (!coordinator.ok()) return coordinator.status();
  auto iterator = ps::PerWorkerIterator::Create("batches");
  if (!iterator.ok()) return iterator.status();
  std::vector<ps::RemoteValue> losses;
  for (int64_t step = 0; step < options.steps; ++step) {
    auto value =
        (*coordinator)
            ->Schedule("train_step", {iterator->handle(),
                                      Tensor::FromVector<int64_t>({step})});
    if (!value.ok()) return value.status();
    losses.push_back(*std::move(value));
  }
  TrainResult result;
  for (int64_t step = 0; step < options.steps; ++step) {
    auto loss = losses[static_cast<size_t>(step)].Get();
    if (!loss.ok()) return loss.status();
    StepReport report;
    report.step = step + 1;
    report.loss = static_cast<double>((*loss)[0].data<float>()[0]);
    if (!result.initial_loss.has_value()) result.initial_loss = report.loss;
    result.final_loss = report.loss;
    if (on_step) {
      absl::Status s = on_step(report);
      if (!s.ok()) return s;
    }
  }
  absl::Status joined = (*coordinator)->Join(absl::InfiniteDuration());
  if (!joined.ok()) return joined;
  for (const std::string& name : names) {
    auto w = (*strategy)->client().Read(name);
    if (!w.ok()) return w.status();
    result.weights.push_back(*std::move(w));
  }
  result.weights_checksum = WeightsChecksum(result.weights);
  coordinator->reset();
  for (auto& server : servers) server->Stop();
  return result;
}

}  // namespace distsim
