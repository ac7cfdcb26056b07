#include "distribute/cluster/nvidia_smi.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace distribute {
namespace cluster {
namespace {

// What is kept of the child's output: a GPU line is about 80 bytes, so
// this is room for hundreds of GPUs; the rest is read and dropped.
constexpr size_t kMaxOutput = 64 << 10;
// How much of the output an error quotes.
constexpr size_t kQuotedOutput = 300;

struct ChildResult {
  int wait_status = 0;
  std::string output;
};

int RemainingMs(absl::Time deadline) {
  const absl::Duration left = deadline - absl::Now();
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(absl::ToInt64Milliseconds(left)) + 1;
}

// Kills and reaps the child, then says it ran out of time.
absl::Status KillForTimeout(pid_t pid, const std::string& command,
                            absl::Duration timeout) {
  kill(pid, SIGKILL);
  while (waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  return absl::DeadlineExceededError(
      absl::StrCat("`", command, "` did not finish within ",
                   absl::FormatDuration(timeout), "; it was killed"));
}

// Runs argv with stdin from /dev/null and stdout and stderr into one pipe;
// returns its wait status and output once it exits, within `timeout`.
absl::StatusOr<ChildResult> RunChild(const std::vector<std::string>& args,
                                     absl::Duration timeout) {
  const std::string command = absl::StrJoin(args, " ");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(
        absl::StrCat("pipe for `", command, "`: ", std::strerror(errno)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  std::vector<char*> argv;
  for (const std::string& arg : args) {
    argv.push_back(const_cast<char*>(arg.c_str()));
  }
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned =
      posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (spawned != 0) {
    close(fds[0]);
    if (spawned == ENOENT) {
      return absl::NotFoundError(
          absl::StrCat("`", command, "`: ", args[0], " is not on PATH"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "`", command, "` could not be started: ", std::strerror(spawned)));
  }

  const absl::Time deadline = absl::Now() + timeout;
  ChildResult result;
  char buffer[4096];
  while (true) {
    pollfd ready{fds[0], POLLIN, 0};
    const int polled = poll(&ready, 1, RemainingMs(deadline));
    if (polled < 0 && errno == EINTR) continue;
    if (polled <= 0) {
      close(fds[0]);
      return KillForTimeout(pid, command, timeout);
    }
    const ssize_t n = read(fds[0], buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // End of output (or a read error: output is done).
    const size_t room = kMaxOutput - result.output.size();
    result.output.append(buffer, std::min(static_cast<size_t>(n), room));
  }
  close(fds[0]);
  // The output is closed; the child may still be on its way out.
  while (true) {
    const pid_t waited = waitpid(pid, &result.wait_status, WNOHANG);
    if (waited == pid) return result;
    if (waited < 0 && errno != EINTR) {
      return absl::InternalError(
          absl::StrCat("waiting for `", command, "`: ", std::strerror(errno)));
    }
    if (RemainingMs(deadline) == 0) {
      return KillForTimeout(pid, command, timeout);
    }
    usleep(1000);
  }
}

}  // namespace

absl::StatusOr<int64_t> NvidiaSmiGpuCount(absl::string_view program,
                                          absl::Duration timeout) {
  const std::vector<std::string> args = {std::string(program), "--list-gpus"};
  absl::StatusOr<ChildResult> ran = RunChild(args, timeout);
  if (!ran.ok()) return ran.status();
  const int status = ran->wait_status;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string quoted(absl::StripAsciiWhitespace(ran->output));
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
  for (absl::string_view line : absl::StrSplit(ran->output, '\n')) {
    if (absl::StartsWith(line, "GPU ")) ++gpus;
  }
  return gpus;
}

}  // namespace cluster
}  // namespace distribute
