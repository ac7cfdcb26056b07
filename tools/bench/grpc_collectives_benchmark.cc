// Cross-process all-reduce over the gRPC transport on loopback, beside the
// raw TCP stream it runs on, in one run.
//
// BM_GrpcAllReduce/ranks:<n>/bytes:<b>/grpc_tcp:<0|1>: float32 SUM
// all-reduce (ScheduleCommunicator over GrpcTransport, AUTO algorithm; see
// allreduce_rank.h) among n processes, each rank with a Server of its own on
// 127.0.0.1 and a port chosen by the system. The benchmark process is rank
// 0; for each (ranks, protocol) group it starts ranks 1..n-1 as child
// processes (its own binary, /proc/self/exe, with the hidden flag
// --grpc_collectives_rank=R), which serve until the group changes. Before
// each run rank 0 tells the children, over their stdin, the size and Google
// Benchmark's iteration count; every rank then (for a new size) does two
// warm-up all-reduces, a barrier, and that many timed all-reduces, and
// rank 0's loop is the timed one. With grpc_tcp:1 the servers' protocol is
// "grpc+tcp" (the messages' bytes over the TCP data plane), else "grpc".
// The label is the algorithm AUTO picked ("ring/chunk:2097152").
//
// Children cannot outlive the benchmark: they die with it
// (PR_SET_PDEATHSIG), leave when their stdin closes or no command comes
// within kIdleTimeout, and every collective has a deadline; rank 0 reaps
// them when the group changes, and a child that exits early aborts the
// group, so the run fails with its exit status and stderr's tail.
//
// BM_TcpLoopback/bytes:<b>: one sender streaming the same byte counts to
// one receiver over a plain loopback socket (two threads), acknowledged per
// message: the ceiling the transports run under.
//
//   bazel run -c opt //tools/bench:grpc_collectives -- --benchmark_min_time=0.2
//       [--benchmark_filter=BM_GrpcAllReduce/ranks:2/]
//       [--benchmark_format=json]
//
// Counters: algbw = bytes / time and busbw = algbw * 2(n-1)/n (GB/s,
// nccl-tests' convention) for BM_GrpcAllReduce; tcp_GBps for BM_TcpLoopback.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "devices/status_macros.h"
#include "distribute/server/server.h"
#include "tools/bench/allreduce_rank.h"
#include "tools/flags/flags.h"

namespace {

using tools_bench::GrpcAllReduceRank;
using tools_bench::GrpcAllReduceRankOptions;

// The hidden flag (--grpc_collectives_rank=R) that makes this binary a
// child rank.
constexpr char kRankFlag[] = "grpc_collectives_rank";
// Deadline of each all-reduce and barrier, and of a child's start.
constexpr absl::Duration kTimeout = absl::Seconds(60);
// How long a child waits for its next command.
constexpr absl::Duration kIdleTimeout = absl::Seconds(300);
// How long children get to exit before they are killed.
constexpr absl::Duration kExitGrace = absl::Seconds(10);

const char* g_argv0 = "grpc_collectives";

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = read(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// Lines of the control channels (parent -> child on the child's stdin,
// child -> parent on its stdout), each read with a deadline.
class LineReader {
 public:
  explicit LineReader(int fd) : fd_(fd) {}

  // The next line without its '\n'; DEADLINE_EXCEEDED after `timeout`,
  // UNAVAILABLE at end of file.
  absl::StatusOr<std::string> Next(absl::Duration timeout) {
    const absl::Time deadline = absl::Now() + timeout;
    while (true) {
      const size_t newline = buffer_.find('\n');
      if (newline != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        return line;
      }
      const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
      if (ms <= 0) return absl::DeadlineExceededError("no line in time");
      pollfd p = {fd_, POLLIN, 0};
      const int ready = poll(
          &p, 1, static_cast<int>(std::min<int64_t>(ms, 24 * 3600 * 1000)));
      if (ready < 0 && errno == EINTR) continue;
      if (ready < 0) return absl::InternalError(std::strerror(errno));
      if (ready == 0) continue;
      char chunk[4096];
      const ssize_t n = read(fd_, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return absl::UnavailableError("channel closed");
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  const int fd_;
  std::string buffer_;
};

bool WriteLine(int fd, const std::string& line) {
  const std::string text = line + "\n";
  return WriteAll(fd, text.data(), text.size());
}

// What every rank does before timing `bytes`: for a new size, sizes the
// buffers and runs two warm-up all-reduces; then a barrier, so that the
// timed loops start together.
absl::Status PrepareRound(GrpcAllReduceRank& rank, int64_t bytes) {
  if (rank.bytes() != bytes) {
    absl::Status status = rank.Resize(bytes);
    if (status.ok()) status = rank.Barrier();
    for (int i = 0; i < 2 && status.ok(); ++i) status = rank.AllReduce();
    RETURN_IF_ERROR(status);
  }
  return rank.Barrier();
}

// ---------------------------------------------------------------------------
// Child side: rank R of N (argv: --grpc_collectives_rank=R --size=N
// --protocol=P --group_key=K). Prints "address <host:port>" on stdout, then
// follows the commands on stdin:
//   connect <address of rank 0> ... <address of rank N-1>
//   run <bytes> <iterations>
//   quit
// Exits 0 after quit, 1 on any failure (the reason on stderr).

int RankMain(int argc, char** argv) {
  GrpcAllReduceRankOptions options;
  options.timeout = kTimeout;
  options.connect_timeout = kTimeout;
  int64_t rank_flag = 0, size_flag = 0;
  tools_flags::FlagSet flags("grpc_collectives (child rank)");
  flags.Int(kRankFlag, &rank_flag, "this child's rank");
  flags.Int("size", &size_flag, "how many ranks");
  flags.String("protocol", &options.protocol, "grpc or grpc+tcp");
  flags.String("group_key", &options.group_key, "the collective group's key");
  const absl::Status parsed = flags.Parse(argc, argv);
  if (!parsed.ok()) {
    std::fprintf(stderr, "grpc_collectives: %s\n",
                 std::string(parsed.message()).c_str());
    return 2;
  }
  options.rank = static_cast<int>(rank_flag);
  options.size = static_cast<int>(size_flag);
  auto fail = [&](const absl::Status& status) {
    std::fprintf(stderr, "rank %d: %s\n", options.rank,
                 status.ToString().c_str());
    return 1;
  };
  absl::StatusOr<std::unique_ptr<GrpcAllReduceRank>> rank =
      GrpcAllReduceRank::Start(options, "127.0.0.1:0");
  if (!rank.ok()) return fail(rank.status());
  if (!WriteLine(STDOUT_FILENO, "address " + (*rank)->address())) {
    return fail(absl::UnavailableError("cannot write to the parent"));
  }
  LineReader commands(STDIN_FILENO);
  absl::StatusOr<std::string> line = commands.Next(kTimeout);
  if (!line.ok()) return fail(line.status());
  std::vector<std::string> words = absl::StrSplit(*line, ' ');
  if (words.empty() || words[0] != "connect") {
    return fail(absl::InvalidArgumentError("expected connect: " + *line));
  }
  words.erase(words.begin());
  absl::Status status = (*rank)->Connect(words);
  if (!status.ok()) return fail(status);
  while (true) {
    line = commands.Next(kIdleTimeout);
    if (!line.ok()) return fail(line.status());
    words = absl::StrSplit(*line, ' ');
    int64_t bytes = 0, iterations = 0;
    if (words.size() == 1 && words[0] == "quit") {
      status = (*rank)->Finish();
      return status.ok() ? 0 : fail(status);
    }
    if (words.size() != 3 || words[0] != "run" ||
        !absl::SimpleAtoi(words[1], &bytes) ||
        !absl::SimpleAtoi(words[2], &iterations)) {
      return fail(absl::InvalidArgumentError("bad command: " + *line));
    }
    status = PrepareRound(**rank, bytes);
    for (int64_t i = 0; i < iterations && status.ok(); ++i) {
      status = (*rank)->AllReduce();
    }
    if (status.ok()) status = (*rank)->CheckResult();
    if (!status.ok()) return fail(status);
  }
}

// ---------------------------------------------------------------------------
// Parent side.

// Ranks 1..n-1 as child processes, rank 0 in this one.
class RankGroup {
 public:
  static absl::StatusOr<std::unique_ptr<RankGroup>> Start(
      int n, const std::string& protocol) {
    static int groups = 0;
    std::unique_ptr<RankGroup> group(new RankGroup(n, protocol));
    GrpcAllReduceRankOptions options;
    options.size = n;
    options.protocol = protocol;
    options.group_key =
        absl::StrCat("grpc_collectives-", getpid(), "-", ++groups);
    options.timeout = kTimeout;
    options.connect_timeout = kTimeout;
    for (int r = 1; r < n; ++r) {
      absl::Status spawned = group->Spawn(r, options);
      if (!spawned.ok()) return group->Fail(spawned);
    }
    absl::StatusOr<std::unique_ptr<GrpcAllReduceRank>> rank0 =
        GrpcAllReduceRank::Start(options, "127.0.0.1:0");
    if (!rank0.ok()) return group->Fail(rank0.status());
    group->rank0_ = *std::move(rank0);
    std::vector<std::string> addresses = {group->rank0_->address()};
    for (Child& child : group->children_) {
      absl::StatusOr<std::string> line = child.out->Next(kTimeout);
      absl::string_view address;
      if (line.ok()) address = *line;
      if (!absl::ConsumePrefix(&address, "address ")) {
        return group->Fail(absl::UnavailableError(absl::StrCat(
            "rank ", child.rank,
            " did not start: ", line.ok() ? *line : line.status().ToString())));
      }
      addresses.emplace_back(address);
    }
    // From here a child that exits aborts the group.
    group->watch_ = std::thread([g = group.get()] { g->Watch(); });
    absl::Status status =
        group->Send(absl::StrCat("connect ", absl::StrJoin(addresses, " ")));
    if (status.ok()) status = group->rank0_->Connect(addresses);
    if (!status.ok()) return group->Fail(status);
    return group;
  }

  RankGroup(const RankGroup&) = delete;
  RankGroup& operator=(const RankGroup&) = delete;
  ~RankGroup() {
    Kill();
    for (Child& child : children_) {
      if (child.err >= 0) close(child.err);
    }
  }

  int size() const { return n_; }
  const std::string& protocol() const { return protocol_; }
  GrpcAllReduceRank& rank0() { return *rank0_; }

  // Sends a command line to every child.
  absl::Status Send(const std::string& line) {
    for (const Child& child : children_) {
      if (!WriteLine(child.in, line)) {
        return absl::UnavailableError(
            absl::StrCat("rank ", child.rank,
                         " does not take commands: ", std::strerror(errno)));
      }
    }
    return absl::OkStatus();
  }

  // Ends the group after a failure: kills the children and returns
  // `status` with each child's exit status and stderr's tail.
  absl::Status Fail(const absl::Status& status) {
    Kill();
    std::string report(status.message());
    for (const Child& child : children_) {
      absl::StrAppend(&report, "; rank ", child.rank, " (pid ", child.pid, ") ",
                      ExitText(child.status));
      const std::string tail = Tail(child.err);
      if (!tail.empty()) absl::StrAppend(&report, ": ", tail);
    }
    return absl::Status(status.code(), report);
  }

  // Ends the group normally: every rank leaves through a last barrier and
  // the children exit 0; otherwise as Fail.
  absl::Status Finish() {
    StopWatch();
    absl::Status status = Send("quit");
    if (status.ok() && rank0_ != nullptr) status = rank0_->Finish();
    if (status.ok()) status = Reap(kExitGrace);
    if (status.ok()) {
      for (const Child& child : children_) {
        if (child.status != 0) {
          status = absl::InternalError("a rank failed at exit");
        }
      }
    }
    return status.ok() ? status : Fail(status);
  }

 private:
  struct Child {
    int rank = 0;
    pid_t pid = -1;
    int in = -1;      // The child's stdin: commands.
    int out_fd = -1;  // The child's stdout: its address, then end of file.
    std::unique_ptr<LineReader> out;
    int err = -1;     // The child's stderr (a memfd).
    int status = -1;  // waitpid's, once reaped.
    bool reaped = false;
  };

  RankGroup(int n, std::string protocol) : n_(n), protocol_(protocol) {}

  absl::Status Spawn(int rank, const GrpcAllReduceRankOptions& options) {
    std::vector<std::string> args = {
        g_argv0,
        absl::StrCat("--", kRankFlag, "=", rank),
        absl::StrCat("--size=", options.size),
        absl::StrCat("--protocol=", options.protocol),
        absl::StrCat("--group_key=", options.group_key),
    };
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) != 0) {
      return absl::InternalError(std::strerror(errno));
    }
    if (pipe2(out, O_CLOEXEC) != 0) {
      close(in[0]);
      close(in[1]);
      return absl::InternalError(std::strerror(errno));
    }
    const int err = memfd_create("grpc_collectives_rank_stderr", MFD_CLOEXEC);
    const pid_t parent = getpid();
    const pid_t pid = err < 0 ? -1 : fork();
    if (pid == 0) {
      // Only async-signal-safe calls until exec: this process has threads.
      // Killed when the parent dies; it may have died already.
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      if (dup2(in[0], STDIN_FILENO) < 0 || dup2(out[1], STDOUT_FILENO) < 0 ||
          dup2(err, STDERR_FILENO) < 0) {
        _exit(127);
      }
      execv("/proc/self/exe", argv.data());
      _exit(127);
    }
    const int spawn_errno = errno;
    close(in[0]);
    close(out[1]);
    if (pid < 0) {
      close(in[1]);
      close(out[0]);
      if (err >= 0) close(err);
      return absl::InternalError(absl::StrCat("cannot start rank ", rank, ": ",
                                              std::strerror(spawn_errno)));
    }
    Child child;
    child.rank = rank;
    child.pid = pid;
    child.in = in[1];
    child.out_fd = out[0];
    child.out = std::make_unique<LineReader>(out[0]);
    child.err = err;
    children_.push_back(std::move(child));
    return absl::OkStatus();
  }

  // Until StopWatch: when a child's stdout reaches end of file (it wrote
  // its address already, so it exited), aborts rank 0's group so that its
  // collectives fail now instead of at their deadline.
  void Watch() {
    std::vector<pollfd> fds;
    for (const Child& child : children_) {
      fds.push_back({child.out_fd, POLLIN, 0});
    }
    while (!stop_watch_.load()) {
      const int ready = poll(fds.data(), fds.size(), 50);
      if (ready <= 0) continue;
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        rank0_->Abort(absl::UnavailableError(absl::StrCat(
            "the process of rank ", children_[i].rank, " exited")));
        return;
      }
    }
  }

  void StopWatch() {
    stop_watch_.store(true);
    if (watch_.joinable()) watch_.join();
  }

  // Waits for the children to exit, for at most `grace`.
  absl::Status Reap(absl::Duration grace) {
    const absl::Time deadline = absl::Now() + grace;
    while (true) {
      bool all = true;
      for (Child& child : children_) {
        if (child.reaped) continue;
        const pid_t done = waitpid(child.pid, &child.status, WNOHANG);
        if (done == child.pid || (done < 0 && errno == ECHILD)) {
          child.reaped = true;
        } else {
          all = false;
        }
      }
      if (all) return absl::OkStatus();
      if (absl::Now() >= deadline) {
        return absl::DeadlineExceededError("ranks did not exit in time");
      }
      absl::SleepFor(absl::Milliseconds(5));
    }
  }

  // Stops everything: rank 0's server (the children's collectives fail),
  // the children's stdin (idle ones leave), then SIGKILL for those still
  // there after a grace period; reaps them. Idempotent.
  void Kill() {
    StopWatch();
    if (rank0_ != nullptr) {
      rank0_->Abort(absl::AbortedError("the benchmark ends the group"));
      rank0_.reset();
    }
    for (Child& child : children_) {
      if (child.in >= 0) close(child.in);
      child.in = -1;
    }
    if (!Reap(absl::Seconds(2)).ok()) {
      for (Child& child : children_) {
        if (!child.reaped) kill(child.pid, SIGKILL);
      }
      Reap(absl::InfiniteDuration()).IgnoreError();
    }
    for (Child& child : children_) {
      if (child.out_fd >= 0) close(child.out_fd);
      child.out_fd = -1;
    }
  }

  static std::string ExitText(int status) {
    if (status == -1) return "not reaped";
    if (WIFEXITED(status)) {
      return absl::StrCat("exited with status ", WEXITSTATUS(status));
    }
    if (WIFSIGNALED(status)) {
      return absl::StrCat("killed by signal ", WTERMSIG(status));
    }
    return absl::StrCat("wait status ", status);
  }

  // The last lines of what a child wrote to stderr.
  static std::string Tail(int fd) {
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size == 0) return "";
    const off_t size = std::min<off_t>(st.st_size, 1000);
    std::string text(static_cast<size_t>(size), '\0');
    const ssize_t n = pread(fd, text.data(), text.size(), st.st_size - size);
    text.resize(n > 0 ? static_cast<size_t>(n) : 0);
    while (!text.empty() && text.back() == '\n') text.pop_back();
    std::replace(text.begin(), text.end(), '\n', '|');
    return text;
  }

  const int n_;
  const std::string protocol_;
  std::vector<Child> children_;
  std::unique_ptr<GrpcAllReduceRank> rank0_;
  std::thread watch_;
  std::atomic<bool> stop_watch_{false};
};

// The group of the benchmarks that ran last; kept while the next one has
// the same ranks and protocol.
std::unique_ptr<RankGroup>& CurrentGroup() {
  static auto* group = new std::unique_ptr<RankGroup>;
  return *group;
}

void ReleaseGroup() {
  std::unique_ptr<RankGroup>& group = CurrentGroup();
  if (group == nullptr) return;
  absl::Status status = group->Finish();
  if (!status.ok()) {
    std::fprintf(stderr, "grpc_collectives: ending the %d-rank group: %s\n",
                 group->size(), status.ToString().c_str());
  }
  group.reset();
}

absl::StatusOr<RankGroup*> GroupFor(int n, const std::string& protocol) {
  std::unique_ptr<RankGroup>& group = CurrentGroup();
  if (group != nullptr &&
      (group->size() != n || group->protocol() != protocol)) {
    ReleaseGroup();
  }
  if (group == nullptr) {
    ASSIGN_OR_RETURN(std::unique_ptr<RankGroup> started,
                     RankGroup::Start(n, protocol));
    group = std::move(started);
  }
  return group.get();
}

void BM_GrpcAllReduce(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int64_t bytes = state.range(1);
  const std::string protocol = state.range(2) != 0
                                   ? distribute::kGrpcTcpProtocol
                                   : distribute::kGrpcProtocol;
  // Ends the group (its children may be stuck) and reports why.
  auto fail = [&](const absl::Status& status) {
    std::unique_ptr<RankGroup> group = std::move(CurrentGroup());
    const absl::Status report = group != nullptr ? group->Fail(status) : status;
    state.SkipWithError(report.ToString().c_str());
  };
  absl::StatusOr<RankGroup*> group = GroupFor(n, protocol);
  if (!group.ok()) {
    state.SkipWithError(group.status().ToString().c_str());
    return;
  }
  GrpcAllReduceRank& rank0 = (*group)->rank0();
  // The children run as many all-reduces as this loop will.
  absl::Status status = (*group)->Send(absl::StrCat(
      "run ", bytes, " ", static_cast<int64_t>(state.max_iterations)));
  if (status.ok()) status = PrepareRound(rank0, bytes);
  if (!status.ok()) {
    fail(status);
    return;
  }
  for (auto _ : state) {
    status = rank0.AllReduce();
    if (!status.ok()) {
      fail(status);
      break;
    }
  }
  if (state.error_occurred()) return;
  status = rank0.CheckResult();
  if (!status.ok()) {
    fail(status);
    return;
  }
  state.SetLabel(rank0.LastSelection());
  const double total = static_cast<double>(bytes) * state.iterations();
  state.counters["algbw"] =
      benchmark::Counter(total / 1e9, benchmark::Counter::kIsRate);
  state.counters["busbw"] = benchmark::Counter(total / 1e9 * 2.0 * (n - 1) / n,
                                               benchmark::Counter::kIsRate);
  state.SetBytesProcessed(static_cast<int64_t>(total));
}

// A connected loopback TCP pair.
struct SocketPair {
  int sender = -1;
  int receiver = -1;
  ~SocketPair() {
    if (sender >= 0) close(sender);
    if (receiver >= 0) close(receiver);
  }
};

absl::Status MakeSocketPair(SocketPair& pair) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  if (listener < 0) return absl::InternalError(std::strerror(errno));
  sockaddr_in addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      listen(listener, 1) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(listener);
    return absl::InternalError(std::strerror(errno));
  }
  pair.sender = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(pair.sender, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) !=
      0) {
    close(listener);
    return absl::InternalError(std::strerror(errno));
  }
  pair.receiver = accept(listener, nullptr, nullptr);
  close(listener);
  if (pair.receiver < 0) return absl::InternalError(std::strerror(errno));
  const int one = 1;
  setsockopt(pair.sender, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  setsockopt(pair.receiver, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return absl::OkStatus();
}

void BM_TcpLoopback(benchmark::State& state) {
  // No idle rank processes beside this one.
  ReleaseGroup();
  const size_t bytes = static_cast<size_t>(state.range(0));
  SocketPair pair;
  absl::Status made = MakeSocketPair(pair);
  if (!made.ok()) {
    state.SkipWithError(made.ToString().c_str());
    return;
  }
  // The receiver reads each message whole and acknowledges it with a byte;
  // a zero-length "message" (just the ack) tells it to stop.
  std::thread receiver([&] {
    std::vector<char> buffer(bytes);
    uint64_t size = 0;
    while (
        ReadAll(pair.receiver, reinterpret_cast<char*>(&size), sizeof(size)) &&
        size > 0) {
      if (!ReadAll(pair.receiver, buffer.data(), size)) return;
      const char ack = 1;
      if (!WriteAll(pair.receiver, &ack, 1)) return;
    }
  });
  std::vector<char> data(bytes, 'x');
  bool ok = true;
  for (auto _ : state) {
    const uint64_t size = bytes;
    char ack = 0;
    ok = WriteAll(pair.sender, reinterpret_cast<const char*>(&size),
                  sizeof(size)) &&
         WriteAll(pair.sender, data.data(), bytes) &&
         ReadAll(pair.sender, &ack, 1);
    if (!ok) break;
  }
  const uint64_t stop = 0;
  WriteAll(pair.sender, reinterpret_cast<const char*>(&stop), sizeof(stop));
  receiver.join();
  if (!ok) {
    state.SkipWithError("loopback socket failed");
    return;
  }
  const double total = static_cast<double>(bytes) * state.iterations();
  state.counters["tcp_GBps"] =
      benchmark::Counter(total / 1e9, benchmark::Counter::kIsRate);
  state.SetBytesProcessed(static_cast<int64_t>(total));
}

constexpr int64_t kMinBytes = int64_t{4} << 10;   // 4 KiB
constexpr int64_t kMaxBytes = int64_t{64} << 20;  // 64 MiB

// Sizes innermost, so that each (ranks, protocol) group of processes is
// started once.
void GrpcAllReduceArgs(benchmark::internal::Benchmark* b) {
  b->ArgNames({"ranks", "bytes", "grpc_tcp"});
  for (int64_t ranks : {2, 4}) {
    for (int64_t grpc_tcp : {0, 1}) {
      for (int64_t bytes = kMinBytes; bytes <= kMaxBytes; bytes *= 4) {
        b->Args({ranks, bytes, grpc_tcp});
      }
    }
  }
}

BENCHMARK(BM_GrpcAllReduce)
    ->Apply(GrpcAllReduceArgs)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_TcpLoopback)
    ->ArgName("bytes")
    ->RangeMultiplier(4)
    ->Range(kMinBytes, kMaxBytes)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  // A child that died must not take the parent down with a write to its
  // stdin; fds 0-2 are open so that the children's pipes are never 0-2.
  signal(SIGPIPE, SIG_IGN);
  for (int fd = 0; fd <= 2; ++fd) {
    if (fcntl(fd, F_GETFD) < 0) open("/dev/null", O_RDWR);
  }
  g_argv0 = argv[0];
  for (int i = 1; i < argc; ++i) {
    if (absl::StartsWith(argv[i], absl::StrCat("--", kRankFlag, "="))) {
      return RankMain(argc, argv);
    }
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  ReleaseGroup();
  benchmark::Shutdown();
  return 0;
}
