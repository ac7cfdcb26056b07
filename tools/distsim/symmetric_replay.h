// Finds the symmetry of a collective schedule on a network, so that a
// replay simulates one rank of each class of equivalent ranks instead of
// every rank (schedule_replay.h uses it).
//
// Ranks are equivalent when their programs are the same step for step
// (kinds, message sizes, dependencies) with peers that are equivalent in
// turn and whose matching steps sit at the same index: the coarsest such
// partition, found by refining the partition until it is stable. A class's
// send step stands for a class of flows (one per member of the class), and
// each such flow class moves between a fixed set of device pairs. Links are
// equivalent when they have the same bandwidth and every flow class crosses
// each of them the same number of times. When, besides, the
// route of every member of a flow class crosses the same multiset of link
// classes with the same total latency, the whole simulation is symmetric:
// equivalent ranks reach each step at the same time, equivalent links carry
// the same load, and the max-min fair rates (unique) are equal within a
// flow class. A network of one link per link class, where a class's flow
// counts `multiplicity` times on each link it crosses (the number of its
// flows on one link of that class), then gives every flow the rate it gets
// in the full network, and the replay of the class representatives gives
// every rank's times: exactly in exact arithmetic, and to rounding in
// floating point (collective_sweep_test compares both on clusters small
// enough to run in full).
//
// Example:
//   std::optional<SymmetryPlan> plan =
//       FindSymmetry(schedule, devices, topology, route);
//   if (plan) ...  // replay plan->quotient on plan->links
#ifndef TOOLS_DISTSIM_SYMMETRIC_REPLAY_H_
#define TOOLS_DISTSIM_SYMMETRIC_REPLAY_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "distribute/collective/schedule.h"
#include "simulator/time.h"
#include "simulator/topology.h"

namespace distsim {

// One link standing for a class of equivalent links.
struct QuotientLink {
  double capacity = 0;  // bytes/s of each link of the class
  int64_t members = 0;  // links in the class (for diagnostics and tests)
};

// One flow standing for a class of equivalent flows.
struct QuotientFlow {
  std::vector<int> links;             // QuotientLink indices, each once
  std::vector<int64_t> multiplicity;  // flows of the class on one such link
  simulator::SimTime latency = 0;     // of each member's route
};

struct SymmetryPlan {
  std::vector<int> rank_class;       // rank -> class (diagnostics, tests)
  std::vector<int> representatives;  // class -> its rank of lowest device
  // A rank per class: the representative's program, with peers named by
  // class and each message's tag the sender's step index (so that a send
  // and its receive carry the same key in the quotient).
  distribute::collective::Schedule quotient;
  std::vector<QuotientLink> links;
  std::vector<QuotientFlow> flows;
  // flow_of[c][i]: the QuotientFlow of class c's send step i (-1 for other
  // steps).
  std::vector<std::vector<int32_t>> flow_of;
};

using RouteFunction =
    absl::FunctionRef<absl::StatusOr<std::vector<int>>(int src, int dst)>;

// The symmetry of `schedule` with rank r on topology device `devices[r]`,
// routes from `route` (device to device, as link ids of `topology`).
// nullopt when the classes do not pass the checks above (the full replay
// then runs every rank), or when the schedule is malformed (a message
// without its match, a peer out of range, a route that fails: the full
// replay reports those), and when the classes would be more than half the
// ranks (too little to save).
std::optional<SymmetryPlan> FindSymmetry(
    const distribute::collective::Schedule& schedule,
    const std::vector<int>& devices, const simulator::Topology& topology,
    RouteFunction route);

}  // namespace distsim

#endif  // TOOLS_DISTSIM_SYMMETRIC_REPLAY_H_
