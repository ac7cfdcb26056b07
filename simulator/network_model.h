// Flow-level network model: max-min fair sharing of directed links.
//
// A network is a set of directed links, each with a bandwidth (bytes per
// second) and a latency; a full-duplex cable is two links. A flow sends a
// byte count along a route (an ordered list of link ids) from a start time.
// While flows send, every link's bandwidth is shared max-min fairly
// (progressive filling) among the flows crossing it. Rates are recomputed
// once per simulated instant in which a flow starts or ends or a link
// changes, and only for the flows that the change can affect (connected to it
// through links that can be a bottleneck, and not slower than the change;
// see network_model_rates.cc), so cost grows with the number of events, not
// bytes, nor the size of the network. When a flow's last byte has been sent its
// bandwidth is released, and it completes after the sum of its links'
// latencies more (data starts arriving one route latency after sending
// starts). Drain times are rounded to the nearest picosecond.
//
//   Engine engine;
//   NetworkModel net(engine);
//   LinkId up = net.AddLink({"gpu0->switch", 100e9, Nanoseconds(500)}).value();
//   LinkId down = net.AddLink({"switch->gpu1", 50e9,
//   Nanoseconds(500)}).value(); net.StartFlow({{up, down}, /*bytes=*/1 << 20,
//   engine.now(), "grad"},
//                 [](const FlowResult& r) { /* r.status, r.end_time */ })
//       .value();
//   engine.Run();   // completes at 1us + 2^20 B / 50e9 B/s
//
// Faults: CutLink fails the flows sending over the link (UNAVAILABLE naming
// it; FlowResult::bytes_sent says how far they got) and makes new flows on
// it fail;
// SetLinkSlowdown(l, k) divides its bandwidth by k. With a FaultInjector the
// model owns the links by name, counts one operation per link per started
// flow, and applies link faults from the script. Single-threaded: call it
// from the engine's thread (see actor_runtime.h).
#ifndef SIMULATOR_NETWORK_MODEL_H_
#define SIMULATOR_NETWORK_MODEL_H_

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/engine.h"
#include "simulator/faults.h"
#include "simulator/time.h"
#include "simulator/trace.h"

namespace simulator {

using LinkId = int32_t;
using FlowId = uint64_t;

// Engine actors of the network: flow f's events use kNetworkActorBase + f;
// rate recomputation runs after every other event at the same time.
inline constexpr ActorId kNetworkActorBase =
    kFirstReservedActor + (uint64_t{1} << 40);
inline constexpr ActorId kNetworkRecomputeActor = ~uint64_t{0};

struct LinkSpec {
  std::string name;      // unique, e.g. "node0/gpu3->switch"
  double bandwidth = 0;  // bytes per second, finite and > 0
  SimTime latency = 0;   // picoseconds, >= 0
};

struct FlowSpec {
  std::vector<LinkId> route;  // each link at most once; empty = local copy
  int64_t bytes = 0;          // >= 0
  SimTime start_time = 0;     // >= now
  std::string label;          // for errors and the trace
  // Empty, or one entry per route link, each in [1, 2^31): the flow stands
  // for multiplicity[i] flows on route[i], all at its rate (a class of
  // equivalent flows simulated once, on links that each stand for a class
  // of equivalent links; see tools/distsim/symmetric_replay.h). Link
  // accounting counts every flow it stands for. Empty: 1 on every link.
  std::vector<int64_t> multiplicity;
  // Added to the route's latency (>= 0).
  SimTime extra_latency = 0;
};

struct FlowResult {
  FlowId id = 0;
  absl::Status status;  // OK, or UNAVAILABLE naming the cut link
  SimTime start_time = 0;
  SimTime end_time = 0;    // delivery (or failure) time
  int64_t bytes = 0;       // requested
  int64_t bytes_sent = 0;  // == bytes on success
};

using FlowCallback = absl::AnyInvocable<void(const FlowResult&)>;

struct NetworkModelOptions {
  // Recompute rates only for the flows a change can affect (see
  // network_model_rates.cc). false refills every sending flow on every change:
  // slow, and meant as the reference that the incremental solver is tested
  // against.
  bool incremental = true;
};

class NetworkModel final : public FaultListener {
 public:
  // `trace` (may be null) receives one track per link ("network", link name)
  // with a "transfer" event for every interval of constant load. `faults`
  // (may be null) supplies link faults; the model registers itself.
  explicit NetworkModel(Engine& engine, Trace* trace = nullptr,
                        FaultInjector* faults = nullptr,
                        NetworkModelOptions options = {});
  NetworkModel(const NetworkModel&) = delete;
  NetworkModel& operator=(const NetworkModel&) = delete;

  // Adds a directed link. INVALID_ARGUMENT for an empty name, a bandwidth
  // that is not finite and > 0, or a negative latency; ALREADY_EXISTS if the
  // name is taken.
  absl::StatusOr<LinkId> AddLink(LinkSpec spec);

  // The link called `name`; NOT_FOUND if none.
  absl::StatusOr<LinkId> FindLink(absl::string_view name) const;
  int64_t num_links() const { return static_cast<int64_t>(links_.size()); }

  // Starts a flow at spec.start_time (now or later). `done` is called once,
  // from an engine event, when the flow is delivered or fails. Returns
  // INVALID_ARGUMENT for a bad route (unknown or repeated link), negative
  // bytes, a start before now or an empty callback; returns UNAVAILABLE if
  // the flow starts now and crosses a cut link. When StartFlow returns an
  // error, `done` is never called. A zero-byte flow or an empty route uses
  // no bandwidth and completes after the route latency.
  absl::StatusOr<FlowId> StartFlow(FlowSpec spec, FlowCallback done);

  // The current rate (bytes/s) of a flow that is sending. NOT_FOUND if the
  // flow is not sending (not started, drained, failed). Rates are settled
  // at the end of each simulated instant, so a flow started at now() reads 0
  // until the engine runs the instant's recomputation.
  absl::StatusOr<double> FlowRate(FlowId flow) const;

  // Number of flows currently sending.
  int64_t active_flows() const {
    return static_cast<int64_t>(flow_slot_.size());
  }

  // Cuts `link`: flows sending over it fail now, flows that would start on
  // it fail. Idempotent. INVALID_ARGUMENT for an unknown link.
  absl::Status CutLink(LinkId link);
  // OK while `link` is not cut; UNAVAILABLE naming it once it is.
  // INVALID_ARGUMENT for an unknown link.
  absl::Status LinkStatus(LinkId link) const;
  // Undoes CutLink for flows started from now on.
  absl::Status RestoreLink(LinkId link);
  // Divides the link's bandwidth by `factor` (finite, > 0; 1 restores it)
  // from now on. INVALID_ARGUMENT for an unknown link or a bad factor.
  absl::Status SetLinkSlowdown(LinkId link, double factor);

  // Appends one LinkUsage per link (in id order), for the interval
  // [0, summary.end_time].
  void AddToSummary(Summary& summary) const;

  // FaultListener: owns links by name.
  bool OwnsTarget(FaultTargetKind kind, absl::string_view name) const override;
  void ApplyFault(const Fault& fault) override;

 private:
  // Fields used by every rate recomputation come first, to share cache lines.
  // A flow sending over a link, standing for `weight` flows there.
  struct LinkFlow {
    uint32_t slot;
    uint32_t weight;
  };
  struct Link {
    std::vector<LinkFlow> flows;  // the flows sending over it
    int64_t weight = 0;           // the sum of their weights
    double capacity = 0;          // bandwidth / slowdown
    uint64_t visit = 0;
    uint64_t region = 0;  // == epoch_ if refilled in this recomputation
    double remaining = 0;
    int64_t unfrozen = 0;
    bool dirty = false;
    bool capacity_changed = false;
    bool was_binding = false;  // not slack before a flow left it
    bool cut = false;
    double slowdown = 1.0;
    LinkSpec spec;
    // Accounting.
    int64_t flow_count = 0;
    int64_t bytes = 0;
    SimTime busy = 0;        // closed intervals with flows sending
    SimTime busy_since = 0;  // start of the current one, if any
    // Trace intervals of constant load (kept only with a trace).
    double rate_sum = 0;  // bytes/s
    int64_t segment_flows = 0;
    SimTime segment_start = 0;
    Trace::TrackId track = -1;
  };
  struct Flow {
    FlowId id = 0;
    uint64_t visit = 0;
    double rate = 0;         // bytes/s
    double new_rate = 0;     // recomputation scratch
    double upper_bound = 0;  // the capacity of its slowest link
    bool frozen = false;     // recomputation scratch
    bool active = false;
    absl::InlinedVector<LinkId, 6> route;
    // position[i]: this flow's index in links_[route[i]].flows, whose
    // LinkFlow holds the flows it stands for there.
    absl::InlinedVector<uint32_t, 6> position;
    int64_t bytes = 0;
    double remaining = 0;  // bytes not yet sent as of last_update
    SimTime last_update = 0;
    SimTime start_time = 0;
    SimTime latency = 0;
    EventId drain_event = 0;
    FlowCallback done;
    std::string label;
  };

  absl::Status ValidateFlowSpec(const FlowSpec& spec);
  // The flows `flow` stands for on its i-th link.
  uint32_t WeightAt(const Flow& flow, size_t i) const {
    return links_[static_cast<size_t>(flow.route[i])]
        .flows[flow.position[i]]
        .weight;
  }
  absl::Status CheckLink(LinkId link, absl::string_view what) const;
  // Starts sending now. On error `done` is left untouched.
  absl::Status BeginFlow(FlowId id, FlowSpec& spec, FlowCallback& done);
  // Takes the flow off its links (marking them dirty) and frees its slot;
  // credits `sent` bytes to each link.
  void RemoveFlow(uint32_t slot, int64_t sent);
  void OnDrained(uint32_t slot, FlowId id);
  void FailFlow(uint32_t slot, const absl::Status& status);
  void Deliver(FlowCallback done, FlowResult result, SimTime at);
  // Max-min machinery (see Recompute).
  double UpperBound(const Flow& flow) const;
  double LowerBound(const Flow& flow) const;
  bool IsSlack(const Link& link) const;
  void Freeze(Flow& flow, double rate);
  void MarkDirty(LinkId link);
  void ScheduleRecompute();
  void Recompute();
  void CloseSegment(Link& link, SimTime now);
  static double Capacity(const Link& link) { return link.capacity; }

  Engine& engine_;
  Trace* const trace_;
  FaultInjector* const faults_;
  const NetworkModelOptions options_;
  std::vector<Link> links_;
  absl::flat_hash_map<std::string, LinkId> link_ids_;
  std::vector<Flow> flows_;  // slab; inactive slots are in free_flows_
  std::vector<uint32_t> free_flows_;
  absl::flat_hash_map<FlowId, uint32_t> flow_slot_;  // sending flows
  FlowId next_flow_id_ = 0;
  std::vector<LinkId> dirty_links_;
  std::vector<std::pair<uint32_t, FlowId>> new_flows_;  // not yet rated
  // Flows with rates below this keep them in the next recomputation.
  double pending_level_ = std::numeric_limits<double>::infinity();
  bool recompute_scheduled_ = false;
  uint64_t epoch_ = 0;
  // Reused by Recompute.
  struct Candidate {  // a shared link's fair share
    double share;
    uint64_t id;  // LinkId
  };
  struct Cap {  // a flow's smallest single-flow link
    double cap;
    FlowId flow;
    uint32_t slot;
  };
  std::vector<Candidate> heap_;
  std::vector<Cap> caps_;
  std::vector<LinkId> region_links_;
  std::vector<uint32_t> region_flows_;
  std::vector<uint32_t> stack_;
  std::vector<LinkId> changed_links_;
};

}  // namespace simulator

#endif  // SIMULATOR_NETWORK_MODEL_H_
