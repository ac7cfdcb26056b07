// The subcommands of the distsim tool. Each parses its own flags with
// tools_flags::FlagSet (tools/flags/flags.h, on CLI11), named after the
// command as the user types it:
//
//   tools_flags::FlagSet flags("distsim devices");
//   std::string platform = "host";
//   flags.String("platform", &platform, "platform spec, e.g. host:4");
//   absl::Status s = flags.Parse(args);   // INVALID_ARGUMENT on unknown flags
//   if (absl::IsCancelled(s)) return absl::OkStatus();  // --help
#ifndef TOOLS_DISTSIM_SUBCOMMANDS_H_
#define TOOLS_DISTSIM_SUBCOMMANDS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace distsim {

struct Subcommand {
  absl::string_view name;
  absl::string_view summary;
  std::function<absl::Status(const std::vector<std::string>&)> run;
};

// What `distsim` runs with no subcommand.
inline constexpr absl::string_view kDefaultCommand = "train";
// The platform of the main job.
inline constexpr absl::string_view kDefaultPlatform = "sim:dgx_h100";
// The default platform of --strategy=tpu.
inline constexpr absl::string_view kDefaultTpuPlatform = "sim:tpu_v4:2x2x1";
// The platform of `train --strategy=multi_worker_mirrored` without TF_CONFIG:
// two simulated DGX H100 hosts.
inline constexpr absl::string_view kDefaultCluster = "sim:dgx_h100_cluster:2";

// Every subcommand, in the order `distsim help` lists them.
std::vector<Subcommand> Subcommands();

// A path the user gave on the command line: relative paths mean the
// directory the user ran `bazel run` from (BUILD_WORKING_DIRECTORY), not
// the runfiles tree bazel runs the tool in; unchanged outside bazel run.
std::string UserPath(std::string path);

// The subcommands' entry points, one file each.
absl::Status RunCollective(const std::vector<std::string>& args);
absl::Status RunDevices(const std::vector<std::string>& args);
absl::Status RunTrain(const std::vector<std::string>& args);
absl::Status RunValidate(const std::vector<std::string>& args);

}  // namespace distsim

#endif  // TOOLS_DISTSIM_SUBCOMMANDS_H_
