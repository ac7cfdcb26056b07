// The subcommands of the distsim tool, and the small flag parser they share.
//
//   FlagSet flags;
//   std::string platform = "host";
//   flags.String("platform", &platform, "platform spec, e.g. host:4");
//   absl::Status s = flags.Parse(args);   // INVALID_ARGUMENT on unknown flags
#ifndef TOOLS_DISTSIM_SUBCOMMANDS_H_
#define TOOLS_DISTSIM_SUBCOMMANDS_H_

#include <cstdint>
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

// --name=value flags (and bare --name for booleans). Parse() rejects unknown
// flags, positional arguments and malformed values with INVALID_ARGUMENT
// naming the flag; --help prints the flags and returns CANCELLED.
class FlagSet {
 public:
  explicit FlagSet(std::string command) : command_(std::move(command)) {}
  void String(std::string name, std::string* value, std::string help);
  void Int(std::string name, int64_t* value, std::string help);
  void Double(std::string name, double* value, std::string help);
  void Bool(std::string name, bool* value, std::string help);
  absl::Status Parse(const std::vector<std::string>& args);
  std::string Usage() const;

 private:
  enum class Kind { kString, kInt, kDouble, kBool };
  struct Flag {
    std::string name;
    Kind kind;
    void* value;
    std::string help;
    std::string default_value;
  };
  absl::Status Set(const Flag& flag, absl::string_view text);

  std::string command_;
  std::vector<Flag> flags_;
};

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
