#include "simulator/actor_runtime.h"

#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "simulator/engine.h"
#include "simulator/time.h"

namespace simulator {
namespace {

// Parks `actor` for `duration` of simulated time.
ParkOutcome Sleep(ActorRuntime& runtime, Engine& engine, ActorId actor,
                  SimTime duration) {
  return runtime.Park(
      actor, absl::StrCat("sleep ", FormatTime(duration)),
      [&engine, actor, duration](ActorWakeup wake) {
        engine.ScheduleAfter(duration, actor, [wake] { wake(); }).IgnoreError();
      },
      absl::Seconds(30));
}

TEST(ActorRuntimeTest, ParkRunsTheStartFunctionAndAdvancesTime) {
  Engine engine;
  ActorRuntime runtime(engine);
  ASSERT_TRUE(runtime.Register(1, "one").ok());
  ParkOutcome done = Sleep(runtime, engine, 1, Microseconds(5));
  EXPECT_EQ(done.reason, WakeReason::kCompleted);
  EXPECT_TRUE(done.status.ok());
  EXPECT_EQ(runtime.Now(), Microseconds(5));
  ParkOutcome failed = runtime.Park(
      1, "fails",
      [](ActorWakeup wake) { wake(absl::UnavailableError("gone")); },
      absl::Seconds(30));
  EXPECT_EQ(failed.reason, WakeReason::kCompleted);
  EXPECT_EQ(failed.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_TRUE(runtime.Unregister(1).ok());
  EXPECT_EQ(runtime.num_actors(), 0);
}

TEST(ActorRuntimeTest, RegistrationErrors) {
  Engine engine;
  ActorRuntime runtime(engine);
  ASSERT_TRUE(runtime.Register(3, "three").ok());
  EXPECT_EQ(runtime.Register(3, "again").code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(runtime.Register(kTemporaryActorBase, "reserved").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(runtime.Unregister(4).code(), absl::StatusCode::kNotFound);
  const ActorId a = runtime.RegisterTemporary("a");
  const ActorId b = runtime.RegisterTemporary("b");
  EXPECT_GE(a, kTemporaryActorBase);
  EXPECT_EQ(b, a + 1);
  EXPECT_EQ(runtime.Submit(99, [] {}).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(runtime
                .Park(
                    99, "x", [](ActorWakeup w) { w(); }, absl::Seconds(1))
                .status.code(),
            absl::StatusCode::kFailedPrecondition);
  for (ActorId id : {ActorId{3}, a, b})
    EXPECT_TRUE(runtime.Unregister(id).ok());
}

// Threads released at the same simulated time run in actor-id order, and
// posted work runs in (actor, sequence) order, whatever the host does.
TEST(ActorRuntimeTest, OrderIsByActorIdNotByHostTiming) {
  for (int attempt = 0; attempt < 5; ++attempt) {
    Engine engine;
    ActorRuntime runtime(engine);
    absl::Mutex mu;
    std::vector<std::string> log;
    auto record = [&](std::string entry) {
      absl::MutexLock lock(&mu);
      log.push_back(std::move(entry));
    };
    const std::vector<ActorId> ids = {30, 10, 20};
    for (ActorId id : ids) ASSERT_TRUE(runtime.Register(id, "t").ok());
    std::vector<std::thread> threads;
    for (ActorId id : ids) {
      threads.emplace_back([&, id] {
        // Host timing differs run to run; the simulation must not care.
        absl::SleepFor(absl::Microseconds(static_cast<int64_t>(id) * attempt));
        runtime.Submit(id, [&, id] { record(absl::StrCat("post ", id)); })
            .IgnoreError();
        for (int step = 0; step < 3; ++step) {
          Sleep(runtime, engine, id, Microseconds(static_cast<int64_t>(id)));
          record(absl::StrCat(id, "@", FormatTime(runtime.Now())));
        }
        runtime.Unregister(id).IgnoreError();
      });
    }
    for (std::thread& t : threads) t.join();
    const std::vector<std::string> expected = {
        "post 10", "post 20", "post 30", "10@10us", "10@20us", "20@20us",
        "10@30us", "30@30us", "20@40us", "20@60us", "30@60us", "30@90us"};
    EXPECT_EQ(log, expected) << "attempt " << attempt;
  }
}

TEST(ActorRuntimeTest, DeadlockWakesEveryWaiter) {
  Engine engine;
  ActorRuntimeOptions options;
  options.deadlock_grace = absl::Milliseconds(20);
  ActorRuntime runtime(engine, options);
  ASSERT_TRUE(runtime.Register(1, "waiter one").ok());
  ASSERT_TRUE(runtime.Register(2, "waiter two").ok());
  std::vector<ParkOutcome> outcomes(2);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      const ActorId id = static_cast<ActorId>(i + 1);
      outcomes[static_cast<size_t>(i)] = runtime.Park(
          id, absl::StrCat("recv ", i), [](ActorWakeup) {}, absl::Seconds(30));
      runtime.Unregister(id).IgnoreError();
    });
  }
  for (std::thread& t : threads) t.join();
  for (const ParkOutcome& outcome : outcomes) {
    EXPECT_EQ(outcome.reason, WakeReason::kDeadlock);
    EXPECT_EQ(outcome.status.code(), absl::StatusCode::kDeadlineExceeded);
    EXPECT_NE(outcome.status.message().find("recv 0"), std::string::npos)
        << outcome.status;
    EXPECT_NE(outcome.status.message().find("recv 1"), std::string::npos);
  }
}

// An actor that joins the others (SuspendForActors: a thread waiting for
// its bound threads) cannot wake them, so their deadlock is still declared;
// with Suspend in its place they would wait for it until their wall
// timeout.
TEST(ActorRuntimeTest, ActorWaitingForTheOthersDoesNotHideTheirDeadlock) {
  Engine engine;
  ActorRuntimeOptions options;
  options.deadlock_grace = absl::Milliseconds(20);
  ActorRuntime runtime(engine, options);
  ASSERT_TRUE(runtime.Register(1, "joiner").ok());
  runtime.SuspendForActors(1);
  ParkOutcome outcome;
  std::thread child([&] {
    ASSERT_TRUE(runtime.Register(2, "child").ok());
    outcome = runtime.Park(
        2, "recv from a worker that left", [](ActorWakeup) {},
        absl::Seconds(30));
    // The child resumes its joiner before it leaves, as RunBoundThreads'
    // last thread does.
    runtime.Resume(1);
    runtime.Unregister(2).IgnoreError();
  });
  child.join();
  EXPECT_EQ(outcome.reason, WakeReason::kDeadlock);
  EXPECT_NE(outcome.status.message().find("recv from a worker that left"),
            std::string::npos)
      << outcome.status;
  // The joiner runs again and can still use the simulation.
  const ParkOutcome own = runtime.Park(
      1, "own operation", [](ActorWakeup wake) { wake(); }, absl::Seconds(30));
  EXPECT_EQ(own.reason, WakeReason::kCompleted);
  EXPECT_TRUE(runtime.Unregister(1).ok());
}

// A suspended actor does not hold time back, and it is not a deadlock while
// it may still wake the others.
TEST(ActorRuntimeTest, SuspendedActorsLetTimeAdvance) {
  Engine engine;
  ActorRuntimeOptions options;
  options.deadlock_grace = absl::Milliseconds(20);
  ActorRuntime runtime(engine, options);
  ASSERT_TRUE(runtime.Register(1, "sleeper").ok());
  ASSERT_TRUE(runtime.Register(2, "blocked outside").ok());
  absl::Mutex mu;
  bool released = false;
  ParkOutcome waited;
  std::thread blocked([&] {
    runtime.Suspend(2);
    {
      absl::MutexLock lock(&mu);
      mu.Await(absl::Condition(&released));
    }
    // The waker resumed us: we are counted as running already.
    waited = runtime.Park(
        2, "never woken", [](ActorWakeup) {}, absl::Seconds(30));
    runtime.Unregister(2).IgnoreError();
  });
  std::thread sleeper([&] {
    // Suspended actor 2 cannot stop the clock.
    EXPECT_TRUE(Sleep(runtime, engine, 1, Microseconds(7)).status.ok());
    EXPECT_EQ(runtime.Now(), Microseconds(7));
    // Nothing left to simulate, but 2 is suspended: no deadlock, only a
    // wait for it (well past the grace period). The waker resumes 2 before
    // it lets it go, as thread_binding.h asks.
    std::thread waker;
    ParkOutcome outcome = runtime.Park(
        1, "waits for 2",
        [&](ActorWakeup wake) {
          waker = std::thread([&, wake] {
            absl::SleepFor(absl::Milliseconds(100));
            runtime.Resume(2);
            {
              absl::MutexLock lock(&mu);
              released = true;
            }
            wake();
          });
        },
        absl::Seconds(30));
    EXPECT_EQ(outcome.reason, WakeReason::kCompleted);
    waker.join();
    runtime.Unregister(1).IgnoreError();
  });
  sleeper.join();
  blocked.join();
  // Once 2 parked on something that never happens, with nobody suspended,
  // that was a deadlock.
  EXPECT_EQ(waited.reason, WakeReason::kDeadlock);
}

TEST(ActorRuntimeTest, WallTimeoutNamesTheRunningActor) {
  Engine engine;
  ActorRuntime runtime(engine);
  ASSERT_TRUE(runtime.Register(1, "busy thread").ok());
  ASSERT_TRUE(runtime.Register(2, "sleeper").ok());
  ParkOutcome outcome;
  std::thread sleeper([&] {
    outcome = runtime.Park(
        2, "sleep",
        [&engine](ActorWakeup wake) {
          engine.ScheduleAfter(Microseconds(1), 2, [wake] { wake(); })
              .IgnoreError();
        },
        absl::Milliseconds(50));
  });
  sleeper.join();  // Actor 1 never parks, so time cannot advance.
  EXPECT_EQ(outcome.reason, WakeReason::kWallTimeout);
  EXPECT_EQ(outcome.status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(outcome.status.message().find("busy thread"), std::string::npos)
      << outcome.status;
  // The sleeper runs again and can park again once 1 is out of the way.
  EXPECT_TRUE(runtime.Unregister(1).ok());
  EXPECT_TRUE(Sleep(runtime, engine, 2, Microseconds(1)).status.ok());
  EXPECT_TRUE(runtime.Unregister(2).ok());
}

TEST(ActorRuntimeTest, WallTimeoutWhileDrivingAnEndlessSimulation) {
  Engine engine;
  ActorRuntime runtime(engine);
  ASSERT_TRUE(runtime.Register(1, "one").ok());
  // Events that go on forever and never wake the actor.
  std::function<void()> tick = [&] {
    engine.ScheduleAfter(Nanoseconds(1), 99, [&] { tick(); }).IgnoreError();
  };
  ParkOutcome outcome = runtime.Park(
      1, "endless", [&](ActorWakeup) { tick(); }, absl::Milliseconds(50));
  EXPECT_EQ(outcome.reason, WakeReason::kWallTimeout);
  EXPECT_GT(runtime.Now(), 0);
  // Nobody waits any more, so unregistering does not simulate on.
  EXPECT_TRUE(runtime.Unregister(1).ok());
}

TEST(ActorRuntimeTest, WithEngineReadsQuietState) {
  Engine engine;
  ActorRuntime runtime(engine);
  ASSERT_TRUE(runtime.Register(1, "one").ok());
  Sleep(runtime, engine, 1, Nanoseconds(3));
  SimTime seen = -1;
  runtime.WithEngine([&] { seen = engine.now(); });
  EXPECT_EQ(seen, Nanoseconds(3));
  EXPECT_TRUE(runtime.Unregister(1).ok());
}

}  // namespace
}  // namespace simulator
