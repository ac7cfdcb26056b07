// OneDevice, Mirrored and CentralStorage training on the cuda platform
// (every local GPU), against the same program on host CPU devices: the weights
// after a few steps agree within 1e-4 relative (cuBLAS sums MatMul products
// and NCCL sums gradients in other orders than the host, so float32 results
// differ in the last bits and the differences grow a little each step).
// Skipped where there is no CUDA GPU.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "devices/cuda/cuda_platform.h"
#include "devices/host_platform.h"
#include "distribute/central_storage_strategy.h"
#include "distribute/mirrored_strategy.h"
#include "distribute/one_device_strategy.h"
#include "gtest/gtest.h"
#include "tools/distsim/classifier_training.h"

namespace {

using distribute::CentralStorageStrategy;
using distribute::MirroredStrategy;
using distribute::OneDeviceStrategy;
using distsim::TrainClassifier;
using distsim::TrainOptions;
using distsim::TrainResult;

constexpr double kTolerance = 1e-4;

TrainOptions Options() {
  TrainOptions o;
  o.steps = 5;
  o.global_batch = 64;
  o.num_features = 16;
  o.num_classes = 4;
  o.hidden = {32};
  o.seed = 7;
  return o;
}

std::vector<std::string> Devices(const std::string& kind, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i)
    out.push_back("/" + kind + ":" + std::to_string(i));
  return out;
}

// "" if every weight of `got` is within kTolerance * max(1, |want|) of
// `want`, else the first that is not.
std::string FirstMismatch(const TrainResult& got, const TrainResult& want) {
  if (got.weights.size() != want.weights.size()) return "weight count";
  for (size_t w = 0; w < want.weights.size(); ++w) {
    const std::vector<float> a = got.weights[w].ToVector<float>();
    const std::vector<float> b = want.weights[w].ToVector<float>();
    if (a.size() != b.size()) return "shape of weight " + std::to_string(w);
    for (size_t i = 0; i < a.size(); ++i) {
      const double bound = kTolerance * std::max(1.0, std::fabs(double{b[i]}));
      if (!(std::fabs(double{a[i]} - double{b[i]}) <= bound)) {
        return "weight " + std::to_string(w) + " element " + std::to_string(i) +
               ": " + std::to_string(a[i]) + " vs " + std::to_string(b[i]);
      }
    }
  }
  return "";
}

TEST(CudaTrainingTest, OneDeviceAndMirroredMatchTheHost) {
  auto gpus = devices::cuda::CudaPlatform::Create();
  if (absl::IsFailedPrecondition(gpus.status())) {
    GTEST_SKIP() << gpus.status().message();
  }
  ASSERT_TRUE(gpus.ok()) << gpus.status();
  const int n = (*gpus)->num_gpus();
  devices::HostPlatformOptions host_options;
  host_options.num_devices = n;
  auto host = *devices::HostPlatform::Create(host_options);

  auto one_gpu = OneDeviceStrategy::Create(**gpus, "/gpu:0");
  ASSERT_TRUE(one_gpu.ok()) << one_gpu.status();
  auto one_cpu = *OneDeviceStrategy::Create(*host, "/cpu:0");
  auto a = TrainClassifier(**one_gpu, Options());
  auto b = TrainClassifier(*one_cpu, Options());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(FirstMismatch(*a, *b), "");
  EXPECT_NEAR(*a->final_loss, *b->final_loss, kTolerance);
  EXPECT_LT(*a->final_loss, *a->initial_loss);

  auto mirrored_gpu = MirroredStrategy::Create(**gpus, Devices("gpu", n));
  ASSERT_TRUE(mirrored_gpu.ok()) << mirrored_gpu.status();
  auto mirrored_cpu = *MirroredStrategy::Create(*host, Devices("cpu", n));
  auto c = TrainClassifier(**mirrored_gpu, Options());
  auto d = TrainClassifier(*mirrored_cpu, Options());
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(FirstMismatch(*c, *d), "") << n << " GPUs";
  EXPECT_NEAR(*c->final_loss, *d->final_loss, kTolerance);

  // Variables on the host CPU, replicas on the GPUs.
  auto central_gpu =
      CentralStorageStrategy::Create(**gpus, Devices("gpu", n), "/cpu:0");
  ASSERT_TRUE(central_gpu.ok()) << central_gpu.status();
  auto central_cpu = *CentralStorageStrategy::Create(*host, Devices("cpu", n));
  auto e = TrainClassifier(**central_gpu, Options());
  auto f = TrainClassifier(*central_cpu, Options());
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(FirstMismatch(*e, *f), "") << n << " GPUs";
}

}  // namespace
