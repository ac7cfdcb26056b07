#include "distribute/cluster/nvidia_smi.h"

#include <sys/wait.h>

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "devices/status_macros.h"
#include "distribute/cluster/child_process.h"

namespace distribute {
namespace cluster {
namespace {

// How much of the output an error quotes.
constexpr size_t kQuotedOutput = 300;

}  // namespace

absl::StatusOr<int64_t> NvidiaSmiGpuCount(absl::string_view program,
                                          absl::Duration timeout) {
  const std::vector<std::string> args = {std::string(program), "--list-gpus"};
  ASSIGN_OR_RETURN(ChildResult ran, RunChild(args, timeout));
  const int status = ran.wait_status;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string quoted(absl::StripAsciiWhitespace(ran.output));
    if (quoted.size() > kQuotedOutput) {
      quoted = absl::StrCat(quoted.substr(0, kQuotedOutput), "...");
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "`", absl::StrJoin(args, " "), "` ",
        WIFEXITED(status)
            ? absl::StrCat("exited with status ", WEXITSTATUS(status))
            : absl::StrCat("was killed by signal ", WTERMSIG(status)),
        quoted.empty() ? std::string(", printing nothing")
                       : absl::StrCat(": ", quoted)));
  }
  int64_t gpus = 0;
  for (absl::string_view line : absl::StrSplit(ran.output, '\n')) {
    if (absl::StartsWith(line, "GPU ")) ++gpus;
  }
  return gpus;
}

}  // namespace cluster
}  // namespace distribute
