// Strategy::Run's own cost: MirroredStrategy over N host devices running an
// empty replica function, and one whose replicas all-reduce 4 KiB, with the
// bare host all-reduce of 4 KiB over N ranks' threads as the baseline of
// the second. And data-parallel scaling: the main job's classifier trained
// by MirroredStrategy on host:N (items_per_second: examples a second; the
// ratio of host:2's to host:1's is the speed-up of a second replica).
//
//   bazel run -c opt //tools/bench:strategy_run -- --benchmark_min_time=0.5
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "benchmark/benchmark.h"
#include "devices/host_platform.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/mirrored_strategy.h"
#include "distribute/reduce_op.h"
#include "distribute/strategy.h"
#include "tools/distsim/classifier_training.h"

namespace {

using distribute::MirroredStrategy;
using distribute::ReplicaContext;

struct Setup {
  std::unique_ptr<devices::Platform> platform;
  std::unique_ptr<MirroredStrategy> strategy;
};

Setup Make(int n) {
  Setup s;
  devices::HostPlatformOptions options;
  options.num_devices = n;
  s.platform = *devices::HostPlatform::Create(options);
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back("/cpu:" + std::to_string(i));
  s.strategy = *MirroredStrategy::Create(*s.platform, names);
  return s;
}

void BM_MirroredRunEmpty(benchmark::State& state) {
  Setup s = Make(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto out =
        s.strategy->Run([](ReplicaContext&, const std::vector<devices::Tensor>&)
                            -> absl::StatusOr<std::vector<devices::Tensor>> {
          return std::vector<devices::Tensor>{};
        });
    if (!out.ok()) {
      state.SkipWithError(out.status().ToString().c_str());
      break;
    }
  }
}
BENCHMARK(BM_MirroredRunEmpty)->Arg(1)->Arg(2)->Arg(8)->UseRealTime();

void BM_MirroredRunAllReduce4KiB(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Setup s = Make(n);
  for (auto _ : state) {
    auto out = s.strategy->Run(
        [](ReplicaContext& ctx, const std::vector<devices::Tensor>&)
            -> absl::StatusOr<std::vector<devices::Tensor>> {
          ASSIGN_OR_RETURN(devices::Tensor t,
                           ctx.device().Allocate(devices::DType::kFloat32,
                                                 devices::Shape({1024})));
          return ctx.AllReduce(distribute::ReduceOp::kSum, {t});
        });
    if (!out.ok()) {
      state.SkipWithError(out.status().ToString().c_str());
      break;
    }
  }
}
BENCHMARK(BM_MirroredRunAllReduce4KiB)->Arg(2)->Arg(8)->UseRealTime();

// 20 steps of the main job (MLP 64-256-256-10, global batch 256, SGD with
// momentum) per iteration, variables and data set made anew each time.
void BM_ClassifierTraining(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Setup s = Make(n);
  distsim::TrainOptions options;
  options.steps = 20;
  for (auto _ : state) {
    absl::StatusOr<distsim::TrainResult> result =
        distsim::TrainClassifier(*s.strategy, options);
    if (!result.ok()) {
      state.SkipWithError(result.status().ToString().c_str());
      break;
    }
    benchmark::DoNotOptimize(result->weights_checksum);
  }
  state.SetItemsProcessed(state.iterations() * options.steps *
                          options.global_batch);
}
BENCHMARK(BM_ClassifierTraining)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
