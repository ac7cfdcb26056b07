// The discrete-event engine: a clock and a queue of timed callbacks.
//
// Events are ordered by (time, actor, sequence). `actor` is an id chosen by
// the program (a device, a flow, a model); the sequence number is assigned by
// the engine, increasing with every ScheduleAt call. Two events at the same
// time therefore run in actor-id order, and two events of one actor at the
// same time run in the order that actor scheduled them: exactly the order of
// a per-actor sequence counter, never the host's thread timing. The engine is
// single-threaded: only one thread may call it at a time (the ActorRuntime,
// actor_runtime.h, serialises the host threads of simulated replicas onto
// it). There is no
// global engine; any number may coexist.
//
//   Engine engine;
//   engine.ScheduleAt(Microseconds(2), /*actor=*/7, [&] { ... }).value();
//   engine.Run();          // runs every event; engine.now() == 2us
//
// Actor ids at or above kFirstReservedActor belong to the simulator's own
// models (faults, compute, network); see their headers.
#ifndef SIMULATOR_ENGINE_H_
#define SIMULATOR_ENGINE_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "simulator/time.h"

namespace simulator {

// The program-derived part of an event's ordering key.
using ActorId = uint64_t;

// Actor ids from here up are used by the simulator's models for their own
// events, so that at equal times program events run first.
inline constexpr ActorId kFirstReservedActor = uint64_t{1} << 63;

// Names a scheduled event, for Cancel. Never 0.
using EventId = uint64_t;

class Engine {
 public:
  using Callback = absl::AnyInvocable<void()>;

  Engine() = default;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The current simulated time: the time of the event running now, or of the
  // last one run (0 before any).
  SimTime now() const { return now_; }

  // Schedules `callback` to run at `time` on behalf of `actor`. Returns
  // INVALID_ARGUMENT if `time` is before now() or `callback` is empty.
  // Callbacks may schedule and cancel events, including at now().
  absl::StatusOr<EventId> ScheduleAt(SimTime time, ActorId actor,
                                     Callback callback);

  // ScheduleAt(now() + delay, ...); INVALID_ARGUMENT if `delay` is negative
  // or now() + delay overflows.
  absl::StatusOr<EventId> ScheduleAfter(SimTime delay, ActorId actor,
                                        Callback callback);

  // Cancels a pending event: its callback is destroyed without running.
  // Returns false (and does nothing) if the event already ran or was
  // cancelled, or if `id` was never issued.
  bool Cancel(EventId id);

  // Runs the next event, advancing now() to its time. Returns false if no
  // event is pending.
  bool Step();

  // Runs every event with time <= `limit`, then advances now() to `limit`
  // (if it is later). Returns the number of events run.
  int64_t RunUntil(SimTime limit);

  // Runs events until none is pending. Returns the number of events run.
  int64_t Run();

  // The time of the next pending event, or nullopt if none is pending.
  std::optional<SimTime> NextEventTime();

  // Number of scheduled events that have neither run nor been cancelled.
  int64_t pending() const { return live_events_; }

  // Number of events run since construction.
  int64_t events_processed() const { return events_processed_; }

 private:
  // A heap entry: small and trivially copyable; the callback lives in slots_.
  struct Entry {
    SimTime time;
    ActorId actor;
    uint64_t sequence;
    uint32_t slot;
    uint32_t generation;
  };
  struct Slot {
    Callback callback;
    uint32_t generation = 0;
    bool live = false;
  };

  static bool Later(const Entry& a, const Entry& b);
  // Pops cancelled entries off the top of the heap.
  void DropCancelledTop();
  void PushEntry(const Entry& entry);
  void PopEntry();

  SimTime now_ = 0;
  uint64_t next_sequence_ = 0;
  int64_t live_events_ = 0;
  int64_t events_processed_ = 0;
  std::vector<Entry> heap_;  // 4-ary min-heap under Later (engine.cc)
  std::vector<Slot> slots_;
  std::vector<uint32_t> free_slots_;
};

}  // namespace simulator

#endif  // SIMULATOR_ENGINE_H_
