// Runs a program to completion and collects what it prints: the one way
// the project starts helper programs (nvidia-smi, gnuplot).
//
//   absl::StatusOr<ChildResult> ran =
//       RunChild({"nvidia-smi", "--list-gpus"}, absl::Seconds(10));
//   if (ran.ok() && WIFEXITED(ran->wait_status) &&
//       WEXITSTATUS(ran->wait_status) == 0) { ... ran->output ... }
#ifndef DISTRIBUTE_CLUSTER_CHILD_PROCESS_H_
#define DISTRIBUTE_CLUSTER_CHILD_PROCESS_H_

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace distribute {
namespace cluster {

// What is kept of a child's output; the rest is read and dropped.
inline constexpr size_t kMaxChildOutput = 64 << 10;

struct ChildResult {
  int wait_status = 0;  // as waitpid gives it
  std::string output;   // stdout and stderr, interleaved, at most
                        // kMaxChildOutput bytes
};

// Runs `args` (args[0] looked up on PATH unless it holds a '/') in a process
// group of its own, with stdin from /dev/null and stdout and stderr into one
// pipe, the signal mask cleared and SIGPIPE at its default; returns its wait
// status and output once it exits (however it exits). NOT_FOUND when the
// program does not exist; DEADLINE_EXCEEDED, with the group killed, past
// `timeout`; FAILED_PRECONDITION or INTERNAL when it cannot be started or
// watched.
absl::StatusOr<ChildResult> RunChild(const std::vector<std::string>& args,
                                     absl::Duration timeout);

}  // namespace cluster
}  // namespace distribute

#endif  // DISTRIBUTE_CLUSTER_CHILD_PROCESS_H_
