// The GPU path measured against the device's own limits, on the first GPU:
//  * kernels: elementwise Add and the two-input ReduceInto (bytes moved per
//    second against the memory's peak bandwidth), MatMul through cuBLAS
//    (FLOP/s against the FP32 CUDA-core peak);
//  * a training step of the classifier (tools/distsim) under
//    OneDeviceStrategy on /gpu:0 against the same step on /cpu:0;
//  * the device queue's round trip against a bare cudaEvent's;
//  * NcclCommunicator::AllReduce against a raw ncclAllReduce loop on a
//    communicator of its own (one rank per GPU: with one GPU this measures
//    the call path, not bandwidth).
// Every benchmark times the GPU's work to completion (the stream is
// synchronized in each iteration). Without a GPU every benchmark is skipped
// with "no CUDA GPU found: ...".
//
//   bazel run -c opt //tools/bench:cuda -- --benchmark_format=json
//
// Counters: bytes_per_second and frac_of_peak_bw (kernels), flop_per_second
// and frac_of_fp32_peak (MatMul), steps_per_second (training). The peaks
// come from the CUDA runtime's device attributes (printed at start).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "devices/cuda/cuda_platform.h"
#include "devices/cuda/nccl_api.h"
#include "devices/cuda/nccl_communicator.h"
#include "devices/cuda/ops.h"
#include "devices/host_platform.h"
#include "devices/kernels.h"
#include "distribute/one_device_strategy.h"
#include "tools/distsim/classifier_training.h"

namespace {

using devices::DType;
using devices::Shape;
using devices::Tensor;
using devices::cuda::CudaDevice;
using devices::cuda::CudaPlatform;

// The platform over every GPU, made once (nullptr, with `why`, without one).
struct Gpus {
  std::unique_ptr<CudaPlatform> platform;
  std::string why;
  double peak_bytes_per_second = 0;
  double peak_fp32_flops = 0;
};

// FP32 lanes per SM by compute capability: 128 on sm_86/89/90 (NVIDIA
// Ampere GA10x, Ada and Hopper architecture whitepapers: "128 FP32 CUDA
// cores per SM"), 64 on sm_70/75/80 (Volta, Turing, A100 whitepapers).
int Fp32LanesPerSm(int major, int minor) {
  if (major >= 9) return 128;
  if (major == 8 && minor >= 6) return 128;
  return 64;
}

Gpus& TheGpus() {
  static Gpus* gpus = [] {
    auto* g = new Gpus;
    absl::StatusOr<std::unique_ptr<CudaPlatform>> p = CudaPlatform::Create();
    if (!p.ok()) {
      g->why = std::string(p.status().message());
      return g;
    }
    g->platform = *std::move(p);
    const int ordinal = g->platform->gpu(0)->ordinal();
    int mem_khz = 0, bus_bits = 0, sm_khz = 0, sms = 0, major = 0, minor = 0;
    cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, ordinal);
    cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, ordinal);
    cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, ordinal);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal);
    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal);
    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal);
    // Double data rate: two transfers per memory clock.
    g->peak_bytes_per_second = 2.0 * mem_khz * 1e3 * (bus_bits / 8.0);
    // One fused multiply-add (2 FLOP) per lane per clock.
    g->peak_fp32_flops =
        2.0 * Fp32LanesPerSm(major, minor) * sms * (sm_khz * 1e3);
    std::fprintf(stderr,
                 "GPU 0: %s (sm_%d%d, %d SMs at %d MHz, memory %d MHz x %d "
                 "bits): peak %.0f GB/s, FP32 %.1f TFLOP/s\n",
                 g->platform->gpu(0)->description().c_str(), major, minor, sms,
                 sm_khz / 1000, mem_khz / 1000, bus_bits,
                 g->peak_bytes_per_second / 1e9, g->peak_fp32_flops / 1e12);
    return g;
  }();
  return *gpus;
}

// The first GPU, or nullptr after skipping the benchmark.
CudaDevice* GpuOrSkip(benchmark::State& state) {
  Gpus& gpus = TheGpus();
  if (gpus.platform == nullptr) {
    state.SkipWithError(gpus.why.c_str());
    return nullptr;
  }
  return gpus.platform->gpu(0);
}

bool Failed(benchmark::State& state, const absl::Status& s) {
  if (s.ok()) return false;
  state.SkipWithError(s.ToString().c_str());
  return true;
}

// Times `launch` (which enqueues work on gpu's stream) to completion with
// CUDA events, one iteration each, as the benchmark's manual time. Returns
// the timed iterations' total seconds.
template <typename Launch>
double TimeOnStream(benchmark::State& state, CudaDevice& gpu, Launch launch) {
  double total_seconds = 0;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  if (Failed(state, launch())) return 0;  // warm-up (and first-use costs)
  cudaStreamSynchronize(gpu.stream());
  for (auto _ : state) {
    cudaEventRecord(start, gpu.stream());
    absl::Status s = launch();
    cudaEventRecord(stop, gpu.stream());
    cudaEventSynchronize(stop);
    if (Failed(state, s)) break;
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    state.SetIterationTime(ms / 1e3);
    total_seconds += ms / 1e3;
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return total_seconds;
}

void BandwidthCounters(benchmark::State& state, double bytes_per_iteration) {
  state.counters["bytes_per_second"] = benchmark::Counter(
      bytes_per_iteration, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["frac_of_peak_bw"] =
      benchmark::Counter(bytes_per_iteration / TheGpus().peak_bytes_per_second,
                         benchmark::Counter::kIsIterationInvariantRate);
}

// The KernelCost the op reported (what the simulator's roofline is given),
// so that measured times can be set against the compute model.
void CostCounters(benchmark::State& state,
                  const absl::StatusOr<devices::KernelCost>& cost) {
  if (!cost.ok()) return;
  state.counters["cost_flops"] = cost->flops;
  state.counters["cost_bytes"] = cost->bytes;
}

// Times one kernel (`op` launches it and returns its KernelCost) with its
// bandwidth by the bytes it reports, and the cost counters.
template <typename Op>
void TimeKernel(benchmark::State& state, CudaDevice& gpu, Op op) {
  absl::StatusOr<devices::KernelCost> cost;
  TimeOnStream(state, gpu, [&] {
    cost = op();
    return cost.status();
  });
  if (!cost.ok()) return;
  BandwidthCounters(state, cost->bytes);
  CostCounters(state, cost);
}

Tensor Filled(CudaDevice& gpu, int64_t n, double value) {
  Tensor t = *gpu.Allocate(DType::kFloat32, Shape({n}));
  (void)devices::cuda::Fill(gpu, value, t);
  return t;
}

// out = a + b over n float32 (12 bytes per element).
void BM_CudaAdd(benchmark::State& state) {
  CudaDevice* gpu = GpuOrSkip(state);
  if (gpu == nullptr) return;
  const int64_t n = state.range(0);
  Tensor a = Filled(*gpu, n, 1), b = Filled(*gpu, n, 2),
         out = Filled(*gpu, n, 0);
  TimeKernel(state, *gpu, [&] { return devices::cuda::Add(*gpu, a, b, out); });
}
// Sizes from 4 KiB to 1 GiB per tensor, four times apart.
BENCHMARK(BM_CudaAdd)
    ->RangeMultiplier(4)
    ->Range(1 << 10, 1 << 28)
    ->UseManualTime();

// out = 0.5 * in over n float32: 8 bytes per element.
void BM_CudaScale(benchmark::State& state) {
  CudaDevice* gpu = GpuOrSkip(state);
  if (gpu == nullptr) return;
  const int64_t n = state.range(0);
  Tensor a = Filled(*gpu, n, 1), out = Filled(*gpu, n, 0);
  TimeKernel(state, *gpu,
             [&] { return devices::cuda::Scale(*gpu, a, 0.5, out); });
}
BENCHMARK(BM_CudaScale)
    ->RangeMultiplier(4)
    ->Range(1 << 10, 1 << 28)
    ->UseManualTime();

// 1000 one-element Scale kernels back to back on the stream: the time each
// kernel adds when kernels queue behind each other (the simulator's
// launch_overhead), as the counter kernel_seconds (the iteration's time is
// the 1000 kernels').
void BM_CudaBackToBackKernels(benchmark::State& state) {
  CudaDevice* gpu = GpuOrSkip(state);
  if (gpu == nullptr) return;
  constexpr int kKernels = 1000;
  Tensor a = Filled(*gpu, 1, 1), out = Filled(*gpu, 1, 0);
  const double seconds = TimeOnStream(state, *gpu, [&] {
    absl::Status s;
    for (int k = 0; k < kKernels && s.ok(); ++k) {
      s = devices::cuda::Scale(*gpu, a, 0.5, out).status();
    }
    return s;
  });
  if (state.iterations() > 0) {
    state.counters["kernel_seconds"] =
        seconds / (static_cast<double>(state.iterations()) * kKernels);
  }
}
BENCHMARK(BM_CudaBackToBackKernels)->UseManualTime();

// out = mean(a, b) over n float32 (the all-reduce's local step): 12 bytes
// per element.
void BM_CudaReduceInto(benchmark::State& state) {
  CudaDevice* gpu = GpuOrSkip(state);
  if (gpu == nullptr) return;
  const int64_t n = state.range(0);
  Tensor a = Filled(*gpu, n, 1), b = Filled(*gpu, n, 2),
         out = Filled(*gpu, n, 0);
  TimeKernel(state, *gpu, [&] {
    return devices::cuda::ReduceInto(*gpu, devices::ReduceOp::kMean, {a, b},
                                     out);
  });
}
BENCHMARK(BM_CudaReduceInto)
    ->RangeMultiplier(4)
    ->Range(1 << 10, 1 << 28)
    ->UseManualTime();

// An n x n x n float32 product through cuBLAS: 2 n^3 FLOP.
void BM_CudaMatMul(benchmark::State& state) {
  CudaDevice* gpu = GpuOrSkip(state);
  if (gpu == nullptr) return;
  const int64_t n = state.range(0);
  Tensor a = *gpu->Allocate(DType::kFloat32, Shape({n, n}));
  Tensor b = *gpu->Allocate(DType::kFloat32, Shape({n, n}));
  Tensor out = *gpu->Allocate(DType::kFloat32, Shape({n, n}));
  (void)devices::cuda::RandomUniform(*gpu, 1, -1, 1, a);
  (void)devices::cuda::RandomUniform(*gpu, 2, -1, 1, b);
  TimeKernel(state, *gpu, [&] {
    return devices::cuda::MatMul(*gpu, a, b, false, false, out);
  });
  state.counters["flop_per_second"] = benchmark::Counter(
      2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["frac_of_fp32_peak"] =
      benchmark::Counter(2.0 * n * n * n / TheGpus().peak_fp32_flops,
                         benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_CudaMatMul)->RangeMultiplier(2)->Range(128, 8192)->UseManualTime();

// The classifier's model: with `large`, sized so that a step is more GPU
// work than launch overhead; else distsim train's default model at global
// batch 256 (to set against `distsim train --platform=sim:hgx_h200`).
distsim::TrainOptions TrainingStep(int64_t steps, bool large) {
  distsim::TrainOptions o;
  o.steps = steps;
  o.seed = 7;
  if (large) {
    o.global_batch = 1024;
    o.num_features = 256;
    o.num_classes = 10;
    o.hidden = {1024, 1024};
  }
  return o;
}

// Steps 2..kSteps+1 of a training run, timed between the step callbacks
// (the first step's set-up and the run's data generation are left out).
constexpr int64_t kSteps = 10;

void TimeTraining(benchmark::State& state, distribute::Strategy& strategy) {
  const bool large = state.range(0) == 1;
  for (auto _ : state) {
    std::chrono::steady_clock::time_point first;
    absl::StatusOr<distsim::TrainResult> r = distsim::TrainClassifier(
        strategy, TrainingStep(kSteps + 1, large),
        [&](const distsim::StepReport& s) {
          if (s.step == 1) first = std::chrono::steady_clock::now();
          if (s.step == kSteps + 1) {
            state.SetIterationTime(std::chrono::duration<double>(
                                       std::chrono::steady_clock::now() - first)
                                       .count() /
                                   kSteps);
          }
          return absl::OkStatus();
        });
    if (Failed(state, r.status())) return;
  }
  state.counters["steps_per_second"] =
      benchmark::Counter(1, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_TrainStepGpu(benchmark::State& state) {
  if (GpuOrSkip(state) == nullptr) return;
  auto strategy =
      distribute::OneDeviceStrategy::Create(*TheGpus().platform, "/gpu:0");
  if (Failed(state, strategy.status())) return;
  TimeTraining(state, **strategy);
}
BENCHMARK(BM_TrainStepGpu)->Arg(0)->Arg(1)->UseManualTime()->Iterations(3);

void BM_TrainStepHost(benchmark::State& state) {
  if (GpuOrSkip(state) == nullptr) return;  // the baseline of the GPU step
  auto host = devices::HostPlatform::Create(devices::HostPlatformOptions{});
  if (Failed(state, host.status())) return;
  auto strategy = distribute::OneDeviceStrategy::Create(**host, "/cpu:0");
  if (Failed(state, strategy.status())) return;
  TimeTraining(state, **strategy);
}
BENCHMARK(BM_TrainStepHost)->Arg(1)->UseManualTime()->Iterations(1);

// The device queue's round trip: an empty function enqueued on GPU 0 and
// waited for (what every kernel a strategy runs pays on top of its launch).
void BM_CudaDeviceRoundTrip(benchmark::State& state) {
  CudaDevice* gpu = GpuOrSkip(state);
  if (gpu == nullptr) return;
  for (auto _ : state) {
    absl::Status s = gpu->EnqueueCuda(devices::KernelCost{"Empty", 0, 0},
                                      [] { return absl::OkStatus(); })
                         ->Wait(absl::Seconds(10));
    if (Failed(state, s)) break;
  }
}
BENCHMARK(BM_CudaDeviceRoundTrip)->UseRealTime();

// Its baseline: a cudaEvent recorded on the stream and waited for.
void BM_RawEventRoundTrip(benchmark::State& state) {
  CudaDevice* gpu = GpuOrSkip(state);
  if (gpu == nullptr) return;
  cudaSetDevice(gpu->ordinal());
  cudaEvent_t event;
  cudaEventCreateWithFlags(&event, cudaEventDisableTiming);
  for (auto _ : state) {
    cudaEventRecord(event, gpu->stream());
    cudaEventSynchronize(event);
  }
  cudaEventDestroy(event);
}
BENCHMARK(BM_RawEventRoundTrip)->UseRealTime();

// NcclCommunicator::AllReduce (in place, sum) of n float32 on GPU 0 alone.
void BM_NcclCommunicatorAllReduce(benchmark::State& state) {
  CudaDevice* gpu = GpuOrSkip(state);
  if (gpu == nullptr) return;
  auto comm = devices::cuda::NcclCommunicator::CreateLocal({gpu});
  if (Failed(state, comm.status())) return;
  const int64_t n = state.range(0);
  Tensor t = Filled(*gpu, n, 1);
  TimeOnStream(state, *gpu, [&] {
    return (*comm)->AllReduce(0, t, t, devices::CollectiveOptions{});
  });
}
BENCHMARK(BM_NcclCommunicatorAllReduce)
    ->Arg(1024)
    ->Arg(1 << 24)
    ->UseManualTime();

// The same all-reduce as a bare ncclAllReduce on a one-rank communicator
// of its own, on the GPU's stream: the baseline of the one above.
void BM_RawNcclAllReduce(benchmark::State& state) {
  CudaDevice* gpu = GpuOrSkip(state);
  if (gpu == nullptr) return;
  cudaSetDevice(gpu->ordinal());
  char id[devices::cuda::kNcclUniqueIdBytes];
  ncclComm* comm = nullptr;
  int result = devices::cuda::NcclGetUniqueId(id);
  if (result == devices::cuda::kNcclSuccess) {
    result = devices::cuda::NcclCommInitRankNonBlocking(&comm, 1, id, 0);
  }
  while (result == devices::cuda::kNcclInProgress) {
    devices::cuda::NcclCommGetAsyncError(comm, &result);
  }
  if (result != devices::cuda::kNcclSuccess) {
    state.SkipWithError(devices::cuda::NcclErrorString(result));
    return;
  }
  const int64_t n = state.range(0);
  Tensor t = Filled(*gpu, n, 1);
  const int f32 = static_cast<int>(DType::kFloat32);
  const int sum = static_cast<int>(devices::ReduceOp::kSum);
  TimeOnStream(state, *gpu, [&] {
    int r = devices::cuda::NcclAllReduce(t.raw_data(), t.raw_data(), n, f32,
                                         sum, comm, gpu->stream());
    while (r == devices::cuda::kNcclInProgress) {
      devices::cuda::NcclCommGetAsyncError(comm, &r);
    }
    return r == devices::cuda::kNcclSuccess
               ? absl::OkStatus()
               : absl::InternalError(devices::cuda::NcclErrorString(r));
  });
  devices::cuda::NcclCommDestroy(comm);
}
BENCHMARK(BM_RawNcclAllReduce)->Arg(1024)->Arg(1 << 24)->UseManualTime();

}  // namespace
