#include "distribute/thread_group.h"

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "devices/completion.h"
#include "devices/thread_binding.h"

namespace distribute {
namespace internal {
namespace {

// How long an idle worker spins for its next task before it parks: training
// loops call Run back to back, and waking a parked thread costs tens of
// microseconds.
constexpr absl::Duration kIdleSpin = absl::Microseconds(50);

// Host threads kept for RunBoundThreads: a task goes to an idle worker, or
// to a new one when none is idle (never queued behind another task, so
// nested groups cannot deadlock). A worker holds no binding between tasks,
// so to a simulator it is what a thread not yet started was.
class WorkerPool {
 public:
  static WorkerPool& Get() {
    static WorkerPool* pool = new WorkerPool;  // Never destroyed.
    return *pool;
  }

  void Start(std::function<void()> task) {
    Worker* worker = nullptr;
    {
      absl::MutexLock lock(&mu_);
      if (!idle_.empty()) {
        worker = idle_.back();
        idle_.pop_back();
      }
    }
    if (worker == nullptr) {
      worker = new Worker;  // Lives as long as the process.
      std::thread([this, worker] { Loop(worker); }).detach();
    }
    // Set under the worker's lock, which a parked worker's condition is
    // evaluated with.
    absl::MutexLock lock(&worker->mu);
    worker->task = std::move(task);
    worker->has_task.store(true, std::memory_order_release);
  }

 private:
  struct Worker {
    absl::Mutex mu;
    std::function<void()> task ABSL_GUARDED_BY(mu);
    std::atomic<bool> has_task{false};
  };

  void Loop(Worker* worker) {
    while (true) {
      if (!devices::SpinUntil(
              [worker] {
                return worker->has_task.load(std::memory_order_acquire);
              },
              kIdleSpin, /*always_yield=*/true)) {
        absl::MutexLock lock(&worker->mu);
        auto has_task = [worker] {
          return worker->has_task.load(std::memory_order_acquire);
        };
        worker->mu.Await(absl::Condition(&has_task));
      }
      std::function<void()> task;
      {
        absl::MutexLock lock(&worker->mu);
        task = std::move(worker->task);
        worker->task = nullptr;
        worker->has_task.store(false, std::memory_order_relaxed);
      }
      task();
      absl::MutexLock lock(&mu_);
      idle_.push_back(worker);
    }
  }

  absl::Mutex mu_;
  std::vector<Worker*> idle_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

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
  int finished = 0;
  bool caller_suspended = false;
  // Whether every member is bound, and the members whose thread exited:
  // written under `mu`, read without it by threads that spin before they
  // park on `mu`.
  std::atomic<bool> all_bound{false};
  std::atomic<int> exited{0};
  devices::ThreadBinding* const caller = devices::ThreadBinding::Current();
  std::vector<devices::ThreadBinding*> bindings(n, nullptr);
  // With more members than CPUs a spinning thread holds a CPU that a
  // member it waits for needs: then yield at every turn.
  const bool always_yield =
      devices::BoundToOneCpu() || n > devices::UsableCpus();
  auto started = [&] { return all_bound.load(); };
  auto spin_until_started = [&] {
    devices::SpinUntil(started, kIdleSpin, always_yield);
  };
  // One member of the group: bind, wait until every member is bound, run,
  // unbind.
  auto run_member = [&](int i) {
    std::unique_ptr<devices::ThreadBinding> binding = devices[i]->BindThread();
    // A member that is not the last to bind suspends under the lock, so
    // that the last one's Resume (under the lock too) always follows it.
    std::optional<devices::BlockingRegion> waiting;
    {
      absl::MutexLock lock(&mu);
      bindings[i] = binding.get();
      if (++bound == n) {
        // The last thread to bind resumes the others before it lets them
        // go, so every one of them counts as running from here on.
        for (int k = 0; k < n; ++k) {
          if (k != i) bindings[k]->Resume();
        }
        all_bound.store(true);
      } else {
        waiting.emplace();
      }
    }
    if (waiting.has_value()) {
      spin_until_started();
      {
        absl::MutexLock lock(&mu);
        mu.Await(absl::Condition(&started));
      }
      waiting->MarkResumed();
      waiting.reset();
    }
    body(i);
    absl::MutexLock lock(&mu);
    if (++finished == n && caller_suspended) {
      // The last thread, still bound, resumes the waiting caller before it
      // unbinds: the group never leaves the simulation in between.
      caller->Resume();
    }
  };
  // An unbound caller runs member 0 itself; a bound one (a worker of an
  // in-process cluster) keeps its own binding and waits for the group.
  const int first_pooled = caller == nullptr ? 1 : 0;
  for (int i = first_pooled; i < n; ++i) {
    WorkerPool::Get().Start([&, i] {
      run_member(i);
      // The member's thread has let go of everything of this call, its
      // binding included: as a join of it would say.
      absl::MutexLock lock(&mu);
      exited.fetch_add(1);
    });
  }
  if (first_pooled == 1) {
    run_member(0);
  } else {
    // The bound caller keeps running until every thread is bound: binding
    // needs nothing from the simulation, and suspending earlier would let
    // simulated time advance while this group is still starting, by as
    // much as the host's thread scheduling happens to allow.
    spin_until_started();
    absl::MutexLock lock(&mu);
    mu.Await(absl::Condition(&started));
    // Then it waits outside the simulation (unless the group is already
    // done) until the last thread resumes it.
    if (finished < n) {
      // It waits for the group only: a deadlock among the group's threads
      // is still found (their waits fail instead of hanging).
      caller->SuspendForBoundThreads();
      caller_suspended = true;
    }
  }
  const int pooled = n - first_pooled;
  auto all_exited = [&] { return exited.load() == pooled; };
  devices::SpinUntil(all_exited, kIdleSpin, always_yield);
  absl::MutexLock lock(&mu);
  mu.Await(absl::Condition(&all_exited));
}

}  // namespace internal
}  // namespace distribute
