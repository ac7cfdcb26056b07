// Command lines, as users type them for every binary of the project
// (tools/flags: FlagSet over CLI11). The input's lines are the arguments.
// Parse must never throw or crash, and must answer OK, CANCELLED (--help)
// or INVALID_ARGUMENT; what it accepts, written back as --name=value, parses
// again to the same values.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "tools/flags/flags.h"
#include "tools/fuzz/fuzz_check.h"

namespace {

struct Values {
  std::string platform = "host";
  int64_t steps = 100;
  double lr = 0.1;
  bool json = false;
  std::vector<std::string> files;
};

absl::Status Parse(const std::vector<std::string>& args, Values& v) {
  tools_flags::FlagSet flags("fuzz", "flags of a fuzzed binary");
  flags.String("platform", &v.platform, "a string");
  flags.Int("steps", &v.steps, "an integer");
  flags.Double("lr", &v.lr, "a number");
  flags.Bool("json", &v.json, "a boolean");
  flags.Positionals("files", &v.files, "the rest");
  return flags.Parse(args);
}

bool SameDouble(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) || a == b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // --help prints the usage to stdout, which would flood the fuzzer's log.
  static const bool quiet = std::freopen("/dev/null", "w", stdout) != nullptr;
  (void)quiet;
  const absl::string_view input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> args;
  if (!input.empty()) args = absl::StrSplit(input, '\n');
  Values v;
  const absl::Status status = Parse(args, v);
  FUZZ_CHECK(status.ok() || absl::IsCancelled(status) ||
                 absl::IsInvalidArgument(status),
             "unexpected status %s", status.ToString().c_str());
  if (!status.ok()) {
    FUZZ_CHECK(!status.message().empty(), "an error without a message");
    return 0;
  }
  Values again;
  const std::vector<std::string> written = {
      "--platform=" + v.platform,
      absl::StrFormat("--steps=%d", v.steps),
      absl::StrFormat("--lr=%.17g", v.lr),
      v.json ? "--json=true" : "--json=false",
  };
  const absl::Status reparsed = Parse(written, again);
  FUZZ_CHECK(reparsed.ok(), "the accepted values do not parse again: %s",
             reparsed.ToString().c_str());
  FUZZ_CHECK(again.platform == v.platform, "platform changed");
  FUZZ_CHECK(again.steps == v.steps, "steps changed");
  FUZZ_CHECK(SameDouble(again.lr, v.lr), "lr %.17g became %.17g", v.lr,
             again.lr);
  FUZZ_CHECK(again.json == v.json, "json changed");
  return 0;
}
