// Benchmarks of the host backend's collectives: float32 SUM all-reduce through
// distribute::collective::ScheduleCommunicator over the shared-memory
// transport (devices::CreateHostTransportGroup), one thread per rank kept
// alive across iterations (tools/bench/rank_threads.h), with the two
// baselines the results should be read against, measured in the same run.
//
//   BM_AllReduce/auto/bytes:B/replicas:N  ScheduleCommunicator's AUTO,
//     which on the host transport runs SharedMemoryAllReduce (ranks read
//     each other's buffers; reported as "direct", chunk 0).
//     Each iteration is one all-reduce, so the time includes releasing the
//     ranks' threads and waiting for them (a strategy's step pays that).
//   BM_AllReduce/ring/bytes:B/replicas:N  the ring forced (chunking still
//     chosen by the cost model).
//     Counters: us (mean microseconds per all-reduce, wall clock, from
//     releasing the ranks to the last one returning), us_p50 (the median
//     iteration: on a shared machine the mean carries every preemption),
//     algbw (B / mean time, GB/s of 1e9 bytes), busbw (algbw * 2(N-1)/N,
//     nccl-tests' convention), algo (the algorithm run: the value of
//     distribute::collective::Algorithm, 0 ring, 1 tree, 2 rhd, 3 direct,
//     4 hierarchical) and chunk_bytes (0: none); the label names the
//     algorithm.
//   BM_AllReduce/back_to_back/bytes:B/replicas:N  AUTO again, timed as
//     nccl-tests and the Gloo and OpenMPI workers (allreduce_sweep.h) time
//     theirs: the ranks are released once per benchmark iteration and each
//     runs TimedIterations(B) all-reduces in a row; the counters (us,
//     algbw, busbw) are per all-reduce, the benchmark's own time column is
//     that of the iteration's TimedIterations(B) calls.
//     compare_host_collectives.sh sets this one beside Gloo and OpenMPI.
//   BM_Memcpy/bytes:B  single-thread memcpy of B bytes; GBps = B / time.
//   BM_TwoThreadReduce/bytes:B  two threads each summing half of two float32
//     arrays of B bytes into a third; GBps = B / time (reduced bytes per
//     second; the memory traffic is three times that). Each iteration hands
//     the two halves to the threads and waits for both, as a collective's
//     ranks do, so small sizes show that hand-off.
//
// Every benchmark reports wall-clock time (manual timing for the threaded
// ones, real time for memcpy). With more replicas than cores the ranks share
// cores, and the results say so.
//
//   bazel run -c opt //tools/bench:host_collectives --
//     --benchmark_min_time=0.1 --benchmark_format=console
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "devices/communicator.h"
#include "devices/dtype.h"
#include "devices/host_transport.h"
#include "devices/shape.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/collective/cost_model.h"
#include "distribute/collective/schedule.h"
#include "distribute/collective/schedule_communicator.h"
#include "tools/bench/allreduce_sweep.h"
#include "tools/bench/rank_threads.h"

namespace tools {
namespace bench {
namespace {

using distribute::collective::Algorithm;
using distribute::collective::AllReduceSelection;
using distribute::collective::ScheduleCommunicator;
using distribute::collective::ScheduleCommunicatorOptions;

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string StatusText(const absl::Status& s) { return s.ToString(); }

// The median of `values` (reordered); 0 when empty.
double Median(std::vector<double>& values) {
  if (values.empty()) return 0;
  auto middle = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), middle, values.end());
  return *middle;
}

// The replicas' tensors: input r holds r + 1 everywhere, so every element of
// every output must end as n(n + 1)/2 (exact in float32 for small n).
struct Buffers {
  std::vector<devices::Tensor> inputs;
  std::vector<devices::Tensor> outputs;
};

absl::Status MakeBuffers(int n, int64_t count, Buffers* buffers) {
  for (int r = 0; r < n; ++r) {
    ASSIGN_OR_RETURN(devices::Tensor in,
                     devices::Tensor::Host(devices::DType::kFloat32,
                                           devices::Shape({count})));
    ASSIGN_OR_RETURN(devices::Tensor out,
                     devices::Tensor::Host(devices::DType::kFloat32,
                                           devices::Shape({count})));
    float* p = in.data<float>();
    for (int64_t i = 0; i < count; ++i) p[i] = static_cast<float>(r + 1);
    std::memset(out.raw_data(), 0, static_cast<size_t>(count) * sizeof(float));
    buffers->inputs.push_back(std::move(in));
    buffers->outputs.push_back(std::move(out));
  }
  return absl::OkStatus();
}

// OK if every rank's output holds the expected sum at its first, middle and
// last element.
absl::Status CheckOutputs(const Buffers& buffers, int64_t count) {
  const int n = static_cast<int>(buffers.outputs.size());
  const float want = static_cast<float>(n * (n + 1) / 2);
  for (int r = 0; r < n; ++r) {
    const float* p = buffers.outputs[r].data<float>();
    for (int64_t i : {int64_t{0}, count / 2, count - 1}) {
      if (p[i] != want) {
        return absl::InternalError(absl::StrCat(
            "rank ", r, " element ", i, " is ", p[i], ", expected ", want));
      }
    }
  }
  return absl::OkStatus();
}

std::unique_ptr<ScheduleCommunicator> MakeCommunicator(
    int n, std::optional<Algorithm> algorithm, benchmark::State& state) {
  std::vector<std::string> names;
  for (int r = 0; r < n; ++r) {
    names.push_back(
        absl::StrCat("/job:localhost/replica:0/task:0/device:CPU:", r));
  }
  auto endpoints = devices::CreateHostTransportGroup(std::move(names));
  if (!endpoints.ok()) {
    state.SkipWithError(StatusText(endpoints.status()).c_str());
    return nullptr;
  }
  ScheduleCommunicatorOptions options;
  options.name = "host_benchmark";
  options.costs = distribute::collective::SharedMemoryCosts(
      n, static_cast<int32_t>(std::thread::hardware_concurrency()));
  options.all_reduce_algorithm = algorithm;
  auto comm = ScheduleCommunicator::Create(*std::move(endpoints), options);
  if (!comm.ok()) {
    state.SkipWithError(StatusText(comm.status()).c_str());
    return nullptr;
  }
  return *std::move(comm);
}

void BM_AllReduce(benchmark::State& state, std::optional<Algorithm> forced,
                  bool back_to_back) {
  const int64_t bytes = state.range(0);
  const int n = static_cast<int>(state.range(1));
  const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
  std::unique_ptr<ScheduleCommunicator> comm =
      MakeCommunicator(n, forced, state);
  if (comm == nullptr) return;
  Buffers buffers;
  absl::Status made = MakeBuffers(n, count, &buffers);
  if (!made.ok()) {
    state.SkipWithError(StatusText(made).c_str());
    return;
  }
  RankThreads threads(n);
  const devices::CollectiveOptions options;  // SUM, 60 s timeout.
  const int64_t calls = back_to_back ? tools_bench::TimedIterations(bytes) : 1;
  const std::function<absl::Status(int)> all_reduce = [&](int rank) {
    for (int64_t i = 0; i < calls; ++i) {
      RETURN_IF_ERROR(comm->AllReduce(rank, buffers.inputs[rank],
                                      buffers.outputs[rank], options));
    }
    return absl::OkStatus();
  };
  // One untimed round builds and caches the schedule and faults the pages in.
  absl::Status status = threads.Run(all_reduce);
  if (status.ok()) status = CheckOutputs(buffers, count);
  if (!status.ok()) {
    state.SkipWithError(StatusText(status).c_str());
    return;
  }

  double total = 0;
  std::vector<double> times;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    status = threads.Run(all_reduce);
    // Google Benchmark times the iteration (all `calls`); the counters
    // below are per all-reduce.
    const double iteration = SecondsSince(start);
    const double seconds = iteration / static_cast<double>(calls);
    if (!status.ok()) break;
    state.SetIterationTime(iteration);
    total += seconds;
    times.push_back(seconds);
  }
  if (status.ok()) status = CheckOutputs(buffers, count);
  if (!status.ok()) {
    state.SkipWithError(StatusText(status).c_str());
    return;
  }
  const double iterations = static_cast<double>(state.iterations());
  const double algbw = static_cast<double>(bytes) * iterations / total / 1e9;
  state.counters["us"] = total / iterations * 1e6;
  state.counters["us_p50"] = Median(times) * 1e6;
  state.counters["algbw"] = algbw;
  state.counters["busbw"] = algbw * 2.0 * (n - 1) / n;
  std::optional<AllReduceSelection> selection = comm->LastAllReduceSelection(0);
  if (selection.has_value()) {
    state.counters["algo"] = static_cast<double>(selection->algorithm);
    state.counters["chunk_bytes"] = static_cast<double>(selection->chunk_bytes);
    state.SetLabel(std::string(
        distribute::collective::AlgorithmName(selection->algorithm)));
  }
}

void BM_Memcpy(benchmark::State& state) {
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<char> src(bytes, 1);
  std::vector<char> dst(bytes, 0);
  const Clock::time_point start = Clock::now();
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  const double seconds = SecondsSince(start);
  state.counters["GBps"] = static_cast<double>(bytes) *
                           static_cast<double>(state.iterations()) / seconds /
                           1e9;
}

void BM_TwoThreadReduce(benchmark::State& state) {
  const int64_t bytes = state.range(0);
  const int64_t count = bytes / static_cast<int64_t>(sizeof(float));
  std::vector<float> a(static_cast<size_t>(count), 1.0f);
  std::vector<float> b(static_cast<size_t>(count), 2.0f);
  std::vector<float> c(static_cast<size_t>(count), 0.0f);
  RankThreads threads(2);
  const std::function<absl::Status(int)> sum = [&](int rank) {
    const int64_t half = count / 2;
    const int64_t begin = rank == 0 ? 0 : half;
    const int64_t end = rank == 0 ? half : count;
    const float* pa = a.data();
    const float* pb = b.data();
    float* pc = c.data();
    for (int64_t i = begin; i < end; ++i) pc[i] = pa[i] + pb[i];
    return absl::OkStatus();
  };
  double total = 0;
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    threads.Run(sum).IgnoreError();  // The job cannot fail.
    const double seconds = SecondsSince(start);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
    state.SetIterationTime(seconds);
    total += seconds;
  }
  if (count > 0 &&
      (c[0] != 3.0f || c[static_cast<size_t>(count - 1)] != 3.0f)) {
    state.SkipWithError("the two-thread reduction computed a wrong sum");
    return;
  }
  state.counters["GBps"] = static_cast<double>(bytes) *
                           static_cast<double>(state.iterations()) / total /
                           1e9;
}

// 4 KiB, 16 KiB, ..., 64 MiB.
const std::vector<int64_t> kSizes = {
    int64_t{4} << 10, int64_t{16} << 10, int64_t{64} << 10, int64_t{256} << 10,
    int64_t{1} << 20, int64_t{4} << 20,  int64_t{16} << 20, int64_t{64} << 20};

BENCHMARK(BM_Memcpy)
    ->ArgName("bytes")
    ->ArgsProduct({kSizes})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_TwoThreadReduce)
    ->ArgName("bytes")
    ->ArgsProduct({kSizes})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_AllReduce, auto, std::optional<Algorithm>(), false)
    -> ArgNames({"bytes", "replicas"}) -> ArgsProduct({kSizes, {2, 4, 8}})
        -> UseManualTime() -> Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_AllReduce, back_to_back, std::optional<Algorithm>(), true)
    ->ArgNames({"bytes", "replicas"})
    ->ArgsProduct({kSizes, {2, 4, 8}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_AllReduce, ring,
                  std::optional<Algorithm>(Algorithm::kRing), false)
    ->ArgNames({"bytes", "replicas"})
    ->ArgsProduct({kSizes, {2, 4, 8}})
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace bench
}  // namespace tools
