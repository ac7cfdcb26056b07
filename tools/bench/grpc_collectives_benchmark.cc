// All-reduce over the gRPC transport on loopback, beside the raw TCP stream
// it runs on. Each rank is a thread with a Server of its own (task i of a
// "worker" job listening on 127.0.0.<i+1> with a port chosen by the system),
// and the ranks' ScheduleCommunicator endpoints are GrpcTransports; with
// grpc_tcp:1 the servers' protocol is "grpc+tcp" (the messages' bytes over
// the TCP data plane), else "grpc".
//
//   bazel run -c opt //tools/bench:grpc_collectives -- --benchmark_min_time=0.2
//
// Counters: algbw = bytes / time and busbw = algbw * 2(n-1)/n (GB/s) for
// BM_GrpcAllReduce/<ranks>/<bytes>/<grpc_tcp>; tcp_GBps for
// BM_TcpLoopback/<bytes>, one sender streaming the same byte counts to one
// receiver over a plain socket.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "benchmark/benchmark.h"
#include "devices/reduce_op.h"
#include "devices/tensor.h"
#include "devices/transport.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/collective/schedule_communicator.h"
#include "distribute/server/grpc_transport.h"
#include "distribute/server/server.h"

namespace {

using distribute::GrpcTransport;
using distribute::GrpcTransportOptions;
using distribute::Server;
using distribute::collective::ScheduleCommunicator;

// n ranks, each a thread that waits for a round and runs one all-reduce.
class GrpcGroup {
 public:
  // `protocol`: the servers' ServerOptions::protocol.
  static absl::StatusOr<std::unique_ptr<GrpcGroup>> Create(
      int n, const std::string& protocol) {
    std::vector<std::string> addresses;
    for (int i = 0; i < n; ++i) {
      addresses.push_back(absl::StrCat("127.0.0.", i + 1, ":0"));
    }
    absl::StatusOr<distribute::cluster::ClusterSpec> spec =
        distribute::cluster::ClusterSpec::Create({{"worker", addresses}});
    if (!spec.ok()) return spec.status();
    std::unique_ptr<GrpcGroup> group(new GrpcGroup(n));
    std::vector<std::string> targets;
    for (int i = 0; i < n; ++i) {
      distribute::ServerOptions server_options;
      server_options.protocol = protocol;
      absl::StatusOr<std::unique_ptr<Server>> server =
          Server::Create(*spec, "worker", i, server_options);
      if (!server.ok()) return server.status();
      targets.push_back((*server)->address());
      group->servers_.push_back(*std::move(server));
    }
    std::vector<std::unique_ptr<devices::Transport>> endpoints;
    for (int i = 0; i < n; ++i) {
      GrpcTransportOptions options;
      options.group_key = absl::StrCat("bench-", n);
      options.rank_targets = targets;
      options.rank = i;
      absl::StatusOr<std::unique_ptr<devices::Transport>> endpoint =
          GrpcTransport::Create(*group->servers_[i], options);
      if (!endpoint.ok()) return endpoint.status();
      endpoints.push_back(*std::move(endpoint));
    }
    distribute::collective::ScheduleCommunicatorOptions comm_options;
    comm_options.topology = distribute::GrpcGroupTopology(protocol);
    absl::StatusOr<std::unique_ptr<ScheduleCommunicator>> comm =
        ScheduleCommunicator::Create(std::move(endpoints),
                                     std::move(comm_options));
    if (!comm.ok()) return comm.status();
    group->comm_ = *std::move(comm);
    group->Start();
    return group;
  }

  GrpcGroup(const GrpcGroup&) = delete;
  GrpcGroup& operator=(const GrpcGroup&) = delete;

  ~GrpcGroup() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
      start_.SignalAll();
    }
    for (auto& t : threads_) t.join();
    comm_.reset();
    for (auto& server : servers_) server->Stop();
  }

  // Sizes the ranks' buffers for `bytes` of float32.
  void Resize(int64_t bytes) {
    const int64_t count = bytes / 4;
    in_.clear();
    out_.clear();
    for (int r = 0; r < n_; ++r) {
      devices::Tensor in = *devices::Tensor::Host(devices::DType::kFloat32,
                                                  devices::Shape({count}));
      in.flat<float>().setConstant(static_cast<float>(r));
      in_.push_back(in);
      out_.push_back(*devices::Tensor::Host(devices::DType::kFloat32,
                                            devices::Shape({count})));
    }
  }

  // One all-reduce on every rank; the first error, if any.
  absl::Status Round() {
    absl::MutexLock lock(&mu_);
    ++round_;
    done_ = 0;
    first_error_ = absl::OkStatus();
    start_.SignalAll();
    mu_.Await(absl::Condition(
        +[](GrpcGroup* g) ABSL_EXCLUSIVE_LOCKS_REQUIRED(g->mu_) {
          return g->done_ == g->n_;
        },
        this));
    return first_error_;
  }

 private:
  explicit GrpcGroup(int n) : n_(n) {}

  void Start() {
    for (int r = 0; r < n_; ++r) threads_.emplace_back([this, r] { Rank(r); });
  }

  void Rank(int r) {
    int64_t seen = 0;
    while (true) {
      {
        absl::MutexLock lock(&mu_);
        while (!stopping_ && round_ <= seen) start_.Wait(&mu_);
        if (stopping_) return;
        seen = round_;
      }
      absl::Status s = comm_->AllReduce(
          r, in_[r], out_[r], {devices::ReduceOp::kSum, absl::Seconds(120)});
      absl::MutexLock lock(&mu_);
      if (!s.ok() && first_error_.ok()) first_error_ = s;
      ++done_;
    }
  }

  const int n_;
  std::vector<std::unique_ptr<Server>> servers_;
  std::unique_ptr<ScheduleCommunicator> comm_;
  std::vector<devices::Tensor> in_;
  std::vector<devices::Tensor> out_;
  std::vector<std::thread> threads_;
  absl::Mutex mu_;
  absl::CondVar start_;  // A new round or stopping_.
  int64_t round_ ABSL_GUARDED_BY(mu_) = 0;
  int done_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
};

void BM_GrpcAllReduce(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const int64_t bytes = state.range(1);
  const std::string protocol = state.range(2) != 0
                                   ? distribute::kGrpcTcpProtocol
                                   : distribute::kGrpcProtocol;
  absl::StatusOr<std::unique_ptr<GrpcGroup>> group =
      GrpcGroup::Create(n, protocol);
  if (!group.ok()) {
    state.SkipWithError(group.status().ToString().c_str());
    return;
  }
  (*group)->Resize(bytes);
  for (auto _ : state) {
    absl::Status s = (*group)->Round();
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
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

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(int fd, char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = read(fd, data, size);
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

void BM_TcpLoopback(benchmark::State& state) {
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

BENCHMARK(BM_GrpcAllReduce)
    ->ArgNames({"ranks", "bytes", "grpc_tcp"})
    ->ArgsProduct({{2, 4},
                   benchmark::CreateRange(kMinBytes, kMaxBytes, 4),
                   {0, 1}})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_TcpLoopback)
    ->ArgName("bytes")
    ->RangeMultiplier(4)
    ->Range(kMinBytes, kMaxBytes)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
