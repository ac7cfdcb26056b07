// What a group of devices of a topology has to communicate with: how many
// nodes (hosts) it spans and how many ranks sit on each, the per-rank
// bandwidth and latency inside a node and across nodes, and whether switches
// on the way reduce data in the network (NVLink SHARP on an NVSwitch, SHARP
// on InfiniBand switches). Analytical models of collectives (the NCCL model
// in nccl_model.h, the all-reduce cost model of the collective layer) start
// from this summary instead of the whole graph.
//
// The figures come from the topology's routes (routing.h), the way a
// collective library's rings would use them:
//  - inside a node, rank i talks to the next rank of its node (a ring
//    neighbour); the bandwidth is the smallest bottleneck capacity of those
//    routes, the latency the largest route latency;
//  - across nodes, rank i of a node talks to rank i of the next node (the
//    same rail, as NCCL's rings are laid out); the per-rank bandwidth is the
//    smallest bottleneck of those routes, and a node's network bandwidth is
//    the sum of the distinct NIC ports its ranks leave through (the smallest
//    over the nodes).
//
// Example:
//   absl::StatusOr<Topology> topology = BuiltinTopology("dgx_h100_cluster:2");
//   std::vector<int> gpus = {...};  // indices into topology->devices()
//   absl::StatusOr<GroupHardware> hw = DescribeGroupHardware(*topology, gpus);
//   // hw->nodes == 2, hw->max_ranks_per_node == 8,
//   // hw->intra_bw_Bps == 450e9, hw->node_net_bw_Bps == 400e9,
//   // hw->nvlink_sharp == true, hw->fabric_sharp == true.
#ifndef SIMULATOR_GROUP_HARDWARE_H_
#define SIMULATOR_GROUP_HARDWARE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/topology.h"

namespace simulator {

// The kind of path between two ranks of one node.
enum class IntraNodeLink {
  kNone,    // every node holds one rank of the group
  kNvlink,  // NVLink only (direct or through an NVSwitch)
  kPcie,    // the path has PCIe links and no faster kind
  kOther,   // anything else (TPU ICI, on-chip, Ethernet inside a host)
};

absl::string_view IntraNodeLinkName(IntraNodeLink link);

struct GroupHardware {
  int n = 0;      // ranks
  int nodes = 0;  // distinct hosts
  int max_ranks_per_node = 0;
  int min_ranks_per_node = 0;

  IntraNodeLink intra_link = IntraNodeLink::kNone;
  // Per rank, each direction, bytes/s (0 with kNone).
  double intra_bw_Bps = 0;
  double intra_latency_us = 0;
  // Every intra-node route crosses an NVSwitch that reduces in the network.
  bool nvlink_sharp = false;
  // Some intra-node route crosses a root complex without peer-to-peer
  // (SwitchDef.no_peer_to_peer): data is staged through host memory.
  bool intra_through_host = false;

  // Per rank, each direction, towards the same rank of the next node (0 on
  // one node).
  double rank_net_bw_Bps = 0;
  // Per node: the summed capacity of the NIC ports its ranks use.
  double node_net_bw_Bps = 0;
  double net_latency_us = 0;
  // Every inter-node route crosses a fabric switch that reduces data.
  bool fabric_sharp = false;

  // The smallest memory bandwidth of the group's devices (local copies).
  double memory_bw_Bps = 0;
  // Every device of the group is a GPU.
  bool all_gpus = false;
  // The smallest compute capability (x10) of the group's GPUs, as NCCL takes
  // its tuning figures from the oldest GPU; 0 when any device lacks one.
  int compute_capability = 0;

  // "8 ranks on 1 node(s): intra NVLink 450 GB/s 0.50 us (NVLink SHARP); ..."
  std::string DebugString() const;
};

// Describes the group of `device_indices` (indices into
// topology.devices(), rank i being device_indices[i]). INVALID_ARGUMENT for
// an empty list, an index out of range or a device listed twice; NOT_FOUND
// when two of the devices have no route between them.
absl::StatusOr<GroupHardware> DescribeGroupHardware(
    const Topology& topology, const std::vector<int>& device_indices);

// The GPUs (indices into topology.devices()) of a group of `count` ranks
// placed `per_node` on each host, hosts in order, each host's GPUs in
// order; per_node 0 takes the first `count` GPUs of the topology, filling
// each host. INVALID_ARGUMENT when the topology has too few hosts with
// enough GPUs, or for counts below 1 (per_node below 0).
absl::StatusOr<std::vector<int>> PlaceGpuRanks(const Topology& topology,
                                               int64_t count, int64_t per_node);

}  // namespace simulator

#endif  // SIMULATOR_GROUP_HARDWARE_H_
