#include "distribute/thread_group.h"

#include <memory>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "devices/thread_binding.h"

namespace distribute {
namespace internal {

void RunBoundThreads(const std::vector<devices::Device*>& devices,
                     const std::function<void(int)>& body) {
  const int n = static_cast<int>(devices.size());
  if (n == 1) {
    std::unique_ptr<devices::ThreadBinding> binding = devices[0]->BindThread();
    body(0);
    return;
  }
  absl::Mutex mu;
  int bound = 0;
  bool started = false;
  int finished = 0;
  bool caller_suspended = false;
  devices::ThreadBinding* const caller = devices::ThreadBinding::Current();
  std::vector<devices::ThreadBinding*> bindings(n, nullptr);
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      std::unique_ptr<devices::ThreadBinding> binding =
          devices[i]->BindThread();
      {
        absl::MutexLock lock(&mu);
        bindings[i] = binding.get();
        if (++bound == n) {
          // The last thread to bind resumes the others before it lets them
          // go, so every one of them counts as running from here on.
          for (int k = 0; k < n; ++k) {
            if (k != i) bindings[k]->Resume();
          }
          started = true;
        } else {
          devices::BlockingRegion waiting;
          mu.Await(absl::Condition(&started));
          waiting.MarkResumed();
        }
      }
      body(i);
      absl::MutexLock lock(&mu);
      if (++finished == n && caller_suspended) {
        // The last thread, still bound, resumes the waiting caller before
        // it unbinds: the group never leaves the simulation in between.
        caller->Resume();
      }
    });
  }
  {
    // A bound caller (a worker of an in-process cluster) keeps running
    // until every thread is bound: binding needs nothing from the
    // simulation, and suspending earlier would let simulated time advance
    // while this group is still starting, by as much as the host's thread
    // scheduling happens to allow.
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(&started));
    // Then it waits outside the simulation (unless the group is already
    // done) until the last thread resumes it.
    if (caller != nullptr && finished < n) {
      // It waits for the group only: a deadlock among the group's threads
      // is still found (their waits fail instead of hanging).
      caller->SuspendForBoundThreads();
      caller_suspended = true;
    }
  }
  for (std::thread& t : threads) t.join();
}

}  // namespace internal
}  // namespace distribute
