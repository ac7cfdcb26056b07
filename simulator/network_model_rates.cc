// The max-min rate solver of NetworkModel: incremental progressive filling.
// See network_model.h for the model and Recompute below for the algorithm.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "simulator/engine.h"
#include "simulator/network_model.h"
#include "simulator/time.h"
#include "simulator/trace.h"

namespace simulator {
namespace {

// Drain times beyond this (about 46 days) are treated as "not before the
// next change": only reachable with absurdly small shares.
constexpr double kMaxDrainPicoseconds = 4e18;

constexpr double kNoBound = std::numeric_limits<double>::infinity();

}  // namespace

double NetworkModel::UpperBound(const Flow& flow) const {
  double bound = kNoBound;
  for (const LinkId l : flow.route) {
    bound = std::min(bound, Capacity(links_[static_cast<size_t>(l)]));
  }
  return bound;
}

bool NetworkModel::IsSlack(const Link& link) const {
  if (!options_.incremental) return false;
  double demand = 0;
  for (const LinkFlow& f : link.flows) {
    demand += f.weight * flows_[f.slot].upper_bound;
  }
  return demand <= Capacity(link);
}

double NetworkModel::LowerBound(const Flow& flow) const {
  double bound = flow.upper_bound;
  for (const LinkId l : flow.route) {
    const Link& link = links_[static_cast<size_t>(l)];
    if (!IsSlack(link)) {
      bound =
          std::min(bound, Capacity(link) / static_cast<double>(link.weight));
    }
  }
  return bound;
}

void NetworkModel::Freeze(Flow& flow, double rate) {
  flow.frozen = true;
  flow.new_rate = rate;
  for (size_t i = 0; i < flow.route.size(); ++i) {
    Link& link = links_[static_cast<size_t>(flow.route[i])];
    if (link.region != epoch_) continue;
    const uint32_t weight = WeightAt(flow, i);
    link.remaining = std::max(0.0, link.remaining - weight * rate);
    link.unfrozen -= weight;
  }
}

// Max-min fair rates by progressive filling, recomputed incrementally.
//
// Every flow is capped by its upper bound (its slowest link), so a "slack"
// link, whose flows' upper bounds sum to no more than its capacity, can never
// limit anyone and is left out. In progressive filling, flows frozen at a
// level below L are unaffected by a change that only touches the problem at
// level L or above: removing a flow of rate r (L = r); adding a flow f
// (L = min(f's upper bound, capacity / flows over f's non-slack links), a
// lower bound on f's rate); changing a link's capacity (L = min(new capacity
// / flows, the lowest rate on it)). So flows with rates below the smallest
// such L keep their rates; the others that are connected to the change
// through non-slack links are refilled, with the fixed flows' rates taken
// off the links' capacities. A change on links that are slack before and
// after it (a flow that was never limited by sharing leaves) affects no one
// else and refills nothing. The result is the same allocation as a full
// progressive filling (NetworkModelOptions::incremental = false), up to
// rounding; network_model_test checks both against each other.
void NetworkModel::Recompute() {
  recompute_scheduled_ = false;
  const SimTime now = engine_.now();
  ++epoch_;
  double level = pending_level_;
  pending_level_ = kNoBound;
  for (const LinkId l : dirty_links_) {
    Link& link = links_[static_cast<size_t>(l)];
    if (!link.capacity_changed) continue;
    if (!link.flows.empty()) {
      level =
          std::min(level, Capacity(link) / static_cast<double>(link.weight));
    }
  }
  for (const auto& [slot, id] : new_flows_) {
    const Flow& flow = flows_[slot];
    if (flow.active && flow.id == id) level = std::min(level, LowerBound(flow));
  }
  // Conservative by a hair, against rounding in earlier fillings.
  const double threshold = level * (1 - 1e-9);

  // The refilled region: new flows and flows at or above the threshold on
  // changed links, closed over non-slack links.
  region_flows_.clear();
  region_links_.clear();
  stack_.clear();
  auto add_flow = [&](uint32_t slot) {
    Flow& flow = flows_[slot];
    if (flow.visit == epoch_) return;
    flow.visit = epoch_;
    region_flows_.push_back(slot);
    stack_.push_back(slot);
  };
  for (const auto& [slot, id] : new_flows_) {
    const Flow& flow = flows_[slot];
    if (flow.active && flow.id == id) add_flow(slot);
  }
  new_flows_.clear();
  for (const LinkId l : dirty_links_) {
    Link& link = links_[static_cast<size_t>(l)];
    link.dirty = false;
    // A link that is slack, and was before, limits nobody: a flow leaving or
    // joining it changes no one else's rate through it. A new capacity
    // changes its flows' upper bounds, so it always passes the change on.
    const bool passes_on =
        link.capacity_changed || link.was_binding || !IsSlack(link);
    link.capacity_changed = false;
    link.was_binding = false;
    if (!passes_on) continue;
    for (const LinkFlow& f : link.flows) {
      if (flows_[f.slot].rate >= threshold) add_flow(f.slot);
    }
  }
  if (!options_.incremental) {
    for (const auto& [id, slot] : flow_slot_) add_flow(slot);
    // Hash-map order is arbitrary: refill in flow-id order.
    std::sort(
        region_flows_.begin(), region_flows_.end(),
        [this](uint32_t a, uint32_t b) { return flows_[a].id < flows_[b].id; });
  }
  while (!stack_.empty()) {
    const uint32_t slot = stack_.back();
    stack_.pop_back();
    for (const LinkId l : flows_[slot].route) {
      Link& link = links_[static_cast<size_t>(l)];
      if (link.visit == epoch_) continue;
      link.visit = epoch_;
      if (IsSlack(link)) continue;
      link.region = epoch_;
      region_links_.push_back(l);
      for (const LinkFlow& f : link.flows) {
        if (flows_[f.slot].rate >= threshold) add_flow(f.slot);
      }
    }
  }

  // Progressive filling over the region. Caps (upper bounds) sit in one
  // min-heap, non-slack links in another, keyed by fair share (remaining /
  // unfrozen). Shares only grow as flows freeze, so heap keys are refreshed
  // lazily when they surface. Each step fixes the smallest cap or share
  // (ties: caps first, then lower flow id / link id).
  auto later = [](const Candidate& a, const Candidate& b) {
    if (a.share != b.share) return a.share > b.share;
    return a.id > b.id;
  };
  heap_.clear();
  caps_.clear();
  for (const LinkId l : region_links_) {
    Link& link = links_[static_cast<size_t>(l)];
    link.remaining = Capacity(link);
    link.unfrozen = 0;
    for (const LinkFlow& f : link.flows) {
      const Flow& flow = flows_[f.slot];
      if (flow.visit == epoch_) {
        link.unfrozen += f.weight;
      } else {
        link.remaining -= f.weight * flow.rate;
      }
    }
    link.remaining = std::max(0.0, link.remaining);
    if (link.unfrozen > 0) {
      heap_.push_back({link.remaining / static_cast<double>(link.unfrozen),
                       static_cast<uint64_t>(l)});
    }
  }
  for (const uint32_t slot : region_flows_) {
    Flow& flow = flows_[slot];
    flow.frozen = false;
    caps_.push_back({flow.upper_bound, flow.id, slot});
  }
  auto larger_cap = [](const Cap& a, const Cap& b) {
    if (a.cap != b.cap) return a.cap > b.cap;
    return a.flow > b.flow;
  };
  std::make_heap(caps_.begin(), caps_.end(), larger_cap);
  std::make_heap(heap_.begin(), heap_.end(), later);
  while (true) {
    while (!caps_.empty() && flows_[caps_.front().slot].frozen) {
      std::pop_heap(caps_.begin(), caps_.end(), larger_cap);
      caps_.pop_back();
    }
    // Bring an up-to-date share to the top of the heap.
    while (!heap_.empty()) {
      const Candidate top = heap_.front();
      const Link& link = links_[top.id];
      if (link.unfrozen > 0) {
        const double share =
            link.remaining / static_cast<double>(link.unfrozen);
        if (share == top.share) break;
        std::pop_heap(heap_.begin(), heap_.end(), later);
        heap_.back().share = share;
        std::push_heap(heap_.begin(), heap_.end(), later);
        continue;
      }
      std::pop_heap(heap_.begin(), heap_.end(), later);
      heap_.pop_back();
    }
    if (caps_.empty() && heap_.empty()) break;
    if (!caps_.empty() &&
        (heap_.empty() || caps_.front().cap <= heap_.front().share)) {
      std::pop_heap(caps_.begin(), caps_.end(), larger_cap);
      const Cap cap = caps_.back();
      caps_.pop_back();
      Freeze(flows_[cap.slot], cap.cap);
      continue;
    }
    std::pop_heap(heap_.begin(), heap_.end(), later);
    const Candidate top = heap_.back();
    heap_.pop_back();
    for (const LinkFlow& f : links_[top.id].flows) {
      Flow& flow = flows_[f.slot];
      if (flow.visit == epoch_ && !flow.frozen) Freeze(flow, top.share);
    }
  }

  // Apply the new rates; reschedule the drains of flows whose rate changed.
  changed_links_.clear();
  for (const uint32_t slot : region_flows_) {
    Flow& flow = flows_[slot];
    if (flow.new_rate == flow.rate && flow.drain_event != 0) continue;
    if (trace_ != nullptr) {
      for (const LinkId l : flow.route) changed_links_.push_back(l);
    }
    flow.remaining -= flow.rate * static_cast<double>(now - flow.last_update) /
                      kPicosecondsPerSecond;
    flow.remaining = std::max(0.0, flow.remaining);
    flow.last_update = now;
    flow.rate = flow.new_rate;
    if (flow.drain_event != 0) engine_.Cancel(flow.drain_event);
    flow.drain_event = 0;
    if (flow.rate <= 0) continue;
    const double drain = flow.remaining * kPicosecondsPerSecond / flow.rate;
    if (!(drain < kMaxDrainPicoseconds)) continue;
    const FlowId id = flow.id;
    absl::StatusOr<EventId> event = engine_.ScheduleAt(
        now + static_cast<SimTime>(std::llround(drain)), kNetworkActorBase + id,
        [this, slot, id] { OnDrained(slot, id); });
    if (event.ok()) flow.drain_event = *event;
  }
  if (trace_ != nullptr) {
    // Close the constant-load intervals of links whose load changed.
    changed_links_.insert(changed_links_.end(), dirty_links_.begin(),
                          dirty_links_.end());
    std::sort(changed_links_.begin(), changed_links_.end());
    changed_links_.erase(
        std::unique(changed_links_.begin(), changed_links_.end()),
        changed_links_.end());
    for (const LinkId l : changed_links_) {
      Link& link = links_[static_cast<size_t>(l)];
      double rate_sum = 0;
      for (const LinkFlow& f : link.flows) {
        rate_sum += f.weight * flows_[f.slot].rate;
      }
      const int64_t count = link.weight;
      if (rate_sum == link.rate_sum && count == link.segment_flows) continue;
      CloseSegment(link, now);
      link.rate_sum = rate_sum;
      link.segment_flows = count;
    }
  }
  dirty_links_.clear();
}

}  // namespace simulator
