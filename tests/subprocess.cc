#include "tests/subprocess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "devices/status_macros.h"
#include "distribute/server/local_ports.h"
#include "tools/cpp/runfiles/runfiles.h"

extern char** environ;

namespace distsim_test {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)),
                     std::istreambuf_iterator<char>());
}

ExitInfo Decode(int status) {
  ExitInfo info;
  if (WIFEXITED(status)) {
    info.exited = true;
    info.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    info.signal = WTERMSIG(status);
  }
  return info;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(
    const std::string& binary, const std::vector<std::string>& args,
    const std::vector<std::pair<std::string, std::string>>& env,
    const std::string& log_prefix) {
  // Everything the child needs is built before fork: after it, only
  // async-signal-safe calls.
  std::vector<std::string> argv_storage = {binary};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry = *e;
    bool overridden = false;
    for (const auto& [name, value] : env) {
      if (entry.rfind(name + "=", 0) == 0) overridden = true;
    }
    if (!overridden) env_storage.push_back(std::move(entry));
  }
  for (const auto& [name, value] : env) {
    env_storage.push_back(absl::StrCat(name, "=", value));
  }
  std::vector<char*> envp;
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);
  const std::string out_path = log_prefix + ".out";
  const std::string err_path = log_prefix + ".err";

  const pid_t pid = fork();
  if (pid < 0) {
    return absl::UnavailableError(
        absl::StrCat("fork failed: ", std::strerror(errno)));
  }
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out < 0 || err < 0) _exit(126);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    execve(binary.c_str(), argv.data(), envp.data());
    _exit(127);
  }
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid, log_prefix));
}

ChildProcess::~ChildProcess() { Kill(); }

void ChildProcess::Kill() {
  if (reaped_) return;
  kill(pid_, SIGKILL);
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  exit_ = Decode(status);
}

absl::StatusOr<ExitInfo> ChildProcess::Wait(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!reaped_) {
    int status = 0;
    const pid_t done = waitpid(pid_, &status, WNOHANG);
    if (done == pid_) {
      reaped_ = true;
      exit_ = Decode(status);
      break;
    }
    if (done < 0 && errno != EINTR) {
      return absl::InternalError(
          absl::StrCat("waitpid(", pid_, ") failed: ", std::strerror(errno)));
    }
    if (absl::Now() >= deadline) {
      Kill();
      return absl::DeadlineExceededError(absl::StrCat(
          "process ", pid_, " still ran after ", absl::FormatDuration(timeout),
          "; killed it. stderr:\n", Stderr()));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return exit_;
}

std::string ChildProcess::Stdout() const {
  return ReadFile(log_prefix_ + ".out");
}
std::string ChildProcess::Stderr() const {
  return ReadFile(log_prefix_ + ".err");
}

absl::StatusOr<std::vector<int>> FreePorts(int n) {
  return distribute::UnusedLocalPorts(n);
}

absl::StatusOr<int> FreePortRange(int n) {
  constexpr int kTries = 50;
  for (int attempt = 0; attempt < kTries; ++attempt) {
    ASSIGN_OR_RETURN(std::vector<int> base, FreePorts(1));
    const int first = base[0];
    if (first + n - 1 > 65535) continue;
    std::vector<int> fds;
    bool all_free = true;
    for (int port = first; port < first + n && all_free; ++port) {
      const int fd = socket(AF_INET, SOCK_STREAM, 0);
      if (fd < 0) {
        all_free = false;
        break;
      }
      fds.push_back(fd);
      sockaddr_in addr{};
      addr.sin_family = AF_INET;
      addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      addr.sin_port = htons(static_cast<uint16_t>(port));
      all_free =
          bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    }
    for (int fd : fds) close(fd);
    if (all_free) return first;
  }
  return absl::UnavailableError(
      absl::StrCat("found no ", n, " consecutive free ports on 127.0.0.1 in ",
                   kTries, " tries"));
}

std::string Runfile(const std::string& path) {
  using ::bazel::tools::cpp::runfiles::Runfiles;
  static const Runfiles* const runfiles = Runfiles::CreateForTest();
  if (runfiles == nullptr) return path;
  return runfiles->Rlocation(absl::StrCat("distsim/", path));
}

std::string TestTmpPath(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return absl::StrCat(tmp == nullptr ? "/tmp" : tmp, "/", name);
}

absl::StatusOr<Finished> RunToEnd(
    const std::string& binary, const std::vector<std::string>& args,
    const std::string& log_prefix, absl::Duration timeout,
    const std::vector<std::pair<std::string, std::string>>& env) {
  ASSIGN_OR_RETURN(std::unique_ptr<ChildProcess> child,
                   ChildProcess::Spawn(binary, args, env, log_prefix));
  ASSIGN_OR_RETURN(ExitInfo exit, child->Wait(timeout));
  return Finished{exit, child->Stdout(), child->Stderr()};
}

std::string JsonField(const std::string& line, const std::string& key) {
  const std::string needle = absl::StrCat("\"", key, "\":");
  const size_t at = line.find(needle);
  if (at == std::string::npos) return "";
  const size_t begin = at + needle.size();
  const size_t end = line.find_first_of(",}", begin);
  return std::string(absl::StripSuffix(
      absl::StripPrefix(line.substr(begin, end - begin), "\""), "\""));
}

std::string TfConfig(const std::string& cluster, const std::string& type,
                     int index) {
  return absl::StrCat("{\"cluster\": ", cluster, ", \"task\": {\"type\": \"",
                      type, "\", \"index\": ", index, "}}");
}

}  // namespace distsim_test
