#include "devices/completion.h"

#include <algorithm>
#include <thread>
#include <utility>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__linux__)
#include <sched.h>
#endif

namespace devices {
int UsableCpus() {
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
#endif
  const unsigned count = std::thread::hardware_concurrency();
  return count == 0 ? 1 : static_cast<int>(count);
}

bool BoundToOneCpu() {
  static const bool one = UsableCpus() == 1;
  return one;
}

void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#else
  std::this_thread::yield();
#endif
}

bool Completion::Complete(absl::Status status) {
  int expected = kPending;
  if (!state_.compare_exchange_strong(expected, kCompleting,
                                      std::memory_order_acq_rel)) {
    return false;
  }
  status_ = std::move(status);
  // seq_cst store and load pair with the waiter's seq_cst increment and load
  // (Dekker): either the waiter sees kDone, or we see it blocked and signal
  // under the mutex it holds while checking.
  state_.store(kDone, std::memory_order_seq_cst);
  if (blocked_waiters_.load(std::memory_order_seq_cst) > 0) {
    absl::MutexLock lock(&mu_);
    cv_.SignalAll();
  }
  return true;
}

bool Completion::WaitFor(absl::Duration timeout, absl::Duration spin) {
  if (done()) return true;
  const absl::Time deadline = absl::Now() + timeout;
  if (SpinUntil([this] { return done(); }, std::min(spin, timeout),
                BoundToOneCpu())) {
    return true;
  }
  blocked_waiters_.fetch_add(1, std::memory_order_seq_cst);
  {
    absl::MutexLock lock(&mu_);
    while (state_.load(std::memory_order_seq_cst) != kDone) {
      if (cv_.WaitWithDeadline(&mu_, deadline)) break;  // Timed out.
    }
  }
  blocked_waiters_.fetch_sub(1, std::memory_order_seq_cst);
  return done();
}

}  // namespace devices
