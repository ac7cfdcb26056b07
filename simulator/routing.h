// Routes between the nodes of a Topology, as lists of directed link ids.
//
// A Router answers "which links does traffic from node A to node B cross?"
// under the topology's routing policy (or one given in RouterOptions):
//   - SHORTEST_PATH: the cheapest path, ties broken towards the lowest link id
//     at every hop;
//   - ECMP: the cheapest path, ties broken by a hash of (source, destination,
//     seed, current node), so one flow always takes one path while flows
//     spread over equal-cost links (e.g. the spines of a fat tree);
//   - D_MOD_K: the cheapest path; where equal-cost links fan out (a leaf's
//     uplinks to the spines), the destination's host index divided by the
//     fan-outs met so far, modulo this one's, picks: destination-mod-k
//     routing (E. Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic
//     for Shift Permutations on Real Life Fat Trees", 2010), what OpenSM's
//     fat-tree routing engine ("ftree") sets up on InfiniBand fat trees, so
//     that shift patterns such as rings over nodes meet no contention;
//   - DIMENSION_ORDER: on a TPU mesh, x first, then y, then z, going the
//     shorter way around a wraparound axis (ties go the + way); pairs not
//     both on the mesh (a host CPU, say) fall back to SHORTEST_PATH.
// The cost of a link is its latency plus the time to carry 1 MiB over it
// (LinkCost), so a hop over a fast link is cheaper than one over a slow link.
// Only switches and NICs are passed through; devices only start or end
// routes. Routes are deterministic and cached; Route is thread-safe.
//
// Example:
//   simulator::Router router(topology);
//   absl::StatusOr<std::vector<int>> route = router.Route(
//       topology.device(0).node, topology.device(1).node);
//   if (!route.ok()) return route.status();
//   for (int link_id : *route) { ... topology.link(link_id) ... }

#ifndef SIMULATOR_ROUTING_H_
#define SIMULATOR_ROUTING_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "simulator/topology.h"

namespace simulator {

struct RouterOptions {
  // Replaces the topology's routing policy.
  std::optional<RoutingDef::Policy> policy;
  // Replaces the topology's ECMP seed.
  std::optional<uint64_t> ecmp_seed;
};

class Router {
 public:
  // `topology` must outlive the router.
  explicit Router(const Topology& topology, RouterOptions options = {});

  Router(const Router&) = delete;
  Router& operator=(const Router&) = delete;

  // The ids of the directed links from `src_node` to `dst_node`, in order
  // (empty when they are the same node). INVALID_ARGUMENT for a node id out
  // of range; NOT_FOUND where no route exists; FAILED_PRECONDITION where
  // DIMENSION_ORDER was asked for a topology without a usable mesh.
  absl::StatusOr<std::vector<int>> Route(int src_node, int dst_node) const;

  RoutingDef::Policy policy() const { return policy_; }
  uint64_t ecmp_seed() const { return ecmp_seed_; }

  // Routing weight of `link` in picoseconds: latency plus the time 1 MiB
  // takes at the link's capacity (at least 1).
  static int64_t LinkCost(const Link& link);

 private:
  absl::StatusOr<std::vector<int>> ComputeRoute(int src, int dst) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<int>> CheapestRoute(int src, int dst) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<std::vector<int>> DimensionOrderRoute(int src, int dst) const;
  // Follows, from `src` to `dst`, the out-links for which
  // `on_a_cheapest_route(at, link)` holds, picking among several as the
  // policy says: under ECMP by a hash of (seed, src, dst, at), under
  // D_MOD_K by the destination's host index, otherwise the lowest id.
  // INTERNAL when none holds.
  absl::StatusOr<std::vector<int>> Walk(
      int src, int dst,
      absl::FunctionRef<bool(int at, int link)> on_a_cheapest_route) const;
  // NOT_FOUND: no route from `src` to `dst`.
  absl::Status NoRoute(int src, int dst) const;
  // Cost of the cheapest route from every node to `dst`.
  const std::vector<int64_t>& CostsTo(int dst) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The route CheapestRoute picks, found by a search from both ends that
  // visits only the nodes within half the route's cost of `src` or `dst`
  // (a few hundred on a fat tree of any size, where CostsTo visits every
  // node).
  absl::StatusOr<std::vector<int>> SearchRoute(int src, int dst) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Topology& topology_;
  const RoutingDef::Policy policy_;
  const uint64_t ecmp_seed_;
  std::vector<int64_t> link_costs_;

  mutable absl::Mutex mu_;
  mutable absl::flat_hash_map<std::pair<int, int>, std::vector<int>> routes_
      ABSL_GUARDED_BY(mu_);
  mutable absl::flat_hash_map<int, std::vector<int64_t>> costs_to_
      ABSL_GUARDED_BY(mu_);
  // Routes found by SearchRoute per destination; a destination asked for
  // often gets its CostsTo table instead (shared by all its sources).
  mutable absl::flat_hash_map<int, int> searches_to_ ABSL_GUARDED_BY(mu_);
  // SearchRoute's scratch, one entry per node, kept at "unreached"
  // between searches: costs from the source and to the destination, which
  // of them are final, whether the node lies on a cheapest route; and the
  // nodes a search touched.
  struct SearchNode {
    int64_t from_src;
    int64_t to_dst;
    bool from_src_final = false;
    bool to_dst_final = false;
    bool on_route = false;
  };
  mutable std::vector<SearchNode> search_ ABSL_GUARDED_BY(mu_);
  mutable std::vector<int> touched_ ABSL_GUARDED_BY(mu_);
};

}  // namespace simulator

#endif  // SIMULATOR_ROUTING_H_
