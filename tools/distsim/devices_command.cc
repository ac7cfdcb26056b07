// `distsim devices`: the registered platforms, the simulator's built-in
// topologies, and the devices one platform finds, with their kind and
// memory.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_join.h"
#include "devices/device.h"
#include "devices/platform.h"
#include "devices/platform_registry.h"
#include "devices/status_macros.h"
#include "simulator/builtin_topologies.h"
#include "tools/distsim/platforms.h"
#include "tools/distsim/subcommands.h"
#include "tools/flags/flags.h"

namespace distsim {

absl::Status RunDevices(const std::vector<std::string>& args) {
  std::string spec = "host";
  tools_flags::FlagSet flags("distsim devices");
  flags.String("platform", &spec,
               "platform spec: host, host:N (N logical CPUs), cuda, "
               "sim:TOPOLOGY");
  absl::Status parsed = flags.Parse(args);
  if (absl::IsCancelled(parsed)) return absl::OkStatus();
  RETURN_IF_ERROR(parsed);

  RegisterAllPlatforms();
  std::printf("platforms: %s\n",
              absl::StrJoin(devices::ListPlatformFactories(), ", ").c_str());
  std::printf("sim: topologies:\n");
  for (const simulator::BuiltinTopologyInfo& info :
       simulator::ListBuiltinTopologies()) {
    std::printf("  %-24s %s\n", info.name.c_str(), info.description.c_str());
  }
  ASSIGN_OR_RETURN(std::unique_ptr<devices::Platform> platform,
                   devices::CreatePlatform(spec));
  std::printf("platform %s: %zu device(s)\n", platform->name().c_str(),
              platform->DeviceNames().size());
  for (const std::string& name : platform->DeviceNames()) {
    ASSIGN_OR_RETURN(devices::Device * device, platform->FindDevice(name));
    std::printf("  %-48s %-4s %10.2f GiB\n", name.c_str(),
                std::string(devices::DeviceKindName(device->kind())).c_str(),
                static_cast<double>(device->memory_capacity()) /
                    (1024.0 * 1024.0 * 1024.0));
  }
  return absl::OkStatus();
}

}  // namespace distsim
