// How the simulator scales with the size of the modeled cluster: the wall
// time, peak memory and simulated events of one prediction, from a 128-GPU
// cluster to 131,072 GPUs.
//
//   BM_NcclModelPoint/G: one 1 GiB all-reduce point of the NCCL model
//     (distsim collective --algorithm=nccl) on dgx_h100_cluster:G/8; three
//     levels of switches beyond 4096 nodes.
//   BM_SchedulePoint/A/G: one 1 GiB all-reduce of schedule algorithm A
//     (0 ring, 1 hierarchical) simulated over the flow-level network model
//     on G GPUs, the schedule replayed as one state machine per rank.
//   BM_HierarchicalGrid/S/G: one 1 GiB hierarchical all-reduce over a
//     three-level grid (GPUs of a node, 32 nodes of a leaf, leaves) on G
//     GPUs, replayed one rank per class of equivalent ranks (S = 1) or
//     every rank (S = 0, the baseline).
//   BM_AutoSweep128: the README's sweep, 8 B to 8 GiB on 128 GPUs with the
//     cost model's pick per size.
//   BM_TpuReduceScatter/X: reduce_scatter of 1, 2 and 4 MiB on
//     tpu_v4:XxXxX.
//   BM_MultiWorkerTimingSteps/N: 10 steps of the classifier under
//     MultiWorkerMirroredStrategy, timing-only, on dgx_h100_cluster:N (one
//     worker per host, 8 replicas each).
//
// Counters: gpus (or ranks), events (engine events simulated),
// rank_classes (ranks simulated when by symmetry; 0: all), peak_rss_MB
// (the process's peak resident memory so far: benchmarks run smallest
// first, so it is the peak of the largest case yet).
//
//   bazel run -c opt //tools/bench:simulator_scale --
//   --benchmark_format=console
// The largest cases take a while on two cores; pick with --benchmark_filter.
#include <sys/resource.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "distribute/in_process_cluster.h"
#include "simulator/builtin_topologies.h"
#include "simulator/sim_platform.h"
#include "tools/distsim/classifier_training.h"
#include "tools/distsim/collective_sweep.h"

namespace {

double PeakRssMb() {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // kB on Linux
}

// Runs one sweep per iteration; counts its rows' events.
void RunSweep(benchmark::State& state, const distsim::SweepOptions& options) {
  int64_t events = 0;
  int64_t ranks = 0;
  int64_t classes = 0;
  for (auto _ : state) {
    absl::StatusOr<distsim::SweepResult> result =
        distsim::RunCollectiveSweep(options);
    if (!result.ok()) {
      state.SkipWithError(result.status().ToString().c_str());
      return;
    }
    ranks = result->ranks;
    for (const distsim::SweepRow& row : result->rows) {
      events += row.events;
      classes = std::max(classes, row.rank_classes);
    }
    benchmark::DoNotOptimize(result->rows);
  }
  state.counters["gpus"] = static_cast<double>(ranks);
  state.counters["events"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kAvgIterations);
  state.counters["rank_classes"] = static_cast<double>(classes);
  state.counters["peak_rss_MB"] = PeakRssMb();
}

void BM_NcclModelPoint(benchmark::State& state) {
  distsim::SweepOptions options;
  options.topology = absl::StrCat("dgx_h100_cluster:", state.range(0) / 8);
  options.algorithm = "nccl";
  options.min_bytes = options.max_bytes = int64_t{1} << 30;
  RunSweep(state, options);
}
BENCHMARK(BM_NcclModelPoint)
    ->Arg(128)
    ->Arg(1024)
    ->Arg(8192)
    ->Arg(16384)
    ->Arg(131072)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

void BM_SchedulePoint(benchmark::State& state) {
  distsim::SweepOptions options;
  options.topology = absl::StrCat("dgx_h100_cluster:", state.range(1) / 8);
  options.algorithm = state.range(0) == 0 ? "ring" : "hierarchical";
  options.min_bytes = options.max_bytes = int64_t{1} << 30;
  RunSweep(state, options);
}
BENCHMARK(BM_SchedulePoint)
    ->ArgsProduct({{0, 1}, {128, 512, 1024}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

void BM_HierarchicalGrid(benchmark::State& state) {
  const int64_t gpus = state.range(1);
  distsim::SweepOptions options;
  options.topology = absl::StrCat("dgx_h100_cluster:", gpus / 8);
  options.algorithm = "hierarchical";
  options.dims = {8, 32, static_cast<int32_t>(gpus / 256)};
  options.symmetry = state.range(0) == 1;
  options.min_bytes = options.max_bytes = int64_t{1} << 30;
  RunSweep(state, options);
}
BENCHMARK(BM_HierarchicalGrid)
    ->ArgsProduct({{0, 1}, {2048, 8192, 16384}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

void BM_AutoSweep128(benchmark::State& state) {
  distsim::SweepOptions options;
  options.topology = "dgx_h100_cluster:16";
  options.min_bytes = 8;
  options.max_bytes = int64_t{8} << 30;
  RunSweep(state, options);
}
BENCHMARK(BM_AutoSweep128)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

void BM_TpuReduceScatter(benchmark::State& state) {
  const int64_t x = state.range(0);
  distsim::SweepOptions options;
  options.topology = absl::StrCat("tpu_v4:", x, "x", x, "x", x);
  options.op = "reduce_scatter";
  options.min_bytes = int64_t{1} << 20;
  options.max_bytes = int64_t{4} << 20;
  RunSweep(state, options);
}
BENCHMARK(BM_TpuReduceScatter)
    ->Arg(4)
    ->Arg(8)
    ->Arg(16)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

void BM_MultiWorkerTimingSteps(benchmark::State& state) {
  const int64_t nodes = state.range(0);
  distsim::TrainOptions train;
  train.steps = 10;
  int64_t events = 0;
  for (auto _ : state) {
    absl::StatusOr<simulator::Topology> topology =
        simulator::BuiltinTopology(absl::StrCat("dgx_h100_cluster:", nodes));
    if (!topology.ok()) {
      state.SkipWithError(topology.status().ToString().c_str());
      return;
    }
    simulator::SimPlatformOptions sim;
    sim.functional = false;
    sim.trace = false;
    absl::StatusOr<std::unique_ptr<simulator::SimPlatform>> platform =
        simulator::SimPlatform::Create(*std::move(topology), std::move(sim));
    if (!platform.ok()) {
      state.SkipWithError(platform.status().ToString().c_str());
      return;
    }
    absl::StatusOr<std::unique_ptr<distribute::InProcessCluster>> cluster =
        distribute::InProcessCluster::Create(**platform);
    if (!cluster.ok()) {
      state.SkipWithError(cluster.status().ToString().c_str());
      return;
    }
    absl::Status ran =
        (*cluster)->Run([&](distribute::MultiWorkerMirroredStrategy& strategy) {
          return distsim::TrainClassifier(strategy, train).status();
        });
    if (!ran.ok()) {
      state.SkipWithError(ran.ToString().c_str());
      return;
    }
    events += (*platform)->EventsProcessed();
  }
  state.counters["replicas"] = static_cast<double>(nodes * 8);
  state.counters["events"] = benchmark::Counter(
      static_cast<double>(events), benchmark::Counter::kAvgIterations);
  state.counters["peak_rss_MB"] = PeakRssMb();
}
BENCHMARK(BM_MultiWorkerTimingSteps)
    ->Arg(4)
    ->Arg(16)
    ->Arg(64)
    ->Arg(128)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

}  // namespace
