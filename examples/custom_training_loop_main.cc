// bazel run //examples:custom_training_loop [-- PLATFORM]
// e.g. host:4 (the default) or sim:dgx_h100.
#include <cstdio>
#include <string>

#include "devices/host_platform.h"
#include "devices/platform_registry.h"
#include "examples/custom_training_loop.h"
#include "simulator/sim_platform.h"

int main(int argc, char** argv) {
  devices::RegisterHostPlatform();
  simulator::RegisterSimPlatform();
  const std::string spec = argc > 1 ? argv[1] : "host:4";
  auto platform = devices::CreatePlatform(spec);
  if (!platform.ok()) {
    std::fprintf(stderr, "%s\n", platform.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<float> w = examples::FitLine(**platform, /*epochs=*/40);
  if (!w.ok()) {
    std::fprintf(stderr, "%s\n", w.status().ToString().c_str());
    return 1;
  }
  std::printf("on %s: learned w = %.4f (the data's is 3)\n", spec.c_str(), *w);
  return 0;
}
