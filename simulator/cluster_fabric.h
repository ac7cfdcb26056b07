// Multi-node GPU clusters: copies of one node joined by a rail-optimized
// InfiniBand fat tree.
//
// BuildRailOptimizedCluster takes the definition of one node (one host, with
// NICs) and makes `nodes` copies of it, named "node<k>/<name>" on hosts
// "node<k>". The i-th NIC of every node is on rail i: it connects to the
// leaf switch of rail i for its group of `nodes_per_leaf` nodes
// ("ib_leaf_r<i>_g<group>"). Every leaf connects to every spine
// ("ib_spine<s>") with one link, so traffic between rails, or between groups
// of the same rail, goes leaf -> spine -> leaf. With `spines` equal to
// `nodes_per_leaf` the tree is non-blocking, as in NVIDIA's DGX SuperPOD
// reference designs (leaves use half their ports down, half up). For up to
// nodes_per_leaf * (switch radix / rails) nodes this is the two-level tree
// of those designs; beyond that a spine node stands for a group of switches
// of the same total capacity.
//
// Three levels (nodes_per_pod > 0): the leaf groups are gathered in pods of
// nodes_per_pod nodes. Each pod has its own `spines` spines
// ("ib_spine_p<pod>_<s>"), linked to every leaf of the pod; spine s of every
// pod links to each core switch of plane s ("ib_core<c>", c % spines == s),
// so traffic between pods goes leaf -> spine -> core -> spine -> leaf. With
// as many cores per plane as a pod has leaves (the default), the spine
// layer is non-blocking too: the leaf-spine-core fat tree of clusters too
// large for two levels. A core stands for a group of switches where the
// pods outnumber a real switch's ports.
//
// Routing is RailFabricOptions::routing: by default D_MOD_K on InfiniBand
// (OpenSM's fat-tree routing) and ECMP on Ethernet, both deterministic.
//
// Example:
//   RailFabricOptions fabric;
//   fabric.nodes = 16;
//   absl::StatusOr<TopologyDef> cluster =
//       BuildRailOptimizedCluster(dgx_h100_def, fabric);

#ifndef SIMULATOR_CLUSTER_FABRIC_H_
#define SIMULATOR_CLUSTER_FABRIC_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "simulator/topology.pb.h"

namespace simulator {

// The most nodes BuildRailOptimizedCluster builds.
inline constexpr int64_t kMaxClusterNodes = 16384;

struct RailFabricOptions {
  // Name of the result ("" keeps "<node name>_cluster:<nodes>").
  std::string name;
  // Number of copies of the node, 1 to kMaxClusterNodes.
  int64_t nodes = 1;
  // Nodes whose NICs of one rail share a leaf switch (leaf down ports).
  int64_t nodes_per_leaf = 32;
  // Spine switches (per pod with three levels); each leaf has one link to
  // each spine of its pod.
  int64_t spines = 32;
  // Three levels: nodes per pod, a multiple of nodes_per_leaf (0: two
  // levels, every leaf linked to every spine).
  int64_t nodes_per_pod = 0;
  // Three levels: core switches, a multiple of `spines` (0: spines times
  // the leaves of a pod, a non-blocking spine layer).
  int64_t cores = 0;
  // NIC port and switch port bandwidth, bytes/s each way (400 Gb/s = 50e9).
  double port_bandwidth_bytes_per_second = 50e9;
  // NIC to leaf: adapter plus switch traversal, nanoseconds.
  double nic_latency_ns = 600;
  // Leaf to spine: one more switch traversal, nanoseconds.
  double switch_latency_ns = 130;
  // Whether the leaves and spines reduce data in the network (SHARP).
  bool in_network_reduction = false;
  // Ethernet (RoCE) instead of InfiniBand: ETHERNET links and
  // ETHERNET_SWITCH leaves and spines (which cannot reduce in the network).
  bool ethernet = false;
  // How equal-cost uplinks are shared: D_MOD_K (by destination, as OpenSM's
  // fat-tree routing on InfiniBand) or ECMP (a hash per flow, as Ethernet
  // switches). Unset: D_MOD_K on InfiniBand, ECMP on Ethernet.
  RoutingDef::Policy routing = RoutingDef::POLICY_UNSPECIFIED;
  uint64_t ecmp_seed = 0;
};

// INVALID_ARGUMENT where `node` does not have exactly one host, has no NICs,
// has a TPU mesh, or the options are out of range (in_network_reduction
// with ethernet among them).
absl::StatusOr<TopologyDef> BuildRailOptimizedCluster(
    const TopologyDef& node, const RailFabricOptions& options);

}  // namespace simulator

#endif  // SIMULATOR_CLUSTER_FABRIC_H_
