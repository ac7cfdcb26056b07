// A one-shot completion flag carrying a Status, built for low latency: the
// waiter spins briefly on an atomic (with a CPU pause; yielding the CPU at
// every turn instead when the process is bound to a single CPU, where the
// completer can only run once the waiter yields) before blocking on a
// condition variable, and the completer only takes the lock when someone is
// blocked. Events and transport requests are built on it.
//
// Example:
//   devices::Completion done;
//   std::thread worker([&] { done.Complete(absl::OkStatus()); });
//   if (done.WaitFor(absl::Seconds(1))) { /* done.status() is OK */ }
//   worker.join();
#ifndef DEVICES_COMPLETION_H_
#define DEVICES_COMPLETION_H_

#include <atomic>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace devices {

// How long a waiter spins before it blocks.
inline constexpr absl::Duration kDefaultSpin = absl::Microseconds(30);

class Completion {
 public:
  Completion() = default;
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;

  // Records `status` and wakes the waiters. Only the first call has an
  // effect; it returns true, later calls return false. Thread-safe.
  bool Complete(absl::Status status);

  // True once Complete() has finished. Never blocks.
  bool done() const { return state_.load(std::memory_order_acquire) == kDone; }

  // Waits until done() or until `timeout` has passed; spins for up to
  // `spin` of it first. Returns done().
  bool WaitFor(absl::Duration timeout, absl::Duration spin = kDefaultSpin);

  // The recorded status. Precondition: done().
  const absl::Status& status() const { return status_; }

 private:
  enum State : int { kPending, kCompleting, kDone };

  std::atomic<int> state_{kPending};
  std::atomic<int> blocked_waiters_{0};
  // Written once by the winning Complete() before state_ becomes kDone.
  absl::Status status_;
  absl::Mutex mu_;
  absl::CondVar cv_;  // Signalled with mu_ held.
};

// Pauses the CPU briefly inside a spin loop.
void CpuRelax();

// CPUs this process may run on at once (its affinity mask; else the
// machine's), at least 1.
int UsableCpus();

// Whether the process may run on one CPU only (bound to a core, as mpirun
// binds its ranks), as UsableCpus() says on the first call: a thread that
// waits for another must then yield that CPU at every turn of its spin.
bool BoundToOneCpu();

// Spins until pred() or `spin` has passed, yielding now and then so that a
// busy machine still runs the thread being waited for (at every turn when
// `always_yield`: more threads than CPUs, or bound to one). Returns pred().
template <typename Pred>
bool SpinUntil(Pred pred, absl::Duration spin, bool always_yield) {
  const absl::Time until = absl::Now() + spin;
  for (int i = 1;; ++i) {
    if (pred()) return true;
    if (always_yield) {
      std::this_thread::yield();
      if (absl::Now() >= until) return pred();
      continue;
    }
    CpuRelax();
    if (i % 64 == 0) {
      if (absl::Now() >= until) return pred();
      if (i % 1024 == 0) std::this_thread::yield();
    }
  }
}

}  // namespace devices

#endif  // DEVICES_COMPLETION_H_
