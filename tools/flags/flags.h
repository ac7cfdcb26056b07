// FlagSet: the command-line flags of every binary of the project (distsim's
// subcommands, the benchmark workers, the test workers, the examples), on
// CLI11 (Debian's libcli11-dev, //third_party:cli11).
//
//   std::string platform = "host";
//   int64_t steps = 100;
//   bool json = false;
//   tools_flags::FlagSet flags("distsim train");
//   flags.String("platform", &platform, "platform spec, e.g. host:4");
//   flags.Int("steps", &steps, "training steps");
//   flags.Bool("json", &json, "print one JSON object");
//   absl::Status s = flags.Parse(argc, argv);  // or Parse(args)
//   if (absl::IsCancelled(s)) return 0;        // --help: usage printed
//   if (!s.ok()) ...;                          // INVALID_ARGUMENT: usage error
//
// Why a thin adapter rather than CLI::App in every binary: CLI11 reports
// errors by throwing, and this project's errors are absl::Status (no
// exception crosses a function boundary of ours). FlagSet is the one place
// that catches CLI11's exceptions and turns them into INVALID_ARGUMENT
// messages naming the flag; it also keeps every binary's conventions the
// same (a repeated flag takes its last value, `--name=` sets an empty
// string, --help lists each flag with its default), and a flag declaration
// stays one readable line. CLI11 does the work: tokenizing, matching names,
// converting and checking values, bare `--flag` and `--flag=true|false` for
// booleans, and the --help text (through a CLI::Formatter).
//
// Accepted spellings: `--name=value` and `--name value`; booleans also bare
// `--name` (true) and `--name=false` (true/false, yes/no, on/off, 1/0).
// Rejected with INVALID_ARGUMENT naming the argument: an unknown flag, a
// positional argument (unless Positionals() declared some), an integer or
// number that does not parse or does not fit, a flag without its value.
#ifndef TOOLS_FLAGS_FLAGS_H_
#define TOOLS_FLAGS_FLAGS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace CLI {
class App;
}  // namespace CLI

namespace tools_flags {

class FlagSet {
 public:
  // `program` is how the user runs it ("distsim train", "mw_worker"); it
  // heads the --help text, followed by `description` when not empty.
  explicit FlagSet(std::string program, std::string description = "");
  ~FlagSet();
  FlagSet(const FlagSet&) = delete;
  FlagSet& operator=(const FlagSet&) = delete;

  // Declares --name. The variable's value when declared is the default shown
  // by --help; Parse() overwrites it when the flag is given. The variable
  // must outlive the FlagSet's last Parse().
  void String(const std::string& name, std::string* value,
              const std::string& help);
  // A decimal integer in int64_t's range.
  void Int(const std::string& name, int64_t* value, const std::string& help);
  // A decimal floating-point number (1e-3, 0.5, 600).
  void Double(const std::string& name, double* value, const std::string& help);
  // Bare --name sets true; --name=true|false (yes/no, on/off, 1/0) sets it.
  void Bool(const std::string& name, bool* value, const std::string& help);
  // The arguments that are not flags, in order (e.g. input files); without
  // this declaration they are refused. `name` is their name in --help.
  void Positionals(const std::string& name, std::vector<std::string>* values,
                   const std::string& help);

  // Parses `args` (without the program name). OK when every argument was
  // accepted; CANCELLED after printing Usage() to stdout when --help or -h
  // was given; INVALID_ARGUMENT naming the offending argument otherwise (an
  // unknown flag's message also carries Usage()). Values of flags before the
  // offending argument may have been set.
  absl::Status Parse(const std::vector<std::string>& args);
  // The same for main()'s arguments (argv[0] is the program, skipped).
  absl::Status Parse(int argc, const char* const* argv);

  // Whether --name was given in the last Parse().
  bool Given(const std::string& name) const;

  // The flags with their defaults and help, as --help prints them.
  std::string Usage() const;

 private:
  std::string program_;
  std::unique_ptr<CLI::App> app_;
};

}  // namespace tools_flags

#endif  // TOOLS_FLAGS_FLAGS_H_
