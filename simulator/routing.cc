#include "simulator/routing.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"

namespace simulator {
namespace {

constexpr int64_t kUnreachable = std::numeric_limits<int64_t>::max();
// Message size whose transfer time weighs links against each other.
constexpr double kReferenceBytes = 1024.0 * 1024.0;
// Bounds on what the caches hold (they are cleared when full; routes do not
// depend on what is cached).
constexpr size_t kMaxCachedRoutes = size_t{1} << 20;
constexpr int64_t kMaxCachedCostEntries = int64_t{1} << 24;
// Routes to one destination found by a bounded search before the router
// computes that destination's cost table for all sources at once (a dense
// pattern such as all-to-all then costs one search of the graph per
// destination, a sparse one such as a ring a few hundred nodes per route).
constexpr int kSearchesBeforeTable = 8;

// SplitMix64 finalizer: a fixed, platform-independent mixing function.
uint64_t Mix(uint64_t value) {
  value += 0x9e3779b97f4a7c15ULL;
  value = (value ^ (value >> 30)) * 0xbf58476d1ce4e5b9ULL;
  value = (value ^ (value >> 27)) * 0x94d049bb133111ebULL;
  return value ^ (value >> 31);
}

uint64_t EcmpHash(uint64_t seed, int src, int dst, int at) {
  uint64_t h = Mix(seed);
  h = Mix(h ^ static_cast<uint64_t>(src));
  h = Mix(h ^ (static_cast<uint64_t>(dst) << 1));
  return Mix(h ^ (static_cast<uint64_t>(at) << 2));
}

}  // namespace

int64_t Router::LinkCost(const Link& link) {
  // Capped (a link slowed to nearly nothing at run time) so that sums of
  // costs along any path stay far from overflowing.
  const double transfer_ps = std::min(
      1e15, std::ceil(kReferenceBytes * 1e12 / link.capacity_bytes_per_second));
  return std::max<int64_t>(1,
                           link.latency_ps + static_cast<int64_t>(transfer_ps));
}

namespace {

RoutingDef::Policy ChoosePolicy(const Topology& topology,
                                const RouterOptions& options) {
  const RoutingDef::Policy policy =
      options.policy.value_or(topology.routing_policy());
  return policy == RoutingDef::POLICY_UNSPECIFIED ? RoutingDef::SHORTEST_PATH
                                                  : policy;
}

}  // namespace

Router::Router(const Topology& topology, RouterOptions options)
    : topology_(topology),
      policy_(ChoosePolicy(topology, options)),
      ecmp_seed_(options.ecmp_seed.value_or(topology.ecmp_seed())) {
  link_costs_.reserve(static_cast<size_t>(topology.num_links()));
  for (const Link& link : topology.links()) {
    link_costs_.push_back(LinkCost(link));
  }
}

absl::StatusOr<std::vector<int>> Router::Route(int src_node,
                                               int dst_node) const {
  const int64_t n = topology_.num_nodes();
  if (src_node < 0 || src_node >= n || dst_node < 0 || dst_node >= n) {
    return absl::InvalidArgumentError(absl::StrCat(
        "route from node ", src_node, " to node ", dst_node,
        ": node ids of topology '", topology_.name(), "' are 0 to ", n - 1));
  }
  if (src_node == dst_node) return std::vector<int>();
  absl::MutexLock lock(&mu_);
  auto cached = routes_.find({src_node, dst_node});
  if (cached != routes_.end()) return cached->second;
  ASSIGN_OR_RETURN(std::vector<int> route, ComputeRoute(src_node, dst_node));
  if (routes_.size() >= kMaxCachedRoutes) routes_.clear();
  routes_.emplace(std::make_pair(src_node, dst_node), route);
  return route;
}

absl::StatusOr<std::vector<int>> Router::ComputeRoute(int src, int dst) const {
  switch (policy_) {
    case RoutingDef::DIMENSION_ORDER:
      if (topology_.node(src).coordinates.has_value() &&
          topology_.node(dst).coordinates.has_value()) {
        return DimensionOrderRoute(src, dst);
      }
      return CheapestRoute(src, dst);
    default:  // Walk breaks the ties as the policy says.
      return CheapestRoute(src, dst);
  }
}

const std::vector<int64_t>& Router::CostsTo(int dst) const {
  auto cached = costs_to_.find(dst);
  if (cached != costs_to_.end()) return cached->second;
  const int64_t n = topology_.num_nodes();
  if (static_cast<int64_t>(costs_to_.size() + 1) * n > kMaxCachedCostEntries) {
    costs_to_.clear();
  }
  std::vector<int64_t>& cost = costs_to_[dst];
  cost.assign(static_cast<size_t>(n), kUnreachable);
  // Dijkstra over reversed links. A node other than `dst` that does not
  // forward traffic gets a cost (it may start a route) but is not expanded
  // (no route passes through it).
  using Entry = std::pair<int64_t, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue;
  cost[static_cast<size_t>(dst)] = 0;
  queue.push({0, dst});
  while (!queue.empty()) {
    const auto [d, v] = queue.top();
    queue.pop();
    if (d != cost[static_cast<size_t>(v)]) continue;
    if (v != dst && !topology_.node(v).forwards_traffic) continue;
    for (int id : topology_.in_links(v)) {
      const int u = topology_.link(id).src;
      const int64_t candidate = d + link_costs_[static_cast<size_t>(id)];
      if (candidate < cost[static_cast<size_t>(u)]) {
        cost[static_cast<size_t>(u)] = candidate;
        queue.push({candidate, u});
      }
    }
  }
  return cost;
}

absl::StatusOr<std::vector<int>> Router::SearchRoute(int src, int dst) const {
  const size_t n = static_cast<size_t>(topology_.num_nodes());
  if (search_.size() != n) {
    search_.assign(n, SearchNode{kUnreachable, kUnreachable});
  }
  struct Reset {
    std::vector<SearchNode>& nodes;
    std::vector<int>& touched;
    ~Reset() {
      for (int v : touched) {
        nodes[static_cast<size_t>(v)] = SearchNode{kUnreachable, kUnreachable};
      }
      touched.clear();
    }
  } reset{search_, touched_};
  auto at_node = [&](int v) -> SearchNode& {
    SearchNode& node = search_[static_cast<size_t>(v)];
    if (node.from_src == kUnreachable && node.to_dst == kUnreachable) {
      touched_.push_back(v);
    }
    return node;
  };
  // A route may start at `src`, end at `dst` and pass only through nodes
  // that forward traffic.
  auto passes_from = [&](int v) {
    return v == src || topology_.node(v).forwards_traffic;
  };
  auto passes_into = [&](int v) {
    return v == dst || topology_.node(v).forwards_traffic;
  };

  // Dijkstra from `src` over links and from `dst` over reversed links, the
  // side with the cheaper next node first, until the two frontiers prove the
  // cheapest cost `best` (Goldberg's stopping rule).
  using Entry = std::pair<int64_t, int>;
  using Queue =
      std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>>;
  Queue forward, backward;
  at_node(src).from_src = 0;
  forward.push({0, src});
  at_node(dst).to_dst = 0;
  backward.push({0, dst});
  int64_t best = kUnreachable;
  // The cost of the next node to settle on a side (stale entries dropped).
  auto top = [&](Queue& queue, bool from_src) {
    while (!queue.empty()) {
      const auto [d, v] = queue.top();
      const SearchNode& node = search_[static_cast<size_t>(v)];
      const bool final = from_src ? node.from_src_final : node.to_dst_final;
      if (!final && d == (from_src ? node.from_src : node.to_dst)) return d;
      queue.pop();
    }
    return kUnreachable;
  };
  // `limit`: nodes at this cost or more settle without relaxing their
  // links (what they reach costs more, and is not settled).
  auto settle_forward = [&](int64_t limit) {
    const auto [d, v] = forward.top();
    forward.pop();
    search_[static_cast<size_t>(v)].from_src_final = true;
    if (!passes_from(v) || d >= limit) return;
    for (int id : topology_.out_links(v)) {
      const int w = topology_.link(id).dst;
      const int64_t candidate = d + link_costs_[static_cast<size_t>(id)];
      SearchNode& next = at_node(w);
      if (candidate < next.from_src) {
        next.from_src = candidate;
        forward.push({candidate, w});
      }
      if (next.to_dst != kUnreachable && passes_into(w)) {
        best = std::min(best, candidate + next.to_dst);
      }
    }
  };
  auto settle_backward = [&](int64_t limit) {
    const auto [d, v] = backward.top();
    backward.pop();
    search_[static_cast<size_t>(v)].to_dst_final = true;
    if (!passes_into(v) || d >= limit) return;
    for (int id : topology_.in_links(v)) {
      const int u = topology_.link(id).src;
      const int64_t candidate = d + link_costs_[static_cast<size_t>(id)];
      SearchNode& prev = at_node(u);
      if (candidate < prev.to_dst) {
        prev.to_dst = candidate;
        backward.push({candidate, u});
      }
      if (prev.from_src != kUnreachable && passes_from(u)) {
        best = std::min(best, prev.from_src + candidate);
      }
    }
  };
  while (true) {
    const int64_t f = top(forward, /*from_src=*/true);
    const int64_t b = top(backward, /*from_src=*/false);
    if (f == kUnreachable || b == kUnreachable || f + b >= best) break;
    if (f <= b) {
      settle_forward(kUnreachable);
    } else {
      settle_backward(kUnreachable);
    }
  }
  if (best == kUnreachable) {
    return NoRoute(src, dst);
  }
  // Settle every node within `radius_src` of `src` and within `radius_dst`
  // of `dst`. As radius_src + radius_dst = best - 1, every cheapest route
  // has exactly one link from a node of the first ball to a node of the
  // second (costs grow by at least 1 per link), and each of its nodes has
  // an exact cost on its side.
  const int64_t radius_src = best / 2;
  const int64_t radius_dst = best - 1 - radius_src;
  while (top(forward, true) <= radius_src) settle_forward(radius_src);
  while (top(backward, false) <= radius_dst) settle_backward(radius_dst);
  auto in_src_ball = [&](const SearchNode& node) {
    return node.from_src_final && node.from_src <= radius_src;
  };
  auto in_dst_ball = [&](const SearchNode& node) {
    return node.to_dst_final && node.to_dst <= radius_dst;
  };
  // Mark the nodes of the cheapest routes: the ends of the crossing links,
  // then back from their tails over tight links of the source's ball and on
  // from their heads over tight links of the destination's ball.
  std::vector<int> from_tails, from_heads;
  auto mark_crossing = [&](int u, int w, int id) {
    SearchNode& tail = search_[static_cast<size_t>(u)];
    SearchNode& head = search_[static_cast<size_t>(w)];
    if (!in_src_ball(tail) || !passes_from(u)) return;
    if (!in_dst_ball(head) || !passes_into(w)) return;
    if (tail.from_src + link_costs_[static_cast<size_t>(id)] + head.to_dst !=
        best) {
      return;
    }
    if (!tail.on_route) {
      tail.on_route = true;
      from_tails.push_back(u);
    }
    if (!head.on_route) {
      head.on_route = true;
      from_heads.push_back(w);
    }
  };
  // The crossing links, found from the ball whose nodes have fewer links
  // to scan (a spine of a fat tree has hundreds; the leaf across from it,
  // a few dozen). Either way finds the same set.
  size_t out_scan = 0, in_scan = 0;
  for (const int v : touched_) {
    const SearchNode& node = search_[static_cast<size_t>(v)];
    if (in_src_ball(node)) out_scan += topology_.out_links(v).size();
    if (in_dst_ball(node)) in_scan += topology_.in_links(v).size();
  }
  for (size_t i = 0, end = touched_.size(); i < end; ++i) {
    const int v = touched_[i];
    const SearchNode& node = search_[static_cast<size_t>(v)];
    if (out_scan <= in_scan) {
      if (!in_src_ball(node)) continue;
      for (int id : topology_.out_links(v)) {
        mark_crossing(v, topology_.link(id).dst, id);
      }
    } else {
      if (!in_dst_ball(node)) continue;
      for (int id : topology_.in_links(v)) {
        mark_crossing(topology_.link(id).src, v, id);
      }
    }
  }
  while (!from_tails.empty()) {
    const int v = from_tails.back();
    from_tails.pop_back();
    if (v == src) continue;
    const int64_t cost_v = search_[static_cast<size_t>(v)].from_src;
    for (int id : topology_.in_links(v)) {
      const int u = topology_.link(id).src;
      SearchNode& node = search_[static_cast<size_t>(u)];
      if (node.on_route || !in_src_ball(node) || !passes_from(u)) continue;
      if (node.from_src + link_costs_[static_cast<size_t>(id)] != cost_v) {
        continue;
      }
      node.on_route = true;
      from_tails.push_back(u);
    }
  }
  while (!from_heads.empty()) {
    const int v = from_heads.back();
    from_heads.pop_back();
    if (v == dst) continue;
    const int64_t cost_v = search_[static_cast<size_t>(v)].to_dst;
    for (int id : topology_.out_links(v)) {
      const int w = topology_.link(id).dst;
      SearchNode& node = search_[static_cast<size_t>(w)];
      if (node.on_route || !in_dst_ball(node) || !passes_into(w)) continue;
      if (node.to_dst + link_costs_[static_cast<size_t>(id)] != cost_v) {
        continue;
      }
      node.on_route = true;
      from_heads.push_back(w);
    }
  }
  // Walk from `src`, choosing among the tight links into marked nodes as
  // CheapestRoute chooses among its candidates (the same set). A marked
  // node's cost from `src` is exact on the source's side and best minus its
  // cost to `dst` on the other.
  auto cost_from_src = [&](const SearchNode& node) {
    return in_src_ball(node) ? node.from_src : best - node.to_dst;
  };
  return Walk(src, dst, [&](int at, int id) {
    const SearchNode& next =
        search_[static_cast<size_t>(topology_.link(id).dst)];
    return next.on_route && cost_from_src(search_[static_cast<size_t>(at)]) +
                                    link_costs_[static_cast<size_t>(id)] ==
                                cost_from_src(next);
  });
}

absl::StatusOr<std::vector<int>> Router::CheapestRoute(int src, int dst) const {
  if (!costs_to_.contains(dst)) {
    int& searches = searches_to_[dst];
    if (searches < kSearchesBeforeTable) {
      ++searches;
      return SearchRoute(src, dst);
    }
  }
  const std::vector<int64_t>& cost = CostsTo(dst);
  if (cost[static_cast<size_t>(src)] == kUnreachable) {
    return NoRoute(src, dst);
  }
  return Walk(src, dst, [&](int at, int id) {
    const int next = topology_.link(id).dst;
    const int64_t there = cost[static_cast<size_t>(next)];
    if (there == kUnreachable) return false;
    if (next != dst && !topology_.node(next).forwards_traffic) return false;
    return there + link_costs_[static_cast<size_t>(id)] ==
           cost[static_cast<size_t>(at)];
  });
}

absl::StatusOr<std::vector<int>> Router::Walk(
    int src, int dst,
    absl::FunctionRef<bool(int at, int link)> on_a_cheapest_route) const {
  std::vector<int> route;
  std::vector<int> candidates;
  // D-mod-k: the destination's host (its node id if it has none), divided
  // by the choices met so far, modulo this hop's.
  const Node& target = topology_.node(dst);
  const uint64_t key =
      static_cast<uint64_t>(target.host >= 0 ? target.host : target.id);
  uint64_t divisor = 1;
  int at = src;
  while (at != dst) {
    candidates.clear();
    for (int id : topology_.out_links(at)) {  // in increasing id order
      if (on_a_cheapest_route(at, id)) candidates.push_back(id);
    }
    if (candidates.empty()) {
      return absl::InternalError(
          absl::StrCat("routing from '", topology_.node(src).name, "' to '",
                       topology_.node(dst).name, "' lost its way at '",
                       topology_.node(at).name, "'"));
    }
    size_t pick = 0;  // the lowest id (SHORTEST_PATH and fallbacks)
    if (candidates.size() > 1) {
      if (policy_ == RoutingDef::D_MOD_K) {
        pick = static_cast<size_t>((key / divisor) % candidates.size());
        divisor =
            std::min<uint64_t>(divisor * candidates.size(), uint64_t{1} << 40);
      } else if (policy_ == RoutingDef::ECMP) {
        pick = static_cast<size_t>(EcmpHash(ecmp_seed_, src, dst, at) %
                                   candidates.size());
      }
    }
    const int id = candidates[pick];
    route.push_back(id);
    at = topology_.link(id).dst;
  }
  return route;
}

absl::Status Router::NoRoute(int src, int dst) const {
  return absl::NotFoundError(absl::StrCat(
      "no route from '", topology_.node(src).name, "' to '",
      topology_.node(dst).name, "' in topology '", topology_.name(),
      "': every path passes through a device, and devices do not forward "
      "traffic"));
}

absl::StatusOr<std::vector<int>> Router::DimensionOrderRoute(int src,
                                                             int dst) const {
  if (!topology_.mesh().has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "DIMENSION_ORDER routing needs a mesh, and topology '",
        topology_.name(), "' has none; use SHORTEST_PATH or ECMP"));
  }
  const MeshShape& mesh = *topology_.mesh();
  const MeshCoordinates& from = *topology_.node(src).coordinates;
  const MeshCoordinates& to = *topology_.node(dst).coordinates;
  auto missing = [&](const std::string& what) {
    return absl::FailedPreconditionError(absl::StrCat(
        "DIMENSION_ORDER routing from '", topology_.node(src).name, "' to '",
        topology_.node(dst).name, "' in topology '", topology_.name(),
        "': ", what,
        "; load the topology with routing policy DIMENSION_ORDER so that its "
        "mesh is checked"));
  };
  std::vector<int> route;
  int at[3] = {from.x, from.y, from.z};
  const int target[3] = {to.x, to.y, to.z};
  int router = topology_.MeshRouter(at[0], at[1], at[2]);
  if (router < 0) return missing("a chip has no ICI router");
  if (src != router) {
    const int up = topology_.LinkBetween(src, router);
    if (up < 0) return missing("a core is not linked to its router");
    route.push_back(up);
  }
  for (int axis = 0; axis < 3; ++axis) {
    const int size = mesh.Size(axis);
    int step = target[axis] > at[axis] ? 1 : -1;
    if (mesh.Wraps(axis)) {
      const int forward = ((target[axis] - at[axis]) % size + size) % size;
      step = forward <= size - forward ? 1 : -1;
    }
    while (at[axis] != target[axis]) {
      int next[3] = {at[0], at[1], at[2]};
      next[axis] = (at[axis] + step + size) % size;
      const int next_router = topology_.MeshRouter(next[0], next[1], next[2]);
      const int hop =
          next_router < 0 ? -1 : topology_.LinkBetween(router, next_router);
      if (hop < 0) return missing("two neighbouring chips are not linked");
      route.push_back(hop);
      router = next_router;
      at[axis] = next[axis];
    }
  }
  if (dst != router) {
    const int down = topology_.LinkBetween(router, dst);
    if (down < 0) return missing("a core is not linked to its router");
    route.push_back(down);
  }
  return route;
}

}  // namespace simulator
