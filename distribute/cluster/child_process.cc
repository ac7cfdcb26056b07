#include "distribute/cluster/child_process.h"

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

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"

extern char** environ;

namespace distribute {
namespace cluster {
namespace {

// The longest single wait, so that the deadline and the child's exit are
// looked at often.
constexpr absl::Duration kSlice = absl::Milliseconds(20);
// How long output is still read after the child exits while something it
// started (in its process group) keeps the pipe open.
constexpr absl::Duration kDrainGrace = absl::Milliseconds(200);
// How long a killed child is waited for; one stuck in the kernel (a wedged
// driver) may not die, and is then left behind rather than waited for.
constexpr absl::Duration kReapGrace = absl::Seconds(1);

// The part of a wait of at most kSlice that is left before `deadline`, in
// whole milliseconds for poll().
int SliceMs(absl::Time deadline) {
  const absl::Duration left =
      std::min(deadline - absl::Now(), absl::Duration(kSlice));
  if (left <= absl::ZeroDuration()) return 0;
  return static_cast<int>(
      absl::ToInt64Milliseconds(absl::Ceil(left, absl::Milliseconds(1))));
}

// Kills the child's process group and reaps the child within kReapGrace.
// Returns whether it was reaped.
bool KillAndReap(pid_t pid) {
  kill(-pid, SIGKILL);
  const absl::Time give_up = absl::Now() + kReapGrace;
  while (true) {
    const pid_t waited = waitpid(pid, nullptr, WNOHANG);
    if (waited == pid || (waited < 0 && errno != EINTR)) return true;
    if (absl::Now() >= give_up) return false;
    absl::SleepFor(absl::Milliseconds(1));
  }
}

absl::Status Killed(pid_t pid, const std::string& command,
                    absl::string_view why) {
  const bool reaped = KillAndReap(pid);
  return absl::DeadlineExceededError(absl::StrCat(
      "`", command, "` ", why, "; it was killed",
      reaped ? "" : " (it has not exited yet: stuck in the kernel?)"));
}

// A descriptor at 3 or above, so that the child's dup2 onto 0..2 never
// meets it where it already is; closes `fd` when it moves it.
int AboveStdio(int fd) {
  if (fd > 2) return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return moved;
}

}  // namespace

absl::StatusOr<ChildResult> RunChild(const std::vector<std::string>& args,
                                     absl::Duration timeout) {
  const std::string command = absl::StrJoin(args, " ");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    return absl::InternalError(
        absl::StrCat("pipe for `", command, "`: ", std::strerror(errno)));
  }
  const int read_fd = AboveStdio(fds[0]);
  const int write_fd = AboveStdio(fds[1]);
  if (read_fd < 0 || write_fd < 0) {
    const int error = errno;
    if (read_fd >= 0) close(read_fd);
    if (write_fd >= 0) close(write_fd);
    return absl::InternalError(
        absl::StrCat("pipe for `", command, "`: ", std::strerror(error)));
  }
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  sigset_t no_signals;
  sigemptyset(&no_signals);
  sigset_t default_signals;
  sigemptyset(&default_signals);
  sigaddset(&default_signals, SIGPIPE);
  int setup =
      posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  if (setup == 0)
    setup = posix_spawn_file_actions_adddup2(&actions, write_fd, 1);
  if (setup == 0)
    setup = posix_spawn_file_actions_adddup2(&actions, write_fd, 2);
  if (setup == 0) {
    setup = posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP |
                                                      POSIX_SPAWN_SETSIGMASK |
                                                      POSIX_SPAWN_SETSIGDEF);
  }
  if (setup == 0) setup = posix_spawnattr_setpgroup(&attributes, 0);
  if (setup == 0) setup = posix_spawnattr_setsigmask(&attributes, &no_signals);
  if (setup == 0) {
    setup = posix_spawnattr_setsigdefault(&attributes, &default_signals);
  }
  std::vector<char*> argv;
  for (const std::string& arg : args) {
    argv.push_back(const_cast<char*>(arg.c_str()));
  }
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = setup != 0
                          ? setup
                          : posix_spawnp(&pid, argv[0], &actions, &attributes,
                                         argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  close(write_fd);
  if (spawned != 0) {
    close(read_fd);
    if (spawned == ENOENT) {
      return absl::NotFoundError(
          absl::StrCat("`", command, "`: ", args[0],
                       absl::StrContains(args[0], '/')
                           ? " does not exist (or its interpreter does not)"
                           : " is not on PATH"));
    }
    return absl::FailedPreconditionError(absl::StrCat(
        "`", command, "` could not be started: ", std::strerror(spawned)));
  }

  absl::Cleanup close_read = [read_fd] { close(read_fd); };
  const absl::Time deadline = absl::Now() + timeout;
  ChildResult result;
  bool exited = false;
  absl::Time exited_at;
  bool output_done = false;
  char buffer[4096];
  while (!(exited && output_done)) {
    if (!exited) {
      const pid_t waited = waitpid(pid, &result.wait_status, WNOHANG);
      if (waited == pid) {
        exited = true;
        exited_at = absl::Now();
        continue;
      }
      if (waited < 0 && errno != EINTR) {
        const int error = errno;
        KillAndReap(pid);
        return absl::InternalError(absl::StrCat("waiting for `", command,
                                                "`: ", std::strerror(error)));
      }
      if (absl::Now() >= deadline) {
        return Killed(pid, command,
                      absl::StrCat("did not finish within ",
                                   absl::FormatDuration(timeout)));
      }
    } else if (absl::Now() - exited_at >= kDrainGrace) {
      // It exited, but something it started still holds the pipe: what
      // it printed is in; stop reading, and stop that too.
      kill(-pid, SIGKILL);
      break;
    }
    if (output_done) {  // The child closed its output but still runs.
      absl::SleepFor(absl::Milliseconds(1));
      continue;
    }
    pollfd ready{read_fd, POLLIN, 0};
    const int polled = poll(&ready, 1, exited ? 1 : SliceMs(deadline));
    if (polled < 0 && errno != EINTR) {
      const int error = errno;
      if (!exited) KillAndReap(pid);
      return absl::InternalError(absl::StrCat(
          "reading the output of `", command, "`: ", std::strerror(error)));
    }
    if (polled <= 0) continue;
    const ssize_t n = read(read_fd, buffer, sizeof(buffer));
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      // End of output (or a read error: no more output will come).
      output_done = true;
      continue;
    }
    const size_t room = kMaxChildOutput - result.output.size();
    result.output.append(buffer, std::min(static_cast<size_t>(n), room));
  }
  return result;
}

}  // namespace cluster
}  // namespace distribute
