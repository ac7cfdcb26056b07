// The measurement loop that every cross-process all-reduce worker of
// compare_grpc_collectives.sh shares (ours over gRPC, Gloo, OpenMPI), so
// that their figures are taken the same way: for each size from min_bytes
// to max_bytes (times 4), a barrier, two warm-up all-reduces, then a fixed
// number of timed ones (every rank computes the same count from the size),
// and rank 0 prints one line
//   <impl> <ranks> <bytes> <time_us> <algbw_GBps> <busbw_GBps> [<note>]
// (the note, when the worker gives one, says e.g. which algorithm ran) with
// busbw = algbw * 2(n-1)/n, as nccl-tests defines it.
//
// Example:
//   tools_bench::SweepOptions options{"gloo", rank, size};
//   tools_bench::RunSweep(options, [&](int64_t bytes) { ... return true; },
//                         [&] { return barrier(); });
#ifndef TOOLS_BENCH_ALLREDUCE_SWEEP_H_
#define TOOLS_BENCH_ALLREDUCE_SWEEP_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

namespace tools_bench {

struct SweepOptions {
  std::string impl;
  int rank = 0;
  int size = 1;
  int64_t min_bytes = int64_t{4} << 10;
  int64_t max_bytes = int64_t{64} << 20;
  // When set, its text (without spaces) ends each line.
  std::function<std::string()> note;
};

// How many timed all-reduces of `bytes`: about 256 MiB moved, 5 to 200.
inline int64_t TimedIterations(int64_t bytes) {
  int64_t iterations = (int64_t{256} << 20) / bytes;
  if (iterations < 5) iterations = 5;
  if (iterations > 200) iterations = 200;
  return iterations;
}

// `prepare(bytes)` sizes the buffers; `all_reduce()` runs one all-reduce;
// `barrier()` waits for every rank. Each returns false on failure (the
// worker prints why); RunSweep then returns false.
inline bool RunSweep(const SweepOptions& options,
                     const std::function<bool(int64_t)>& prepare,
                     const std::function<bool()>& all_reduce,
                     const std::function<bool()>& barrier) {
  for (int64_t bytes = options.min_bytes; bytes <= options.max_bytes;
       bytes *= 4) {
    if (!prepare(bytes) || !barrier()) return false;
    for (int i = 0; i < 2; ++i) {
      if (!all_reduce()) return false;
    }
    if (!barrier()) return false;
    const int64_t iterations = TimedIterations(bytes);
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iterations; ++i) {
      if (!all_reduce()) return false;
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count() /
        static_cast<double>(iterations);
    if (options.rank == 0) {
      const double algbw = static_cast<double>(bytes) / seconds / 1e9;
      const double busbw = algbw * 2.0 * (options.size - 1) / options.size;
      std::printf("%s %d %lld %.2f %.3f %.3f %s\n", options.impl.c_str(),
                  options.size, static_cast<long long>(bytes), seconds * 1e6,
                  algbw, busbw, options.note ? options.note().c_str() : "");
      std::fflush(stdout);
    }
  }
  return true;
}

}  // namespace tools_bench

#endif  // TOOLS_BENCH_ALLREDUCE_SWEEP_H_
