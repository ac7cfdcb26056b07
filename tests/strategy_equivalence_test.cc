// The same training program (tools/distsim/classifier_training.h) under
// OneDevice, Mirrored on 2, 4 and 8 replicas and CentralStorage ends with
// the same weights: bit for bit where the reduction order is the same
// (Mirrored and CentralStorage over the same devices), within a stated
// tolerance where the number of replicas changes the order of the float
// sums of gradients.
#include <cmath>
#include <memory>
#include <string>
#include <vector>

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

// Different replica counts sum the gradients of a step in a different
// order; after a few steps of SGD with momentum the weights differ by a
// few float32 ulps of their magnitude (~1), far below this.
constexpr float kTolerance = 2e-5f;

TrainOptions Options() {
  TrainOptions o;
  o.steps = 6;
  o.global_batch = 64;
  o.num_features = 16;
  o.num_classes = 4;
  o.hidden = {32};
  o.seed = 7;
  return o;
}

std::vector<std::string> Cpus(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("/cpu:" + std::to_string(i));
  return out;
}

std::unique_ptr<devices::HostPlatform> Host(int n) {
  devices::HostPlatformOptions options;
  options.num_devices = n;
  return *devices::HostPlatform::Create(options);
}

float MaxAbsDiff(const TrainResult& a, const TrainResult& b) {
  float worst = 0;
  EXPECT_EQ(a.weights.size(), b.weights.size());
  for (size_t i = 0; i < a.weights.size(); ++i) {
    auto x = a.weights[i].ToVector<float>();
    auto y = b.weights[i].ToVector<float>();
    EXPECT_EQ(x.size(), y.size());
    for (size_t k = 0; k < x.size(); ++k) {
      worst = std::max(worst, std::fabs(x[k] - y[k]));
    }
  }
  return worst;
}

TEST(StrategyEquivalenceTest, EveryStrategyReachesTheSameWeights) {
  auto platform = Host(8);
  auto one = *OneDeviceStrategy::Create(*platform, "/cpu:0");
  absl::StatusOr<TrainResult> reference = TrainClassifier(*one, Options());
  ASSERT_TRUE(reference.ok()) << reference.status();
  ASSERT_TRUE(reference->final_loss.has_value());
  EXPECT_LT(*reference->final_loss, *reference->initial_loss);

  for (int n : {2, 4, 8}) {
    auto mirrored = *MirroredStrategy::Create(*platform, Cpus(n));
    absl::StatusOr<TrainResult> r = TrainClassifier(*mirrored, Options());
    ASSERT_TRUE(r.ok()) << n << " replicas: " << r.status();
    EXPECT_LT(MaxAbsDiff(*reference, *r), kTolerance) << n << " replicas";
    EXPECT_NEAR(*r->final_loss, *reference->final_loss, 1e-4);
  }

  auto mirrored4 = *MirroredStrategy::Create(*platform, Cpus(4));
  auto central4 = *CentralStorageStrategy::Create(*platform, Cpus(4), "/cpu:5");
  absl::StatusOr<TrainResult> m = TrainClassifier(*mirrored4, Options());
  absl::StatusOr<TrainResult> c = TrainClassifier(*central4, Options());
  ASSERT_TRUE(m.ok() && c.ok());
  // Same devices, same reduction order: bit for bit.
  EXPECT_EQ(m->weights_checksum, c->weights_checksum);
}

TEST(StrategyEquivalenceTest, RunsAreReproducible) {
  auto platform = Host(4);
  auto a = *MirroredStrategy::Create(*platform, Cpus(4));
  auto r1 = TrainClassifier(*a, Options());
  auto r2 = TrainClassifier(*a, Options());
  ASSERT_TRUE(r1.ok() && r2.ok());
  EXPECT_EQ(r1->weights_checksum, r2->weights_checksum);
}

TEST(StrategyEquivalenceTest, BadInputGetsClearErrors) {
  auto platform = Host(2);
  auto m = *MirroredStrategy::Create(*platform, Cpus(2));
  TrainOptions o = Options();
  o.optimizer = "rmsprop";
  EXPECT_EQ(TrainClassifier(*m, o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o = Options();
  o.global_batch = 0;
  EXPECT_EQ(TrainClassifier(*m, o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
