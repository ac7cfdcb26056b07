// Replays a collective Schedule on a timing-only simulated platform without
// a host thread per rank: every rank is a state machine that runs its
// program as ExecuteSchedule (distribute/collective/executor.h) runs it over
// the simulated transport (simulator/sim_transport.h), and one thread drives
// them all from the simulation's driving thread.
//
// The replay makes the same network calls in the same order at the same
// simulated times as the threaded execution, so its times and traces are
// identical (collective_sweep_test compares them): ranks run in the order
// the actor runtime releases their threads (device index), each until it
// waits for a message that has not arrived; its sends and receives are
// posted after it stops, in program order, and matched by (sender,
// receiver, tag); a matched pair starts a transfer over the route between
// the two devices at once; a rank whose message completes runs again at the
// completion's time, after every event of that time. Reductions and copies
// take no simulated time, as on timing-only devices.
//
// When the ranks fall into a few classes of equivalent ranks on a symmetric
// network (symmetric_replay.h), only one rank of each class is simulated,
// on a network of one link per class of equivalent links: the same times to
// floating-point rounding (collective_sweep_test checks them against the
// full replay): the simulation grows with the classes instead of the ranks
// (finding them still reads every rank's program and routes every pair of
// ranks that exchange messages once). Only on an idle platform (nothing in
// flight, which the class network could not share links with) without a
// trace or faults, whose links would have to show every flow; that
// smaller simulation runs apart from the platform's, so the platform's
// clock, event count, device busy time and link traffic stay as they were.
//
// Example:
//   ScheduleReplayResult r = *ReplaySchedule(platform, device_indices,
//                                            schedule, /*element_size=*/4);
//   // r.elapsed: from the start to the last rank's end
#ifndef TOOLS_DISTSIM_SCHEDULE_REPLAY_H_
#define TOOLS_DISTSIM_SCHEDULE_REPLAY_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "distribute/collective/schedule.h"
#include "simulator/sim_platform.h"
#include "simulator/time.h"

namespace distsim {

struct ScheduleReplayResult {
  // From the start (the platform's time when called) to the end of the
  // last rank's program.
  simulator::SimTime elapsed = 0;
  // The classes of equivalent ranks simulated, a rank each; 0 when every
  // rank was simulated on the platform.
  int64_t rank_classes = 0;
  // With rank classes: the events of that smaller simulation (the
  // platform's own count, clock and statistics stay as they were).
  int64_t class_events = 0;
};

struct ScheduleReplayOptions {
  // Simulate a rank per class of equivalent ranks where the schedule and
  // the network allow it (see above); false: every rank.
  bool use_symmetry = true;
};

// Replays `schedule` with rank r on topology device `devices[r]` of
// `platform` (timing-only; nothing else may use the platform meanwhile).
// Message sizes are element counts times `element_size`. INVALID_ARGUMENT
// when the devices do not match the schedule's group or a device is listed
// twice; DEADLINE_EXCEEDED when the ranks wait for messages that are never
// sent (not for a schedule the builders made); the errors of routing and
// of the network (a failed device or link).
absl::StatusOr<ScheduleReplayResult> ReplaySchedule(
    simulator::SimPlatform& platform, const std::vector<int>& devices,
    const distribute::collective::Schedule& schedule, int64_t element_size,
    ScheduleReplayOptions options = {});

}  // namespace distsim

#endif  // TOOLS_DISTSIM_SCHEDULE_REPLAY_H_
