// Gloo's ring all-reduce (gloo::AllreduceRing<float>, SUM) over its TCP
// transport on 127.0.0.1, N ranks as threads of this process meeting through
// an in-memory gloo::rendezvous::HashStore: the comparison point for
// //tools/bench:host_collectives (see compare_host_collectives.sh).
//
// Prints one line per (ranks, bytes), after warm-up:
//   gloo <ranks> <bytes> <mean us> <algbw GB/s> <busbw GB/s>
// (the format of tools/bench/allreduce_sweep.h); busbw = algbw * 2(N-1)/N
// (nccl-tests' convention), time being from releasing the ranks to the last one
// finishing, averaged over at least --min_time seconds.
//
//   bazel run -c opt //tools/bench:gloo_allreduce -- --ranks=2,4,8
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gloo/allreduce_ring.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/hash_store.h"
#include "gloo/rendezvous/prefix_store.h"
#include "gloo/transport/tcp/device.h"
#include "tools/flags/flags.h"

namespace {

using Clock = std::chrono::steady_clock;

// The value of --`flag`, a comma-separated list of positive integers.
absl::StatusOr<std::vector<int64_t>> ParseList(absl::string_view flag,
                                               const std::string& text) {
  std::vector<int64_t> out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", flag, ": '", part, "' is not a positive integer"));
    }
    out.push_back(v);
  }
  return out;
}

// Runs `ranks` threads, each with its own context, through the sizes.
void RunGroup(int ranks, const std::vector<int64_t>& sizes, double min_time,
              int round) {
  gloo::rendezvous::HashStore base;
  gloo::rendezvous::PrefixStore store("round" + std::to_string(round), base);
  std::vector<std::thread> threads;
  std::vector<double> seconds(sizes.size(), 0.0);
  std::vector<int64_t> iterations(sizes.size(), 0);
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      gloo::transport::tcp::attr attr;
      attr.hostname = "127.0.0.1";
      auto device = gloo::transport::tcp::CreateDevice(attr);
      auto context = std::make_shared<gloo::rendezvous::Context>(r, ranks);
      context->setTimeout(std::chrono::seconds(60));
      context->connectFullMesh(store, device);
      for (size_t k = 0; k < sizes.size(); ++k) {
        const int count = static_cast<int>(sizes[k] / sizeof(float));
        std::vector<float> data(static_cast<size_t>(count), 1.0f);
        gloo::AllreduceRing<float> all_reduce(context, {data.data()}, count);
        for (int w = 0; w < 3; ++w) all_reduce.run();  // Warm-up.
        // Every rank runs the same number of iterations: rank 0 decides
        // when to stop and tells the others through a one-element
        // all-reduce of the flag.
        std::vector<float> stop(1, 0.0f);
        gloo::AllreduceRing<float> vote(context, {stop.data()}, 1);
        const Clock::time_point start = Clock::now();
        int64_t done = 0;
        for (;;) {
          for (int i = 0; i < 5; ++i) all_reduce.run();
          done += 5;
          stop[0] =
              (r == 0 &&
               std::chrono::duration<double>(Clock::now() - start).count() >=
                   min_time)
                  ? 1.0f
                  : 0.0f;
          vote.run();
          if (stop[0] > 0) break;
        }
        const double elapsed =
            std::chrono::duration<double>(Clock::now() - start).count();
        if (r == 0) {
          seconds[k] = elapsed;
          iterations[k] = done;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t k = 0; k < sizes.size(); ++k) {
    const double us = seconds[k] / static_cast<double>(iterations[k]) * 1e6;
    const double algbw = static_cast<double>(sizes[k]) / (us * 1e-6) / 1e9;
    const double busbw = algbw * 2.0 * (ranks - 1) / ranks;
    std::printf("gloo %d %lld %.2f %.3f %.3f\n", ranks,
                static_cast<long long>(sizes[k]), us, algbw, busbw);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string ranks_flag = "2,4,8";
  std::string sizes_flag =
      "4096,16384,65536,262144,1048576,4194304,16777216,67108864";
  double min_time = 0.3;
  tools_flags::FlagSet flags("gloo_allreduce");
  flags.String("ranks", &ranks_flag, "rank counts to run, e.g. 2,4,8");
  flags.String("sizes", &sizes_flag,
               "all-reduce sizes in bytes, e.g. 4096,65536");
  flags.Double("min_time", &min_time, "seconds to time each size for at least");
  absl::Status parsed = flags.Parse(argc, argv);
  if (absl::IsCancelled(parsed)) return 0;  // --help
  absl::StatusOr<std::vector<int64_t>> ranks = ParseList("ranks", ranks_flag);
  absl::StatusOr<std::vector<int64_t>> sizes = ParseList("sizes", sizes_flag);
  if (parsed.ok() && !ranks.ok()) parsed = ranks.status();
  if (parsed.ok() && !sizes.ok()) parsed = sizes.status();
  if (!parsed.ok()) {
    std::fprintf(stderr, "gloo_allreduce: %s\n",
                 std::string(parsed.message()).c_str());
    return 2;
  }
  int round = 0;
  for (int64_t n : *ranks) {
    RunGroup(static_cast<int>(n), *sizes, min_time, round++);
  }
  return 0;
}
