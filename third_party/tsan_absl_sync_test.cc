// Checks that ThreadSanitizer, as --config=tsan sets it up, still sees the
// races it must: a plain counter written by two threads without a lock is
// reported, the same counter written under an absl::Mutex (whose ordering
// tsan_absl_sync.cc makes visible) and a value handed over through an
// absl::Notification are not. Each case runs in a child process of this
// binary, whose exit code and stderr the parent checks. Built only under
// --config=tsan (BUILD); run without ThreadSanitizer it fails.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace {

constexpr int kRaceExitCode = 66;

int counter = 0;  // deliberately unguarded in the racy case
absl::Mutex mu;

void Racy() {
  std::thread a([] {
    for (int i = 0; i < 1000; ++i) ++counter;
  });
  std::thread b([] {
    for (int i = 0; i < 1000; ++i) ++counter;
  });
  a.join();
  b.join();
}

void Locked() {
  auto add = [] {
    for (int i = 0; i < 1000; ++i) {
      absl::MutexLock lock(&mu);
      ++counter;
    }
  };
  std::thread a(add);
  std::thread b(add);
  a.join();
  b.join();
}

void Notified() {
  absl::Notification ready;
  std::thread a([&] {
    counter = 42;
    ready.Notify();
  });
  // Wait until it has surely been notified, so that the wait below takes
  // the path that reads the flag inside the library.
  while (!ready.HasBeenNotified()) std::this_thread::yield();
  ready.WaitForNotification();
  const int seen = counter;
  a.join();
  if (seen != 42) std::exit(3);
}

// Runs this binary with `mode`; returns its exit code, and its stderr in
// `err`.
int RunChild(const char* mode, std::string& err) {
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], 2);
    close(pipe_fds[0]);
    setenv("TSAN_OPTIONS", "halt_on_error=1:exitcode=66", 1);
    execl("/proc/self/exe", "tsan_absl_sync_test", mode,
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipe_fds[1]);
  char buffer[4096];
  ssize_t n;
  while ((n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0) {
    err.append(buffer, static_cast<size_t>(n));
  }
  close(pipe_fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool Expect(const char* mode, int want_code, bool want_report) {
  std::string err;
  const int code = RunChild(mode, err);
  const bool report =
      err.find("WARNING: ThreadSanitizer: data race") != std::string::npos;
  if (code != want_code || report != want_report) {
    std::fprintf(stderr,
                 "FAIL: %s exited %d (want %d), %s a data race (want %s)\n"
                 "--- its stderr ---\n%s\n",
                 mode, code, want_code, report ? "reported" : "did not report",
                 want_report ? "a report" : "none", err.c_str());
    return false;
  }
  std::printf("ok: %s exited %d, %s\n", mode, code,
              report ? "data race reported" : "no report");
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    const std::string mode = argv[1];
    if (mode == "--racy") Racy();
    if (mode == "--locked") Locked();
    if (mode == "--notified") Notified();
    return 0;
  }
  if (dlsym(RTLD_DEFAULT, "__tsan_init") == nullptr) {
    std::fprintf(stderr,
                 "FAIL: not built with ThreadSanitizer; run it with "
                 "--config=tsan\n");
    return 1;
  }
  bool ok = Expect("--racy", kRaceExitCode, true);
  ok = Expect("--locked", 0, false) && ok;
  ok = Expect("--notified", 0, false) && ok;
  return ok ? 0 : 1;
}
