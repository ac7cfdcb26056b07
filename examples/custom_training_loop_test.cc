// The example trains to the data's weight on host devices and on a
// simulated DGX H100, and the same on both (the same sums in the same
// order).
#include "examples/custom_training_loop.h"

#include "devices/host_platform.h"
#include "devices/platform_registry.h"
#include "gtest/gtest.h"
#include "simulator/sim_platform.h"

namespace {

TEST(CustomTrainingLoopTest, FitsTheLineOnHostAndSimulatedGpus) {
  devices::RegisterHostPlatform();
  simulator::RegisterSimPlatform();
  auto host = devices::CreatePlatform("host:4");
  ASSERT_TRUE(host.ok()) << host.status();
  absl::StatusOr<float> on_host = examples::FitLine(**host, 40);
  ASSERT_TRUE(on_host.ok()) << on_host.status();
  EXPECT_NEAR(*on_host, 3.0f, 1e-3);

  auto sim = devices::CreatePlatform("sim:dgx_h100");
  ASSERT_TRUE(sim.ok()) << sim.status();
  absl::StatusOr<float> on_sim = examples::FitLine(**sim, 40);
  ASSERT_TRUE(on_sim.ok()) << on_sim.status();
  EXPECT_NEAR(*on_sim, 3.0f, 1e-3);
}

}  // namespace
