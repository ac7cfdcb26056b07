// ckpt_worker: one worker process of the checkpoint-restart tests. Reads
// TF_CONFIG, makes a MultiWorkerMirroredStrategy, restores the latest
// checkpoint of --ckpt_dir if there is one, trains the small classifier of
// multi_worker_test_util.h (with Adam, whose update depends on the restored
// step) up to --steps, saving with a CheckpointManager every --save_every
// steps, and writes its final weights.
//
//   export TF_CONFIG='{"cluster":{"worker":["127.0.0.1:5000",
//       "127.0.0.1:5001"]}, "task":{"type":"worker","index":0}}'
//   ckpt_worker --steps=6 --save_every=2 --ckpt_dir=/tmp/ck --weights_out=w0
//
// Flags (all --name=value):
//   --steps=N              train until the step counter reaches N (default 6)
//   --save_every=K         save after every K'th step (default 2)
//   --ckpt_dir=DIR         the (shared) checkpoint directory (required)
//   --max_to_keep=M        (default 2)
//   --weights_out=PATH     where to write the final weights (raw float32)
//   --stop_after_step=S    exit 0 once step S is done (and saved)
//   --die_after_step=S     SIGKILL itself once step S is done (and saved)
//   --die_during_save=S    SIGKILL itself in the save after step S, when
//                          the data file is on disk but not yet renamed
// Prints "worker <i> restored <path|none> at step <n>" and, at the end,
// "worker <i> done checksum <hex>"; exits 1 printing "ckpt_worker failed:
// <status>" to stderr on an error.
#include <signal.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/host_platform.h"
#include "distribute/checkpoint/checkpoint.h"
#include "distribute/checkpoint/checkpoint_manager.h"
#include "distribute/input/dataset.h"
#include "distribute/input_lib.h"
#include "distribute/models/models.h"
#include "distribute/models/training_variables.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "tests/multi_worker_test_util.h"

namespace {

using devices::Tensor;
using distribute::ReplicaContext;
using distribute::Variable;
namespace ckpt = distribute::checkpoint;
namespace models = distribute::models;

absl::Status Main(int argc, char** argv) {
  absl::StatusOr<distsim_test::WorkerFlags> flags =
      distsim_test::WorkerFlags::Parse(argc, argv);
  if (!flags.ok()) return flags.status();
  int64_t steps, save_every, max_to_keep, stop_after, die_after, die_during;
  for (auto [name, fallback, out] :
       {std::make_tuple("steps", int64_t{6}, &steps),
        std::make_tuple("save_every", int64_t{2}, &save_every),
        std::make_tuple("max_to_keep", int64_t{2}, &max_to_keep),
        std::make_tuple("stop_after_step", int64_t{-1}, &stop_after),
        std::make_tuple("die_after_step", int64_t{-1}, &die_after),
        std::make_tuple("die_during_save", int64_t{-1}, &die_during)}) {
    absl::StatusOr<int64_t> value = flags->Int(name, fallback);
    if (!value.ok()) return value.status();
    *out = *value;
  }
  const std::optional<std::string> ckpt_dir = flags->Get("ckpt_dir");
  if (!ckpt_dir.has_value() || save_every < 1) {
    return absl::InvalidArgumentError(
        "give --ckpt_dir=DIR and a --save_every of 1 or more");
  }

  devices::HostPlatformOptions host;
  auto platform = devices::HostPlatform::Create(host);
  if (!platform.ok()) return platform.status();
  auto strategy_or =
      distribute::MultiWorkerMirroredStrategy::Create(**platform);
  if (!strategy_or.ok()) return strategy_or.status();
  distribute::Strategy& strategy = **strategy_or;
  const int worker = (*strategy_or)->WorkerIndex();

  distsim::TrainOptions options = distsim_test::SmallClassifier(steps);
  std::vector<int64_t> sizes = {options.num_features};
  sizes.insert(sizes.end(), options.hidden.begin(), options.hidden.end());
  sizes.push_back(options.num_classes);
  auto mlp = models::Mlp::Create(sizes);
  if (!mlp.ok()) return mlp.status();
  auto adam = models::Adam::Create(/*learning_rate=*/0.01);
  if (!adam.ok()) return adam.status();
  models::ExecutionContext exec;
  auto init = mlp->InitParams(exec, options.seed);
  if (!init.ok()) return init.status();

  // The training state: variables, Adam's m and v per variable, the step.
  int64_t step = 0;
  int64_t current_save_step = -1;
  auto checkpoint = ckpt::Checkpoint::ForStrategy(
      strategy, [&](absl::string_view point, const std::string&) {
        if (point == "data_written" && current_save_step == die_during) {
          std::fflush(stdout);
          raise(SIGKILL);
        }
        return absl::OkStatus();
      });
  if (!checkpoint.ok()) return checkpoint.status();
  // Parameters and Adam's slots, each tracked by the checkpoint by name.
  auto state = models::CreateTrainingVariables(
      strategy, mlp->ParamNames(), *init, *adam, exec,
      [&](const std::string& name, const std::shared_ptr<Variable>& v) {
        return checkpoint->TrackVariable(name, v);
      });
  if (!state.ok()) return state.status();
  std::vector<std::shared_ptr<Variable>>& vars = state->params;
  std::vector<std::vector<std::shared_ptr<Variable>>>& slots = state->slots;
  absl::Status s = checkpoint->TrackInt64("step", &step);
  if (!s.ok()) return s;
  auto manager =
      ckpt::CheckpointManager::Create(*checkpoint, *ckpt_dir, max_to_keep);
  if (!manager.ok()) return manager.status();
  auto restored = (*manager)->RestoreLatest();
  if (!restored.ok()) return restored.status();
  std::printf("worker %d restored %s at step %lld\n", worker,
              restored->value_or("none").c_str(), static_cast<long long>(step));
  std::fflush(stdout);

  // The data; a restored run skips the batches already trained on.
  auto data = models::MakeClassificationData(
      steps * options.global_batch, options.num_features, options.num_classes,
      options.seed + 1);
  if (!data.ok()) return data.status();
  auto slices = distribute::data::Dataset::FromTensorSlices(
      {data->features, data->labels});
  if (!slices.ok()) return slices.status();
  auto batched = slices->Repeat().Batch(options.global_batch);
  if (!batched.ok()) return batched.status();
  auto dist = distribute::ExperimentalDistributeDataset(strategy, *batched);
  if (!dist.ok()) return dist.status();
  auto iterator = dist->MakeIterator();
  if (!iterator.ok()) return iterator.status();
  for (int64_t i = 0; i < step; ++i) {
    auto skipped = (*iterator)->GetNext();
    if (!skipped.ok()) return skipped.status();
  }

  while (step < steps) {
    auto batch = (*iterator)->GetNext();
    if (!batch.ok()) return batch.status();
    auto out = strategy.Run(
        [&](ReplicaContext& ctx, const std::vector<Tensor>& args)
            -> absl::StatusOr<std::vector<Tensor>> {
          models::ExecutionContext replica_exec;
          replica_exec.device = ctx.device_name();
          std::vector<Tensor> params;
          for (const auto& v : vars) {
            auto value = v->Read();
            if (!value.ok()) return value.status();
            params.push_back(*std::move(value));
          }
          auto acts = mlp->Forward(replica_exec, params, args[0]);
          if (!acts.ok()) return acts.status();
          auto loss = models::SparseSoftmaxCrossEntropyLoss(
              replica_exec, acts->logits, args[1], options.global_batch);
          if (!loss.ok()) return loss.status();
          auto grads =
              mlp->Backward(replica_exec, params, *acts, loss->dlogits);
          if (!grads.ok()) return grads.status();
          auto reduced = ctx.AllReduce(distribute::ReduceOp::kSum, *grads);
          if (!reduced.ok()) return reduced.status();
          const int r = ctx.ReplicaIdInSyncGroup();
          for (size_t i = 0; i < vars.size(); ++i) {
            absl::Status st = strategy.extended().Update(
                *vars[i],
                [&](Tensor& w, const std::vector<Tensor>& a) {
                  std::vector<Tensor> local;
                  for (const auto& slot : slots[i]) {
                    local.push_back(slot->component_for_replica(r));
                  }
                  return adam->ApplyToVariable(replica_exec, w, a[0],
                                               absl::MakeSpan(local), step);
                },
                {(*reduced)[i]});
            if (!st.ok()) return st;
          }
          return std::vector<Tensor>{loss->loss};
        },
        {(*batch)[0], (*batch)[1]});
    if (!out.ok()) return out.status();
    ++step;
    if (step % save_every == 0) {
      current_save_step = step;
      auto saved = (*manager)->Save();
      if (!saved.ok()) return saved.status();
    }
    if (step == stop_after) {
      std::printf("worker %d stopped at step %lld\n", worker,
                  static_cast<long long>(step));
      return absl::OkStatus();
    }
    if (step == die_after) {
      std::fflush(stdout);
      raise(SIGKILL);
    }
  }
  std::vector<Tensor> weights;
  for (const auto& v : vars) weights.push_back(v->values()[0]);
  if (std::optional<std::string> path = flags->Get("weights_out")) {
    s = distsim_test::WriteWeights(*path, weights);
    if (!s.ok()) return s;
  }
  std::printf("worker %d done checksum %s\n", worker,
              distsim::WeightsChecksum(weights).c_str());
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::Status s = Main(argc, argv);
  if (!s.ok()) {
    std::fprintf(stderr, "ckpt_worker failed: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
