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
// Routing is ECMP, so flows spread over the spines deterministically.
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

struct RailFabricOptions {
  // Name of the result ("" keeps "<node name>_cluster:<nodes>").
  std::string name;
  // Number of copies of the node, 1 to 4096.
  int64_t nodes = 1;
  // Nodes whose NICs of one rail share a leaf switch (leaf down ports).
  int64_t nodes_per_leaf = 32;
  // Spine switches; each leaf has one link to each.
  int64_t spines = 32;
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
  uint64_t ecmp_seed = 0;
};

// INVALID_ARGUMENT where `node` does not have exactly one host, has no NICs,
// has a TPU mesh, or the options are out of range (in_network_reduction
// with ethernet among them).
absl::StatusOr<TopologyDef> BuildRailOptimizedCluster(
    const TopologyDef& node, const RailFabricOptions& options);

}  // namespace simulator

#endif  // SIMULATOR_CLUSTER_FABRIC_H_
