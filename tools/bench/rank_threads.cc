#include "tools/bench/rank_threads.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>

#include "devices/completion.h"
#include "devices/status_macros.h"

namespace tools {
namespace bench {
namespace {

// Pins the calling thread to CPU rank mod the CPU count when
// DISTSIM_BENCH_PIN=1 (a benchmark's choice, never the library's). Returns
// whether it did; `previous` receives the thread's former CPU set.
bool MaybePin(int rank, cpu_set_t* previous = nullptr) {
  const char* pin = std::getenv("DISTSIM_BENCH_PIN");
  if (pin == nullptr || std::string(pin) != "1") return false;
  if (previous != nullptr &&
      sched_getaffinity(0, sizeof(*previous), previous) != 0) {
    return false;
  }
  const int cpus =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(rank % cpus, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

}  // namespace

RankThreads::RankThreads(int n, absl::Duration spin)
    : n_(std::max(n, 1)),
      spin_(spin),
      oversubscribed_(n_ >
                      static_cast<int>(std::thread::hardware_concurrency())),
      status_(static_cast<size_t>(n_)) {
  main_pinned_ = MaybePin(0, &main_affinity_);
  threads_.reserve(static_cast<size_t>(n_ - 1));
  for (int rank = 1; rank < n_; ++rank) {
    threads_.emplace_back([this, rank] {
      MaybePin(rank);
      Loop(rank);
    });
  }
}

RankThreads::~RankThreads() {
  {
    absl::MutexLock lock(&mu_);
    stop_.store(true, std::memory_order_seq_cst);
    round_cv_.SignalAll();
  }
  for (std::thread& t : threads_) t.join();
  // Unpinned again: the next benchmark's transport group counts the CPUs
  // of the calling thread (pinned to one, it would think itself
  // oversubscribed and yield instead of spinning).
  if (main_pinned_ &&
      sched_setaffinity(0, sizeof(main_affinity_), &main_affinity_) != 0) {
    std::perror("RankThreads: restoring the caller's CPU set");
  }
}

// Waiting and waking follow Completion's pattern (devices/completion.h): a
// waiter announces itself in an atomic counter before it blocks, and the
// waker takes the lock and signals only when that counter is non-zero, so
// that rounds that need no blocking take no lock. The seq_cst store and
// load pairs (round_ / sleepers_, remaining_ / run_blocked_) make sure that
// either the waiter sees the change or the waker sees the waiter.
void RankThreads::Loop(int rank) {
  uint64_t seen = 0;
  for (;;) {
    auto ready = [&] {
      return round_.load(std::memory_order_seq_cst) != seen ||
             stop_.load(std::memory_order_seq_cst);
    };
    if (!devices::SpinUntil(ready, spin_, oversubscribed_)) {
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      {
        absl::MutexLock lock(&mu_);
        while (!ready()) round_cv_.Wait(&mu_);
      }
      sleepers_.fetch_sub(1, std::memory_order_seq_cst);
    }
    if (stop_.load(std::memory_order_seq_cst)) return;
    seen = round_.load(std::memory_order_acquire);
    status_[static_cast<size_t>(rank)] = (*job_)(rank);
    if (remaining_.fetch_sub(1, std::memory_order_seq_cst) == 1 &&
        run_blocked_.load(std::memory_order_seq_cst)) {
      absl::MutexLock lock(&mu_);
      done_cv_.Signal();
    }
  }
}

absl::Status RankThreads::Run(const std::function<absl::Status(int)>& fn) {
  job_ = &fn;
  remaining_.store(n_ - 1, std::memory_order_relaxed);
  round_.fetch_add(1, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    absl::MutexLock lock(&mu_);
    round_cv_.SignalAll();
  }
  status_[0] = fn(0);
  auto done = [this] {
    return remaining_.load(std::memory_order_seq_cst) == 0;
  };
  if (!devices::SpinUntil(done, spin_, oversubscribed_)) {
    run_blocked_.store(true, std::memory_order_seq_cst);
    {
      absl::MutexLock lock(&mu_);
      while (!done()) done_cv_.Wait(&mu_);
    }
    run_blocked_.store(false, std::memory_order_seq_cst);
  }
  for (const absl::Status& s : status_) {
    RETURN_IF_ERROR(s);
  }
  return absl::OkStatus();
}

}  // namespace bench
}  // namespace tools
