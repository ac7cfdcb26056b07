// Flow-level network model; see network_model.h.
#include "simulator/network_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "devices/status_macros.h"
#include "simulator/engine.h"
#include "simulator/faults.h"
#include "simulator/time.h"
#include "simulator/trace.h"

namespace simulator {

NetworkModel::NetworkModel(Engine& engine, Trace* trace, FaultInjector* faults,
                           NetworkModelOptions options)
    : engine_(engine), trace_(trace), faults_(faults), options_(options) {
  if (faults_ != nullptr) faults_->AddListener(*this);
}

absl::StatusOr<LinkId> NetworkModel::AddLink(LinkSpec spec) {
  if (spec.name.empty()) {
    return absl::InvalidArgumentError("a link needs a non-empty, unique name");
  }
  if (!(std::isfinite(spec.bandwidth) && spec.bandwidth > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("link '", spec.name, "' has bandwidth ", spec.bandwidth,
                     " bytes/s; give a finite bandwidth > 0"));
  }
  if (spec.latency < 0) {
    return absl::InvalidArgumentError(absl::StrCat("link '", spec.name,
                                                   "' has negative latency ",
                                                   FormatTime(spec.latency)));
  }
  if (links_.size() >= static_cast<size_t>(INT32_MAX)) {
    return absl::ResourceExhaustedError("too many links in one network model");
  }
  const LinkId id = static_cast<LinkId>(links_.size());
  if (!link_ids_.try_emplace(spec.name, id).second) {
    return absl::AlreadyExistsError(
        absl::StrCat("a link named '", spec.name,
                     "' exists already; link names are unique"));
  }
  Link link;
  link.capacity = spec.bandwidth;
  if (trace_ != nullptr) link.track = trace_->Track("network", spec.name);
  link.spec = std::move(spec);
  links_.push_back(std::move(link));
  return id;
}

absl::StatusOr<LinkId> NetworkModel::FindLink(absl::string_view name) const {
  auto it = link_ids_.find(name);
  if (it == link_ids_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no link named '", name, "' in this network"));
  }
  return it->second;
}

absl::Status NetworkModel::CheckLink(LinkId link,
                                     absl::string_view what) const {
  if (link < 0 || static_cast<size_t>(link) >= links_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": link id ", link, " does not exist (the network has ",
        links_.size(), " links)"));
  }
  return absl::OkStatus();
}

absl::Status NetworkModel::ValidateFlowSpec(const FlowSpec& spec) {
  const std::vector<LinkId>& route = spec.route;
  if (!spec.multiplicity.empty()) {
    if (spec.multiplicity.size() != route.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "flow '", spec.label, "' gives ", spec.multiplicity.size(),
          " multiplicities for a route of ", route.size(),
          " links; give one per link, or none"));
    }
    for (const int64_t m : spec.multiplicity) {
      if (m < 1 || m >= (int64_t{1} << 31)) {
        return absl::InvalidArgumentError(
            absl::StrCat("flow '", spec.label, "' has multiplicity ", m,
                         "; each must be in [1, 2^31)"));
      }
    }
  }
  if (spec.extra_latency < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("flow '", spec.label, "' has a negative extra latency"));
  }
  ++epoch_;
  for (const LinkId l : route) {
    RETURN_IF_ERROR(CheckLink(l, "flow route"));
    Link& link = links_[static_cast<size_t>(l)];
    if (link.visit == epoch_) {
      return absl::InvalidArgumentError(
          absl::StrCat("flow route crosses link '", link.spec.name,
                       "' twice; a route lists each link at most once"));
    }
    link.visit = epoch_;
  }
  return absl::OkStatus();
}

absl::StatusOr<FlowId> NetworkModel::StartFlow(FlowSpec spec,
                                               FlowCallback done) {
  if (!done) {
    return absl::InvalidArgumentError(
        absl::StrCat("flow '", spec.label, "' has an empty callback"));
  }
  if (spec.bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat("flow '", spec.label,
                                                   "' has a negative size (",
                                                   spec.bytes, " bytes)"));
  }
  if (spec.start_time < engine_.now()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "flow '", spec.label, "' starts at ", FormatTime(spec.start_time),
        ", before the current time ", FormatTime(engine_.now())));
  }
  RETURN_IF_ERROR(ValidateFlowSpec(spec));
  const FlowId id = next_flow_id_++;
  if (spec.start_time == engine_.now()) {
    RETURN_IF_ERROR(BeginFlow(id, spec, done));
    return id;
  }
  const SimTime start = spec.start_time;
  RETURN_IF_ERROR(engine_
                      .ScheduleAt(start, kNetworkActorBase + id,
                                  [this, id, spec = std::move(spec),
                                   done = std::move(done)]() mutable {
                                    absl::Status s = BeginFlow(id, spec, done);
                                    if (!s.ok()) {
                                      FlowResult result;
                                      result.id = id;
                                      result.status = std::move(s);
                                      result.start_time = spec.start_time;
                                      result.end_time = engine_.now();
                                      result.bytes = spec.bytes;
                                      done(result);
                                    }
                                  })
                      .status());
  return id;
}

absl::Status NetworkModel::BeginFlow(FlowId id, FlowSpec& spec,
                                     FlowCallback& done) {
  if (faults_ != nullptr) {
    for (const LinkId l : spec.route) {
      faults_->CountOperation(FaultTargetKind::kLink,
                              links_[static_cast<size_t>(l)].spec.name);
    }
  }
  SimTime latency = spec.extra_latency;
  for (const LinkId l : spec.route) {
    const Link& link = links_[static_cast<size_t>(l)];
    if (link.cut) {
      return absl::UnavailableError(absl::StrCat(
          "link '", link.spec.name, "' is cut; flow '", spec.label, "' of ",
          spec.bytes, " bytes cannot start at ", FormatTime(engine_.now()),
          "; route around the link or restore it"));
    }
    latency += link.spec.latency;
  }
  const SimTime now = engine_.now();
  auto multiplicity = [&spec](size_t i) {
    return spec.multiplicity.empty() ? int64_t{1} : spec.multiplicity[i];
  };
  for (size_t i = 0; i < spec.route.size(); ++i) {
    links_[static_cast<size_t>(spec.route[i])].flow_count += multiplicity(i);
  }
  if (spec.route.empty() || spec.bytes == 0) {
    FlowResult result;
    result.id = id;
    result.start_time = now;
    result.end_time = now + latency;
    result.bytes = spec.bytes;
    result.bytes_sent = spec.bytes;
    Deliver(std::move(done), std::move(result), now + latency);
    return absl::OkStatus();
  }
  uint32_t slot;
  if (!free_flows_.empty()) {
    slot = free_flows_.back();
    free_flows_.pop_back();
  } else {
    slot = static_cast<uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  Flow& flow = flows_[slot];
  flow.id = id;
  flow.active = true;
  flow.route.assign(spec.route.begin(), spec.route.end());
  flow.position.resize(spec.route.size());
  flow.bytes = spec.bytes;
  flow.remaining = static_cast<double>(spec.bytes);
  flow.rate = 0;
  flow.last_update = now;
  flow.start_time = now;
  flow.latency = latency;
  flow.drain_event = 0;
  flow.done = std::move(done);
  flow.label = std::move(spec.label);
  flow.upper_bound = UpperBound(flow);
  new_flows_.emplace_back(slot, id);
  for (size_t i = 0; i < flow.route.size(); ++i) {
    Link& link = links_[static_cast<size_t>(flow.route[i])];
    flow.position[i] = static_cast<uint32_t>(link.flows.size());
    if (link.flows.empty()) link.busy_since = now;
    const uint32_t weight = static_cast<uint32_t>(multiplicity(i));
    link.flows.push_back({slot, weight});
    link.weight += weight;
    MarkDirty(flow.route[i]);
  }
  flow_slot_[id] = slot;
  ScheduleRecompute();
  return absl::OkStatus();
}

void NetworkModel::Deliver(FlowCallback done, FlowResult result, SimTime at) {
  const ActorId actor = kNetworkActorBase + result.id;
  // `at` >= now by construction, so scheduling cannot fail.
  engine_
      .ScheduleAt(at, actor,
                  [done = std::move(done),
                   result = std::move(result)]() mutable { done(result); })
      .IgnoreError();
}

void NetworkModel::MarkDirty(LinkId link) {
  Link& l = links_[static_cast<size_t>(link)];
  if (l.dirty) return;
  l.dirty = true;
  dirty_links_.push_back(link);
}

void NetworkModel::ScheduleRecompute() {
  if (recompute_scheduled_) return;
  recompute_scheduled_ = true;
  engine_
      .ScheduleAt(engine_.now(), kNetworkRecomputeActor,
                  [this] { Recompute(); })
      .IgnoreError();
}

void NetworkModel::RemoveFlow(uint32_t slot, int64_t sent) {
  Flow& flow = flows_[slot];
  // Only links that could limit someone pass the change on; flows slower
  // than this one keep their rates (see Recompute).
  bool binding = false;
  for (const LinkId l : flow.route) {
    Link& link = links_[static_cast<size_t>(l)];
    if (!IsSlack(link)) {
      link.was_binding = true;
      binding = true;
    }
  }
  if (binding && flow.rate > 0) {
    pending_level_ = std::min(pending_level_, flow.rate);
  }
  for (size_t i = 0; i < flow.route.size(); ++i) {
    Link& link = links_[static_cast<size_t>(flow.route[i])];
    const uint32_t position = flow.position[i];
    const uint32_t moved = link.flows.back().slot;
    const uint32_t weight = link.flows[position].weight;
    link.weight -= weight;
    link.flows[position] = link.flows.back();
    link.flows.pop_back();
    if (link.flows.empty()) link.busy += engine_.now() - link.busy_since;
    if (moved != slot) {
      Flow& other = flows_[moved];
      for (size_t j = 0; j < other.route.size(); ++j) {
        if (other.route[j] == flow.route[i]) {
          other.position[j] = position;
          break;
        }
      }
    }
    link.bytes += sent * weight;
    MarkDirty(flow.route[i]);
  }
  if (flow.drain_event != 0) engine_.Cancel(flow.drain_event);
  flow.drain_event = 0;
  flow.active = false;
  flow.done = nullptr;
  flow_slot_.erase(flow.id);
  free_flows_.push_back(slot);
  ScheduleRecompute();
}

void NetworkModel::OnDrained(uint32_t slot, FlowId id) {
  Flow& flow = flows_[slot];
  if (!flow.active || flow.id != id) return;
  flow.drain_event = 0;
  FlowResult result;
  result.id = id;
  result.start_time = flow.start_time;
  result.end_time = engine_.now() + flow.latency;
  result.bytes = flow.bytes;
  result.bytes_sent = flow.bytes;
  FlowCallback done = std::move(flow.done);
  const SimTime latency = flow.latency;
  const SimTime delivery = result.end_time;
  RemoveFlow(slot, flow.bytes);
  if (latency == 0) {
    done(result);  // `flow` may be reused from here on.
  } else {
    Deliver(std::move(done), std::move(result), delivery);
  }
}

void NetworkModel::FailFlow(uint32_t slot, const absl::Status& status) {
  Flow& flow = flows_[slot];
  const SimTime now = engine_.now();
  double remaining =
      flow.remaining - flow.rate * static_cast<double>(now - flow.last_update) /
                           kPicosecondsPerSecond;
  remaining = std::max(0.0, remaining);
  const int64_t sent =
      std::clamp<int64_t>(flow.bytes - std::llround(remaining), 0, flow.bytes);
  FlowResult result;
  result.id = flow.id;
  result.status = status;
  result.start_time = flow.start_time;
  result.end_time = now;
  result.bytes = flow.bytes;
  result.bytes_sent = sent;
  FlowCallback done = std::move(flow.done);
  RemoveFlow(slot, sent);
  Deliver(std::move(done), std::move(result), now);
}

absl::StatusOr<double> NetworkModel::FlowRate(FlowId flow) const {
  auto it = flow_slot_.find(flow);
  if (it == flow_slot_.end()) {
    return absl::NotFoundError(
        absl::StrCat("flow ", flow,
                     " is not sending (not started, drained "
                     "or failed)"));
  }
  return flows_[it->second].rate;
}

absl::Status NetworkModel::LinkStatus(LinkId link) const {
  RETURN_IF_ERROR(CheckLink(link, "LinkStatus"));
  const Link& l = links_[static_cast<size_t>(link)];
  if (!l.cut) return absl::OkStatus();
  return absl::UnavailableError(
      absl::StrCat("link '", l.spec.name, "' is cut"));
}

absl::Status NetworkModel::CutLink(LinkId link) {
  RETURN_IF_ERROR(CheckLink(link, "CutLink"));
  Link& l = links_[static_cast<size_t>(link)];
  if (l.cut) return absl::OkStatus();
  l.cut = true;
  const std::string name = l.spec.name;
  const SimTime now = engine_.now();
  // Fail in flow-id order so the failure events are ordered by program keys.
  std::vector<std::pair<FlowId, uint32_t>> victims;
  for (const LinkFlow& f : l.flows)
    victims.emplace_back(flows_[f.slot].id, f.slot);
  std::sort(victims.begin(), victims.end());
  for (const auto& [id, slot] : victims) {
    FailFlow(slot, absl::UnavailableError(absl::StrCat(
                       "link '", name, "' was cut at ", FormatTime(now),
                       " while flow '", flows_[slot].label, "' (id ", id,
                       ") was sending; the data did not arrive")));
  }
  MarkDirty(link);
  ScheduleRecompute();
  return absl::OkStatus();
}

absl::Status NetworkModel::RestoreLink(LinkId link) {
  RETURN_IF_ERROR(CheckLink(link, "RestoreLink"));
  links_[static_cast<size_t>(link)].cut = false;
  return absl::OkStatus();
}

absl::Status NetworkModel::SetLinkSlowdown(LinkId link, double factor) {
  RETURN_IF_ERROR(CheckLink(link, "SetLinkSlowdown"));
  if (!(std::isfinite(factor) && factor > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "slowdown factor ", factor, " for link '",
        links_[static_cast<size_t>(link)].spec.name,
        "' must be finite and > 0 (2 halves the bandwidth, 1 restores it)"));
  }
  Link& l = links_[static_cast<size_t>(link)];
  // The link's flows get new upper bounds, which can make other links on
  // their routes stop (or start) limiting anyone: those that could limit
  // someone before pass the change on (see Recompute).
  for (const LinkFlow& f : l.flows) {
    for (const LinkId other : flows_[f.slot].route) {
      Link& m = links_[static_cast<size_t>(other)];
      if (!m.was_binding && !IsSlack(m)) {
        m.was_binding = true;
        MarkDirty(other);
      }
    }
  }
  l.slowdown = factor;
  l.capacity = l.spec.bandwidth / factor;
  l.capacity_changed = true;
  // Flows slower than every flow on the link keep their rates.
  for (const LinkFlow& f : l.flows) {
    Flow& flow = flows_[f.slot];
    if (flow.rate > 0) pending_level_ = std::min(pending_level_, flow.rate);
    flow.upper_bound = UpperBound(flow);
  }
  MarkDirty(link);
  ScheduleRecompute();
  return absl::OkStatus();
}

void NetworkModel::CloseSegment(Link& link, SimTime now) {
  if (trace_ != nullptr && link.rate_sum > 0 && now > link.segment_start) {
    const SimTime span = now - link.segment_start;
    const double bytes =
        link.rate_sum * static_cast<double>(span) / kPicosecondsPerSecond;
    trace_
        ->AddComplete(link.track, "transfer", "network", link.segment_start,
                      now,
                      {{"flows", link.segment_flows},
                       {"bytes", static_cast<int64_t>(std::llround(bytes))},
                       {"bytes_per_s",
                        static_cast<int64_t>(std::llround(link.rate_sum))}})
        .IgnoreError();
  }
  link.segment_start = now;
}

void NetworkModel::AddToSummary(Summary& summary) const {
  const double seconds =
      static_cast<double>(summary.end_time) / kPicosecondsPerSecond;
  for (const Link& link : links_) {
    LinkUsage usage;
    usage.name = link.spec.name;
    usage.bandwidth = link.spec.bandwidth;
    usage.flows = link.flow_count;
    usage.bytes = link.bytes;
    usage.busy = link.busy;
    if (!link.flows.empty() && summary.end_time > link.busy_since) {
      usage.busy += summary.end_time - link.busy_since;
    }
    usage.utilisation = seconds > 0 ? static_cast<double>(link.bytes) /
                                          (link.spec.bandwidth * seconds)
                                    : 0.0;
    summary.links.push_back(std::move(usage));
  }
}

bool NetworkModel::OwnsTarget(FaultTargetKind kind,
                              absl::string_view name) const {
  return kind == FaultTargetKind::kLink && link_ids_.contains(name);
}

void NetworkModel::ApplyFault(const Fault& fault) {
  auto it = link_ids_.find(fault.target);
  if (it == link_ids_.end()) return;
  if (fault.type == FaultType::kLinkCut) {
    CutLink(it->second).IgnoreError();
  } else if (fault.type == FaultType::kLinkSlowdown) {
    SetLinkSlowdown(it->second, fault.factor).IgnoreError();
  }
}

}  // namespace simulator
