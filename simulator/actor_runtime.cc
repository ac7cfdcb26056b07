// Deterministic, self-driving parking of host threads; see actor_runtime.h.
#include "simulator/actor_runtime.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "simulator/engine.h"
#include "simulator/time.h"

namespace simulator {
namespace {

// How many actors a message lists before it says "and N more".
constexpr int kMaxListed = 8;

}  // namespace

void ActorWakeup::operator()(absl::Status status) const {
  runtime_->Wake(actor_, park_,
                 ParkOutcome{WakeReason::kCompleted, std::move(status)});
}

ActorRuntime::ActorRuntime(Engine& engine, ActorRuntimeOptions options)
    : engine_(engine), options_(options) {
  now_.store(engine_.now());
}

void ActorRuntime::AwaitNotBusy() const {
  mu_.Await(absl::Condition(
      +[](bool* busy) { return !*busy; }, &busy_));
}

absl::Status ActorRuntime::RegisterLocked(ActorId actor, std::string label) {
  auto [it, inserted] = actors_.try_emplace(actor);
  if (!inserted) {
    return absl::AlreadyExistsError(absl::StrCat(
        "actor ", actor, " (", it->second.label, ") is already registered; ",
        "every thread needs its own actor id"));
  }
  it->second.label = std::move(label);
  ++running_;
  ++version_;
  return absl::OkStatus();
}

absl::Status ActorRuntime::Register(ActorId actor, std::string label) {
  if (actor >= kTemporaryActorBase) {
    return absl::InvalidArgumentError(absl::StrCat(
        "actor id ", actor, " is reserved for temporary actors; use ids below ",
        kTemporaryActorBase));
  }
  absl::MutexLock lock(&mu_);
  // A new actor runs from now on: let a step in progress finish first.
  AwaitNotBusy();
  return RegisterLocked(actor, std::move(label));
}

ActorId ActorRuntime::RegisterTemporary(std::string label) {
  absl::MutexLock lock(&mu_);
  AwaitNotBusy();
  const ActorId actor = kTemporaryActorBase + next_temporary_++;
  // Fresh ids cannot collide.
  RegisterLocked(actor, std::move(label)).IgnoreError();
  return actor;
}

absl::Status ActorRuntime::Unregister(ActorId actor) {
  absl::MutexLock lock(&mu_);
  auto it = actors_.find(actor);
  if (it == actors_.end()) {
    return absl::NotFoundError(absl::StrCat("Unregister of actor ", actor,
                                            ", which is not registered"));
  }
  switch (it->second.phase) {
    case Phase::kRunning:
      --running_;
      break;
    case Phase::kSuspended:
      --suspended_;
      break;
    case Phase::kSuspendedForActors:
      break;
    default:
      return absl::FailedPreconditionError(absl::StrCat(
          "Unregister of actor ", actor, " (", it->second.label,
          ") while it is parked; only its own thread may unregister it"));
  }
  actors_.erase(it);
  ++version_;
  MaybeDrive();
  return absl::OkStatus();
}

void ActorRuntime::SuspendLocked(ActorId actor, Phase phase) {
  auto it = actors_.find(actor);
  if (it == actors_.end() || it->second.phase != Phase::kRunning) return;
  it->second.phase = phase;
  --running_;
  // Only an actor blocked outside can unblock the others (see Drive).
  if (phase == Phase::kSuspended) ++suspended_;
  ++version_;
  MaybeDrive();
}

void ActorRuntime::ResumeLocked(ActorId actor) {
  // The actor runs from now on: let a step in progress finish first.
  AwaitNotBusy();
  auto it = actors_.find(actor);
  if (it == actors_.end()) return;
  const Phase phase = it->second.phase;
  if (phase != Phase::kSuspended && phase != Phase::kSuspendedForActors) {
    return;
  }
  if (phase == Phase::kSuspended) --suspended_;
  it->second.phase = Phase::kRunning;
  ++running_;
  ++version_;
}

void ActorRuntime::Suspend(ActorId actor) {
  absl::MutexLock lock(&mu_);
  SuspendLocked(actor, Phase::kSuspended);
}

void ActorRuntime::SuspendForActors(ActorId actor) {
  absl::MutexLock lock(&mu_);
  SuspendLocked(actor, Phase::kSuspendedForActors);
}

void ActorRuntime::Resume(ActorId actor) {
  absl::MutexLock lock(&mu_);
  ResumeLocked(actor);
}

absl::Status ActorRuntime::Submit(ActorId actor, Work work) {
  absl::MutexLock lock(&mu_);
  auto it = actors_.find(actor);
  if (it == actors_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("Submit from actor ", actor, ", which is not registered"));
  }
  Actor& a = it->second;
  const Phase suspended = a.phase;
  const bool resuspend =
      suspended == Phase::kSuspended || suspended == Phase::kSuspendedForActors;
  if (resuspend) ResumeLocked(actor);
  if (a.phase != Phase::kRunning) {
    return absl::FailedPreconditionError(absl::StrCat(
        "Submit from actor ", actor, " (", a.label, "), which is parked"));
  }
  if (!work) {
    return absl::InvalidArgumentError("Submit was given empty work");
  }
  ++a.sequence;
  work_.emplace(WorkKey{actor, a.sequence},
                WorkItem{std::move(work), nullptr, 0});
  ++version_;
  if (resuspend) SuspendLocked(actor, suspended);
  return absl::OkStatus();
}

ParkOutcome ActorRuntime::Park(ActorId actor, std::string what,
                               StartFunction start,
                               absl::Duration wall_timeout) {
  absl::MutexLock lock(&mu_);
  auto it = actors_.find(actor);
  if (it == actors_.end()) {
    return ParkOutcome{WakeReason::kCompleted,
                       absl::FailedPreconditionError(
                           absl::StrCat("Park(\"", what, "\") for actor ",
                                        actor, ", which is not registered"))};
  }
  Actor& a = it->second;  // std::map references stay valid.
  const Phase suspended = a.phase;
  const bool resuspend =
      suspended == Phase::kSuspended || suspended == Phase::kSuspendedForActors;
  if (resuspend) ResumeLocked(actor);
  if (a.phase != Phase::kRunning) {
    return ParkOutcome{WakeReason::kCompleted,
                       absl::FailedPreconditionError(absl::StrCat(
                           "Park(\"", what, "\") for actor ", actor, " (",
                           a.label, "), which is already parked"))};
  }
  if (!start) {
    return ParkOutcome{
        WakeReason::kCompleted,
        absl::InvalidArgumentError(
            absl::StrCat("Park(\"", what, "\") with an empty start function"))};
  }
  ++a.park;
  ++a.sequence;
  a.what = std::move(what);
  a.phase = Phase::kParked;
  a.outcome = ParkOutcome();
  work_.emplace(WorkKey{actor, a.sequence},
                WorkItem{nullptr, std::move(start), a.park});
  --running_;
  ++version_;
  const absl::Time deadline = absl::Now() + wall_timeout;
  ParkOutcome outcome;
  while (true) {
    if (a.phase == Phase::kRunning) {
      outcome = std::move(a.outcome);
      break;
    }
    if (absl::Now() >= deadline) {
      outcome = Withdraw(actor, a, wall_timeout);
      break;
    }
    if (NeedsDriver()) {
      Drive(&a, deadline);
      continue;
    }
    parked_threads_.insert(actor);
    a.cv.WaitWithDeadline(&mu_, deadline);
    parked_threads_.erase(actor);
  }
  if (resuspend) SuspendLocked(actor, suspended);
  return outcome;
}

ParkOutcome ActorRuntime::Withdraw(ActorId actor, Actor& a,
                                   absl::Duration wall_timeout) {
  AwaitNotBusy();
  switch (a.phase) {
    case Phase::kRunning:  // Released meanwhile.
      return std::move(a.outcome);
    case Phase::kWoken: {  // Completed; take the result.
      woken_.erase(actor);
      a.phase = Phase::kRunning;
      ++running_;
      ++version_;
      return std::move(a.outcome);
    }
    case Phase::kParked:
      work_.erase(WorkKey{actor, a.sequence});
      break;
    case Phase::kWaiting:
      --waiting_;
      break;
    case Phase::kSuspended:
    case Phase::kSuspendedForActors:
      break;
  }
  const std::string running = Describe(Phase::kRunning);
  ++a.park;  // Wakeups of the abandoned park are ignored.
  a.phase = Phase::kRunning;
  ++running_;
  ++version_;
  return ParkOutcome{
      WakeReason::kWallTimeout,
      absl::DeadlineExceededError(absl::StrCat(
          "did not complete within ", absl::FormatDuration(wall_timeout),
          " of host time (simulated time ", FormatTime(engine_.now()),
          "); simulated time cannot advance while a bound thread runs "
          "without parking or suspending; running: ",
          running.empty() ? "none" : running))};
}

void ActorRuntime::Wake(ActorId actor, uint64_t park, ParkOutcome outcome) {
  absl::MutexLock lock(&mu_);
  auto it = actors_.find(actor);
  if (it == actors_.end()) return;
  Actor& a = it->second;
  if (a.phase != Phase::kWaiting || a.park != park) return;
  a.outcome = std::move(outcome);
  a.phase = Phase::kWoken;
  --waiting_;
  woken_.insert(actor);
  ++version_;
  SignalDriver();
}

bool ActorRuntime::NeedsDriver() const {
  return running_ == 0 && !driving_ && version_ != idle_version_;
}

void ActorRuntime::SignalDriver() {
  if (!NeedsDriver() || parked_threads_.empty()) return;
  actors_.at(*parked_threads_.begin()).cv.Signal();
}

void ActorRuntime::MaybeDrive() {
  if (NeedsDriver()) Drive(nullptr, absl::InfiniteFuture());
}

void ActorRuntime::Drive(const Actor* self, absl::Time deadline) {
  driving_ = true;
  bool idle = false;
  while (running_ == 0) {
    if (self != nullptr && absl::Now() >= deadline) break;
    // 1. Work posted at the current time, in (actor, sequence) order.
    if (!work_.empty()) {
      RunWorkItem();
      continue;
    }
    // 2. Release the lowest woken actor; it runs alone until it parks.
    if (!woken_.empty()) {
      const ActorId next = *woken_.begin();
      woken_.erase(woken_.begin());
      Actor& released = actors_.at(next);
      released.phase = Phase::kRunning;
      released.cv.Signal();
      ++running_;
      continue;
    }
    // 3. Advance time, but only for someone who waits for it.
    if (waiting_ == 0) {
      idle = true;
      break;
    }
    if (StepOneTime()) continue;
    // 4. Nothing can happen by itself. A suspended actor may still unblock
    //    the others; otherwise, after a grace period, it is a deadlock.
    if (suspended_ > 0) {
      idle = true;
      break;
    }
    const uint64_t seen = version_;
    auto changed = [this, seen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return version_ != seen;
    };
    absl::Duration grace = options_.deadlock_grace;
    if (self != nullptr) grace = std::min(grace, deadline - absl::Now());
    if (mu_.AwaitWithTimeout(absl::Condition(&changed), grace)) continue;
    if (self != nullptr && absl::Now() >= deadline) break;
    DeclareDeadlock();
  }
  if (idle) idle_version_ = version_;
  driving_ = false;
  // A parked driver that stopped at its deadline hands over to another.
  SignalDriver();
}

void ActorRuntime::RunWorkItem() {
  auto node = work_.extract(work_.begin());
  const ActorId actor = node.key().first;
  WorkItem item = std::move(node.mapped());
  if (item.start) {
    // A withdrawn park erases its item, so the actor is here and parked.
    actors_.at(actor).phase = Phase::kWaiting;
    ++waiting_;
  }
  AwaitNotBusy();
  busy_ = true;
  mu_.Unlock();
  if (item.start) {
    item.start(ActorWakeup(this, actor, item.park));
  } else {
    item.work();
  }
  // Destroy the closures before taking the lock: they may own anything.
  item = WorkItem();
  mu_.Lock();
  busy_ = false;
}

bool ActorRuntime::StepOneTime() {
  AwaitNotBusy();
  busy_ = true;
  mu_.Unlock();
  bool stepped = false;
  const std::optional<SimTime> next = engine_.NextEventTime();
  if (next.has_value()) {
    stepped = true;
    while (true) {
      const std::optional<SimTime> time = engine_.NextEventTime();
      if (!time.has_value() || *time != *next) break;
      engine_.Step();
    }
  }
  now_.store(engine_.now());
  mu_.Lock();
  busy_ = false;
  return stepped;
}

void ActorRuntime::DeclareDeadlock() {
  const absl::Status status = absl::DeadlineExceededError(absl::StrCat(
      "the simulation is deadlocked at ", FormatTime(engine_.now()),
      ": every bound thread is blocked, none outside the simulation, and no "
      "simulated "
      "event is pending (blocked: ",
      Describe(Phase::kWaiting), ")"));
  for (auto& [id, a] : actors_) {
    if (a.phase != Phase::kWaiting) continue;
    a.outcome = ParkOutcome{WakeReason::kDeadlock, status};
    a.phase = Phase::kWoken;
    --waiting_;
    woken_.insert(id);
  }
  ++version_;
}

std::string ActorRuntime::Describe(Phase phase) const {
  std::string text;
  int listed = 0;
  int more = 0;
  for (const auto& [id, a] : actors_) {
    if (a.phase != phase) continue;
    if (listed == kMaxListed) {
      ++more;
      continue;
    }
    absl::StrAppend(&text, listed == 0 ? "" : "; ", a.label);
    if (phase == Phase::kWaiting) absl::StrAppend(&text, ": ", a.what);
    ++listed;
  }
  if (more > 0) absl::StrAppend(&text, "; and ", more, " more");
  return text;
}

SimTime ActorRuntime::Now() const { return now_.load(); }

void ActorRuntime::WithEngine(absl::FunctionRef<void()> fn) const {
  {
    absl::MutexLock lock(&mu_);
    AwaitNotBusy();
    busy_ = true;
  }
  fn();
  absl::MutexLock lock(&mu_);
  busy_ = false;
}

int64_t ActorRuntime::num_actors() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(actors_.size());
}

}  // namespace simulator
