// distsim: the project's command-line front end.
//
//   distsim                      the main job (see kDefaultCommand below),
//                                writing distsim_trace.json
//   distsim devices [--platform=SPEC]
//                                lists the registered platforms and the
//                                devices a platform finds
//   distsim help, distsim --help lists the subcommands
//   distsim help CMD             CMD's flags
//
// Exit status: 0 on success, 2 for a usage error (a subcommand's
// INVALID_ARGUMENT: a bad flag or flag value; an unknown subcommand), 1 for
// any other failure.
// Each subcommand lives in its own file (distsim/<name>.cc) and is listed in
// Subcommands() below; flags are parsed by the subcommand itself.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "tools/distsim/subcommands.h"

namespace distsim {
namespace {

void PrintHelp(const std::vector<Subcommand>& commands) {
  std::printf(
      "distsim: tf.distribute for C++ with a deterministic device and "
      "cluster simulator.\n\nUsage: distsim [SUBCOMMAND] [--flag=value ...]\n"
      "With no subcommand, runs `%s` (the main job).\n\nSubcommands:\n",
      std::string(kDefaultCommand).c_str());
  for (const Subcommand& c : commands) {
    std::printf("  %-12s %s\n", std::string(c.name).c_str(),
                std::string(c.summary).c_str());
  }
  std::printf("  %-12s %s\n", "help [CMD]", "this list, or CMD's flags");
  std::printf(
      "\nExit status: 0 on success, 2 for a bad flag or flag value, 1 for "
      "any other failure.\n");
}

}  // namespace
}  // namespace distsim

int main(int argc, char** argv) {
  // Progress lines reach a pipe or a file (a Slurm log, `| tee`) as they
  // are printed, and a run stopped by a signal has printed every line it
  // finished.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  const std::vector<distsim::Subcommand> commands = distsim::Subcommands();
  absl::string_view name = distsim::kDefaultCommand;
  std::vector<std::string> args;
  int first = 1;
  if (argc > 1 && argv[1][0] != '-') {
    name = argv[1];
    first = 2;
  }
  if (argc == 2 && (absl::string_view(argv[1]) == "--help" ||
                    absl::string_view(argv[1]) == "-h")) {
    distsim::PrintHelp(commands);
    return 0;
  }
  // `distsim help CMD`: CMD's flags.
  if (name == "help" && argc > 2) {
    name = argv[2];
    first = 3;
    for (const distsim::Subcommand& c : commands) {
      if (c.name == name) return c.run({"--help"}).ok() ? 0 : 1;
    }
  }
  // The main job (no subcommand) also writes its Chrome trace.
  if (first == 1) args.emplace_back("--trace=distsim_trace.json");
  for (int i = first; i < argc; ++i) args.emplace_back(argv[i]);
  if (name == "help" || name == "--help" || name == "-h") {
    distsim::PrintHelp(commands);
    return 0;
  }
  for (const distsim::Subcommand& c : commands) {
    if (c.name != name) continue;
    absl::Status status = c.run(args);
    if (!status.ok()) {
      std::fprintf(stderr, "distsim %s: %s\n", std::string(name).c_str(),
                   status.ToString().c_str());
      // INVALID_ARGUMENT is what the commands return for a bad flag or
      // flag value: a usage error, as shells expect it (2).
      return absl::IsInvalidArgument(status) ? 2 : 1;
    }
    return 0;
  }
  std::fprintf(stderr, "distsim: unknown subcommand '%s'; try `distsim help`\n",
               std::string(name).c_str());
  return 2;
}
