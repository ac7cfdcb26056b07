// Child processes for the multi-process tests: spawn a binary with extra
// environment variables and its output in files, wait for it with a
// deadline, and never leave it behind (the destructor kills and reaps a
// child that still runs). Also: free local TCP ports.
//
//   std::vector<int> ports = *distsim_test::FreePorts(2);
//   auto child = distsim_test::ChildProcess::Spawn(
//       "/path/to/bin", {"--steps=3"}, {{"TF_CONFIG", config}}, "/tmp/w0");
//   absl::StatusOr<distsim_test::ExitInfo> exit =
//       (*child)->Wait(absl::Seconds(30));   // DEADLINE_EXCEEDED: killed
//   std::string err = (*child)->Stderr();
#ifndef TESTS_SUBPROCESS_H_
#define TESTS_SUBPROCESS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace distsim_test {

struct ExitInfo {
  bool exited = false;  // By exit(); else killed by `signal`.
  int code = 0;
  int signal = 0;
};

// A child run to its end: how it ended and what it printed.
struct Finished {
  ExitInfo exit;
  std::string out;
  std::string err;
  bool ok() const { return exit.exited && exit.code == 0; }
};

class ChildProcess {
 public:
  // Runs `binary` with `args`, this process's environment plus `env`, and
  // stdout / stderr in "<log_prefix>.out" / "<log_prefix>.err".
  // UNAVAILABLE if fork fails; a binary that cannot be executed exits 127.
  static absl::StatusOr<std::unique_ptr<ChildProcess>> Spawn(
      const std::string& binary, const std::vector<std::string>& args,
      const std::vector<std::pair<std::string, std::string>>& env,
      const std::string& log_prefix);

  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills (SIGKILL) and reaps the child if it is still running.
  ~ChildProcess();

  // Waits for the child to end, for at most `timeout`; past it the child
  // is killed, reaped and the result is DEADLINE_EXCEEDED.
  absl::StatusOr<ExitInfo> Wait(absl::Duration timeout);
  // Sends SIGKILL (if still running) and reaps.
  void Kill();

  pid_t pid() const { return pid_; }
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  ChildProcess(pid_t pid, std::string log_prefix)
      : pid_(pid), log_prefix_(std::move(log_prefix)) {}

  pid_t pid_;
  bool reaped_ = false;
  ExitInfo exit_;
  std::string log_prefix_;
};

// Spawns `binary` as ChildProcess::Spawn does and waits for it, at most
// `timeout` (then it is killed and the result is DEADLINE_EXCEEDED).
absl::StatusOr<Finished> RunToEnd(
    const std::string& binary, const std::vector<std::string>& args,
    const std::string& log_prefix, absl::Duration timeout,
    const std::vector<std::pair<std::string, std::string>>& env = {});

// Where the test's runfile at workspace-relative `path` (e.g.
// "tools/distsim/distsim") is, as Bazel's runfiles library finds it (the
// runfiles directory or its manifest); `path` itself outside Bazel.
std::string Runfile(const std::string& path);

// `name` in the test's TEST_TMPDIR (/tmp outside Bazel).
std::string TestTmpPath(const std::string& name);

// `n` distinct TCP ports of 127.0.0.1 that were free a moment ago (bound
// to port 0 together, then released).
absl::StatusOr<std::vector<int>> FreePorts(int n);

// The first of `n` consecutive TCP ports of 127.0.0.1 that were all free a
// moment ago (what a Slurm cluster's port_base needs); UNAVAILABLE when
// none is found in a few tries.
absl::StatusOr<int> FreePortRange(int n);

// The value of "key" in the one-line JSON object `line` (as distsim's
// --json prints it: numbers and strings without escapes), or "" when
// absent.
std::string JsonField(const std::string& line, const std::string& key);

// A TF_CONFIG value: `cluster` (a JSON object of jobs) and this task.
std::string TfConfig(const std::string& cluster, const std::string& type,
                     int index);

}  // namespace distsim_test

#endif  // TESTS_SUBPROCESS_H_
