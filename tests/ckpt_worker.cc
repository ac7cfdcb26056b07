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
// Flags (--name=value; `ckpt_worker --help` lists them):
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
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/host_platform.h"
#include "devices/status_macros.h"
#include "distribute/checkpoint/checkpoint.h"
#include "distribute/checkpoint/checkpoint_manager.h"
#include "distribute/input/dataset.h"
#include "distribute/input_lib.h"
#include "distribute/models/models.h"
#include "distribute/models/training_variables.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "tests/multi_worker_test_util.h"
#include "tools/flags/flags.h"

namespace {

using devices::Tensor;
using distribute::ReplicaContext;
using distribute::Variable;
namespace ckpt = distribute::checkpoint;
namespace models = distribute::models;

absl::Status Main(int argc, char** argv) {
  int64_t steps = 6, save_every = 2, max_to_keep = 2, stop_after = -1,
          die_after = -1, die_during = -1;
  std::string ckpt_dir, weights_out;
  tools_flags::FlagSet flags("ckpt_worker");
  flags.Int("steps", &steps, "training steps");
  flags.String("ckpt_dir", &ckpt_dir, "the checkpoints' directory (required)");
  flags.Int("save_every", &save_every, "save a checkpoint every N steps");
  flags.Int("max_to_keep", &max_to_keep, "CheckpointManager's max_to_keep");
  flags.Int("stop_after_step", &stop_after, "exit 0 once step K is done");
  flags.Int("die_after_step", &die_after, "SIGKILL itself once step K is done");
  flags.Int("die_during_save", &die_during,
            "SIGKILL itself while writing the checkpoint of step K");
  flags.String("weights_out", &weights_out,
               "where to write the final weights (raw float32)");
  const absl::Status parsed = flags.Parse(argc, argv);
  if (absl::IsCancelled(parsed)) return absl::OkStatus();  // --help
  RETURN_IF_ERROR(parsed);
  if (ckpt_dir.empty() || save_every < 1) {
    return absl::InvalidArgumentError(
        "give --ckpt_dir=DIR and a --save_every of 1 or more");
  }

  devices::HostPlatformOptions host;
  ASSIGN_OR_RETURN(auto platform, devices::HostPlatform::Create(host));
  ASSIGN_OR_RETURN(auto strategy_or,
                   distribute::MultiWorkerMirroredStrategy::Create(*platform));
  distribute::Strategy& strategy = *strategy_or;
  const int worker = strategy_or->WorkerIndex();

  distsim::TrainOptions options = distsim_test::SmallClassifier(steps);
  std::vector<int64_t> sizes = {options.num_features};
  sizes.insert(sizes.end(), options.hidden.begin(), options.hidden.end());
  sizes.push_back(options.num_classes);
  ASSIGN_OR_RETURN(auto mlp, models::Mlp::Create(sizes));
  ASSIGN_OR_RETURN(auto adam, models::Adam::Create(/*learning_rate=*/0.01));
  models::ExecutionContext exec;
  ASSIGN_OR_RETURN(auto init, mlp.InitParams(exec, options.seed));

  // The training state: variables, Adam's m and v per variable, the step.
  int64_t step = 0;
  int64_t current_save_step = -1;
  ASSIGN_OR_RETURN(
      auto checkpoint,
      ckpt::Checkpoint::ForStrategy(
          strategy, [&](absl::string_view point, const std::string&) {
            if (point == "data_written" && current_save_step == die_during) {
              std::fflush(stdout);
              raise(SIGKILL);
            }
            return absl::OkStatus();
          }));
  // Parameters and Adam's slots, each tracked by the checkpoint by name.
  ASSIGN_OR_RETURN(auto state, models::CreateTrainingVariables(
                                   strategy, mlp.ParamNames(), init, adam, exec,
                                   [&](const std::string& name,
                                       const std::shared_ptr<Variable>& v) {
                                     return checkpoint.TrackVariable(name, v);
                                   }));
  std::vector<std::shared_ptr<Variable>>& vars = state.params;
  std::vector<std::vector<std::shared_ptr<Variable>>>& slots = state.slots;
  RETURN_IF_ERROR(checkpoint.TrackInt64("step", &step));
  ASSIGN_OR_RETURN(auto manager, ckpt::CheckpointManager::Create(
                                     checkpoint, ckpt_dir, max_to_keep));
  ASSIGN_OR_RETURN(auto restored, manager->RestoreLatest());
  std::printf("worker %d restored %s at step %lld\n", worker,
              restored.value_or("none").c_str(), static_cast<long long>(step));
  std::fflush(stdout);

  // The data; a restored run skips the batches already trained on.
  ASSIGN_OR_RETURN(auto data,
                   models::MakeClassificationData(
                       steps * options.global_batch, options.num_features,
                       options.num_classes, options.seed + 1));
  ASSIGN_OR_RETURN(auto slices, distribute::data::Dataset::FromTensorSlices(
                                    {data.features, data.labels}));
  ASSIGN_OR_RETURN(auto batched, slices.Repeat().Batch(options.global_batch));
  ASSIGN_OR_RETURN(
      auto dist, distribute::ExperimentalDistributeDataset(strategy, batched));
  ASSIGN_OR_RETURN(auto iterator, dist.MakeIterator());
  for (int64_t i = 0; i < step; ++i) {
    ASSIGN_OR_RETURN(auto skipped, iterator->GetNext());
  }

  while (step < steps) {
    ASSIGN_OR_RETURN(auto batch, iterator->GetNext());
    ASSIGN_OR_RETURN(
        auto out,
        strategy.Run(
            [&](ReplicaContext& ctx, const std::vector<Tensor>& args)
                -> absl::StatusOr<std::vector<Tensor>> {
              models::ExecutionContext replica_exec;
              replica_exec.device = ctx.device_name();
              std::vector<Tensor> params;
              for (const auto& v : vars) {
                ASSIGN_OR_RETURN(auto value, v->Read());
                params.push_back(std::move(value));
              }
              ASSIGN_OR_RETURN(auto acts,
                               mlp.Forward(replica_exec, params, args[0]));
              ASSIGN_OR_RETURN(auto loss, models::SparseSoftmaxCrossEntropyLoss(
                                              replica_exec, acts.logits,
                                              args[1], options.global_batch));
              ASSIGN_OR_RETURN(auto grads, mlp.Backward(replica_exec, params,
                                                        acts, loss.dlogits));
              ASSIGN_OR_RETURN(
                  auto reduced,
                  ctx.AllReduce(distribute::ReduceOp::kSum, grads));
              const int r = ctx.ReplicaIdInSyncGroup();
              for (size_t i = 0; i < vars.size(); ++i) {
                RETURN_IF_ERROR(strategy.extended().Update(
                    *vars[i],
                    [&](Tensor& w, const std::vector<Tensor>& a) {
                      std::vector<Tensor> local;
                      for (const auto& slot : slots[i]) {
                        local.push_back(slot->component_for_replica(r));
                      }
                      return adam.ApplyToVariable(replica_exec, w, a[0],
                                                  absl::MakeSpan(local), step);
                    },
                    {reduced[i]}));
              }
              return std::vector<Tensor>{loss.loss};
            },
            {batch[0], batch[1]}));
    ++step;
    if (step % save_every == 0) {
      current_save_step = step;
      ASSIGN_OR_RETURN(auto saved, manager->Save());
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
  if (!weights_out.empty()) {
    RETURN_IF_ERROR(distsim_test::WriteWeights(weights_out, weights));
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
