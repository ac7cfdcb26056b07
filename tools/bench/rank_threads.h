// RankThreads: one thread per rank of a collective, started once and kept
// alive across rounds, for benchmarks that must not pay for thread creation
// in their timed loop. Rank 0 runs on the caller's thread (so a group of n
// ranks uses n threads, not n + 1); ranks 1..n-1 wait between rounds by
// spinning briefly (yielding the core at every turn when there are more
// ranks than CPUs), then blocking. With DISTSIM_BENCH_PIN=1 in the
// environment, rank r's thread (rank 0: the caller's) is pinned to CPU
// r mod the CPU count, as mpirun binds its ranks to cores by default; for
// measurements set beside OpenMPI's.
//
// Example:
//   RankThreads threads(4);
//   absl::Status s = threads.Run([&](int rank) {
//     return comm->AllReduce(rank, inputs[rank], outputs[rank], {});
//   });
#ifndef TOOLS_BENCH_RANK_THREADS_H_
#define TOOLS_BENCH_RANK_THREADS_H_

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tools {
namespace bench {

class RankThreads {
 public:
  // Starts ranks 1..n-1 (n >= 1; smaller values are treated as 1). A waiting
  // thread spins for `spin` before it blocks.
  explicit RankThreads(int n, absl::Duration spin = absl::Microseconds(50));
  // Stops and joins the threads. Must not be called during Run.
  ~RankThreads();

  RankThreads(const RankThreads&) = delete;
  RankThreads& operator=(const RankThreads&) = delete;

  int size() const { return n_; }

  // Runs fn(rank) for every rank at once (rank 0 on the calling thread) and
  // returns when all have returned: the status of the lowest rank that
  // failed, or OK. One Run at a time (not thread-safe against itself).
  absl::Status Run(const std::function<absl::Status(int)>& fn);

 private:
  void Loop(int rank);

  const int n_;
  const absl::Duration spin_;
  const bool oversubscribed_;  // More threads than CPUs.
  // The calling thread's CPUs before DISTSIM_BENCH_PIN pinned it.
  bool main_pinned_ = false;
  cpu_set_t main_affinity_;
  // Incremented to start a round; workers run job_ once per increment.
  std::atomic<uint64_t> round_{0};
  std::atomic<bool> stop_{false};
  // Workers blocked (or about to block) on round_cv_.
  std::atomic<int> sleepers_{0};
  // Run is blocked (or about to block) on done_cv_.
  std::atomic<bool> run_blocked_{false};
  // The current round's job; written before round_ is incremented.
  const std::function<absl::Status(int)>* job_ = nullptr;
  // Statuses of the current round by rank; each written by its rank before
  // it decrements remaining_.
  std::vector<absl::Status> status_;
  std::atomic<int> remaining_{0};

  // Only for blocking: the state above is atomic.
  absl::Mutex mu_;
  absl::CondVar round_cv_;  // Signalled when round_ or stop_ changes.
  absl::CondVar done_cv_;   // Signalled when remaining_ drops to 0.
  std::vector<std::thread> threads_;
};

}  // namespace bench
}  // namespace tools

#endif  // TOOLS_BENCH_RANK_THREADS_H_
