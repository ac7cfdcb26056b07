// bazel run //examples:custom_training_loop [-- PLATFORM]
// e.g. host:4 (the default) or sim:dgx_h100.
#include <cstdio>
#include <string>
#include <vector>

#include "devices/host_platform.h"
#include "devices/platform_registry.h"
#include "examples/custom_training_loop.h"
#include "simulator/sim_platform.h"
#include "tools/flags/flags.h"

int main(int argc, char** argv) {
  devices::RegisterHostPlatform();
  simulator::RegisterSimPlatform();
  std::vector<std::string> positionals;
  tools_flags::FlagSet flags("custom_training_loop",
                             "Fits y = 3x with a custom training loop.");
  flags.Positionals("PLATFORM", &positionals,
                    "where to run: host:4 (the default), sim:dgx_h100, ...");
  const absl::Status parsed = flags.Parse(argc, argv);
  if (absl::IsCancelled(parsed)) return 0;  // --help
  if (!parsed.ok() || positionals.size() > 1) {
    std::fprintf(stderr, "%s\n",
                 parsed.ok() ? "give at most one PLATFORM"
                             : std::string(parsed.message()).c_str());
    return 2;
  }
  const std::string spec = positionals.empty() ? "host:4" : positionals[0];
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
