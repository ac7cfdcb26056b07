// Deterministic parking of host threads for a long-lived simulation: the
// runtime behind the simulated platform (sim_platform.h).
//
// A simulated platform lives long: threads bind and unbind while it runs,
// block on host primitives the simulator cannot see, and call it from
// unbound threads. The ActorRuntime serialises them onto one engine:
//
//  - Actors register and unregister at any time (Register/Unregister). An
//    actor counts as *running* until it parks, suspends or unregisters.
//  - Self-driving: there is no driver thread. Whichever thread makes the
//    number of running actors zero drives the simulation: it runs the work
//    posted at the current simulated time in (actor id, sequence) order,
//    releases the woken actors one at a time in actor-id order (each runs
//    alone until it parks again), and only when nothing is left at the
//    current time advances the engine to its next event time. So simulated
//    time never advances while an actor runs, and the order of everything
//    that touches the engine and the models is a function of actor ids and
//    per-actor sequence numbers, never of host thread timing.
//  - Suspend/Resume (the devices::ThreadBinding contract): a suspended actor
//    is blocked outside the simulation; the engine does not wait for it.
//    Resume, by the actor itself or by a thread about to wake it, counts it
//    as running again, so the engine cannot advance until it parks.
//  - Deadlock: when every registered actor is parked, none is suspended
//    (SuspendForActors does not count: such an actor waits for the others), no
//    work is posted and no event is pending, every waiting actor is woken
//    with WakeReason::kDeadlock (after `deadlock_grace` of host time without
//    any change, so that a thread that is about to bind is not mistaken for
//    a missing peer). The operations stay under way; the waits end.
//  - Every park has a host-time limit (WakeReason::kWallTimeout), the
//    safety net against an actor that runs forever outside the simulation.
//
// Determinism holds as long as every thread that takes part is bound before
// any of them lets simulated time advance: threads started together should
// meet at a start barrier (suspend, and let the last arriver Resume() the
// others) before their first simulated operation.
//
// Example:
//   Engine engine;
//   ActorRuntime runtime(engine);
//   runtime.Register(/*actor=*/1, "replica 0").IgnoreError();  // on its thread
//   ParkOutcome done = runtime.Park(1, "compute", [&](ActorWakeup wake) {
//     // On the driving thread: the engine and the models are free to use.
//     engine.ScheduleAfter(Microseconds(5), 1, [wake] { wake();
//     }).IgnoreError();
//   }, absl::Seconds(10));
//   // done.reason == WakeReason::kCompleted, runtime.Now() == 5us
//   runtime.Unregister(1).IgnoreError();
#ifndef SIMULATOR_ACTOR_RUNTIME_H_
#define SIMULATOR_ACTOR_RUNTIME_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "simulator/engine.h"
#include "simulator/time.h"

namespace simulator {

class ActorRuntime;

// Ids of temporary actors (threads that are not bound, for the length of
// one operation): above every device actor, below the models' reserved ids.
inline constexpr ActorId kTemporaryActorBase = uint64_t{1} << 62;

// Why a park ended.
enum class WakeReason {
  kCompleted,    // the operation called its ActorWakeup
  kDeadlock,     // every actor was blocked with nothing left to simulate
  kWallTimeout,  // the host-time limit passed first
};

struct ParkOutcome {
  WakeReason reason = WakeReason::kCompleted;
  // kCompleted: the status given to the wakeup. Otherwise DEADLINE_EXCEEDED
  // saying what happened (callers add what their operation was).
  absl::Status status;
};

// Completes one park. Cheap to copy; callable from any thread (normally
// from a start function or an engine event). Only the first call for a
// park counts; calls for a park that already ended are ignored.
class ActorWakeup {
 public:
  void operator()(absl::Status status = absl::OkStatus()) const;

 private:
  friend class ActorRuntime;
  ActorWakeup(ActorRuntime* runtime, ActorId actor, uint64_t park)
      : runtime_(runtime), actor_(actor), park_(park) {}

  ActorRuntime* runtime_;
  ActorId actor_;
  uint64_t park_;
};

struct ActorRuntimeOptions {
  // Host time the runtime waits, with every actor blocked and nothing to
  // simulate, before it declares a deadlock.
  absl::Duration deadlock_grace = absl::Milliseconds(250);
};

class ActorRuntime {
 public:
  // Runs on the driving thread with the engine free to use; must arrange
  // for the wakeup to be called (now or from an engine event).
  using StartFunction = absl::AnyInvocable<void(ActorWakeup)>;
  using Work = absl::AnyInvocable<void()>;

  // `engine` must outlive the runtime; only the runtime steps it.
  explicit ActorRuntime(Engine& engine, ActorRuntimeOptions options = {});
  ActorRuntime(const ActorRuntime&) = delete;
  ActorRuntime& operator=(const ActorRuntime&) = delete;

  // Registers the calling thread as `actor` (running). `label` names it in
  // messages. ALREADY_EXISTS if the id is registered; INVALID_ARGUMENT for
  // an id at or above kTemporaryActorBase.
  absl::Status Register(ActorId actor, std::string label);
  // Registers the calling thread under a fresh temporary id and returns it.
  ActorId RegisterTemporary(std::string label);
  // The actor's thread is done with it. NOT_FOUND if unknown,
  // FAILED_PRECONDITION if it is parked. May drive the simulation.
  absl::Status Unregister(ActorId actor);

  // The actor blocks outside the simulation (no-op unless running). May
  // drive the simulation before it returns.
  void Suspend(ActorId actor);
  // The same for an actor whose thread blocks until other actors are done
  // (it joins bound threads, or runs as another actor): it can unblock none
  // of them meanwhile, so unlike Suspend it does not keep the runtime from
  // declaring the others deadlocked. Resume ends it as it ends Suspend.
  void SuspendForActors(ActorId actor);
  // The actor runs again (no-op unless suspended). Thread-safe: the actor's
  // own thread, or another thread about to wake it.
  void Resume(ActorId actor);

  // Parks the running (or suspended) `actor` until its operation completes:
  // `start` runs on the driving thread at the current simulated time, after
  // the work posted before it. `what` describes the operation in deadlock
  // and timeout messages. The thread waits at most `wall_timeout` of host
  // time. A suspended actor is resumed for the park and suspended again
  // after it. FAILED_PRECONDITION (as a kCompleted outcome) for an unknown
  // actor or one that is already parked.
  ParkOutcome Park(ActorId actor, std::string what, StartFunction start,
                   absl::Duration wall_timeout);

  // Posts `work` to run on the driving thread at the current simulated time,
  // in (actor, sequence) order with the actor's other work and parks, and
  // returns at once. FAILED_PRECONDITION unless `actor` is running.
  absl::Status Submit(ActorId actor, Work work);

  // The current simulated time. Thread-safe.
  SimTime Now() const;

  // Runs `fn` with exclusive use of the engine and the models (nothing is
  // simulated meanwhile), from any thread that is not driving. For reading
  // results: traces, summaries, counters.
  void WithEngine(absl::FunctionRef<void()> fn) const;

  // Number of registered actors. Thread-safe.
  int64_t num_actors() const;

 private:
  friend class ActorWakeup;

  enum class Phase {
    kRunning,    // its thread runs
    kSuspended,  // its thread is blocked outside the simulation
    // Its thread waits for other actors' threads (SuspendForActors): it
    // cannot unblock them, so it does not count as blocked outside.
    kSuspendedForActors,
    kParked,   // its start function has not run yet
    kWaiting,  // its operation is under way
    kWoken,    // its operation ended; waits to be released
  };
  struct Actor {
    std::string label;
    Phase phase = Phase::kRunning;
    uint64_t park = 0;      // parks so far (wakeups carry it)
    uint64_t sequence = 0;  // work and parks posted so far
    std::string what;
    ParkOutcome outcome;
    // Its thread waits here while parked: signalled when it is released,
    // or when a driver is needed and it is the one picked to drive.
    absl::CondVar cv;
  };
  struct WorkItem {
    Work work;            // posted work, or
    StartFunction start;  // a parked actor's start function
    uint64_t park = 0;
  };
  using WorkKey = std::pair<ActorId, uint64_t>;

  void Wake(ActorId actor, uint64_t park, ParkOutcome outcome)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status RegisterLocked(ActorId actor, std::string label)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `phase`: kSuspended or kSuspendedForActors.
  void SuspendLocked(ActorId actor, Phase phase)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ResumeLocked(ActorId actor) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drives if nobody runs and nobody drives.
  void MaybeDrive() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the simulation needs a driver: nobody runs, nobody drives, and
  // something changed since the last driver found nothing to do.
  bool NeedsDriver() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Wakes one parked thread to drive where a driver is needed (after a
  // change made by a thread that does not drive itself).
  void SignalDriver() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The driving loop; see the file comment. `self` (may be null) is the
  // parked actor driving, which stops at `deadline`.
  void Drive(const Actor* self, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void RunWorkItem() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Runs every engine event at the next pending time; false if none.
  bool StepOneTime() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DeclareDeadlock() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AwaitNotBusy() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes a parked `actor` run again after its wall timeout.
  ParkOutcome Withdraw(ActorId actor, Actor& a, absl::Duration wall_timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string Describe(Phase phase) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Engine& engine_;
  const ActorRuntimeOptions options_;
  mutable absl::Mutex mu_;
  std::map<ActorId, Actor> actors_ ABSL_GUARDED_BY(mu_);
  std::map<WorkKey, WorkItem> work_ ABSL_GUARDED_BY(mu_);
  std::set<ActorId> woken_ ABSL_GUARDED_BY(mu_);
  // Actors whose threads wait on their cv in Park. Each thread waits on its
  // own condition variable, so that releasing one actor wakes one thread
  // (a shared condition would be evaluated for every parked thread on
  // every unlock: quadratic in the actors).
  std::set<ActorId> parked_threads_ ABSL_GUARDED_BY(mu_);
  int64_t running_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t waiting_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t suspended_ ABSL_GUARDED_BY(mu_) = 0;
  // Bumped by every change a driver must look at; idle_version_ is the
  // version at which the last driver found nothing to do.
  uint64_t version_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t idle_version_ ABSL_GUARDED_BY(mu_) = 0;
  bool driving_ ABSL_GUARDED_BY(mu_) = false;
  // The engine is in use outside mu_ (a driver step or WithEngine).
  mutable bool busy_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_temporary_ ABSL_GUARDED_BY(mu_) = 0;
  // engine_.now() as of the last step, readable without the lock.
  std::atomic<SimTime> now_{0};
};

}  // namespace simulator

#endif  // SIMULATOR_ACTOR_RUNTIME_H_
