#include "simulator/group_hardware.h"

#include <algorithm>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "devices/status_macros.h"
#include "simulator/routing.h"

namespace simulator {
namespace {

constexpr double kPsPerUs = 1e6;

// What one route offers.
struct RouteFacts {
  double bottleneck_Bps = std::numeric_limits<double>::infinity();
  double latency_us = 0;
  bool has_nvlink = false;
  bool has_pcie = false;
  bool has_other = false;
  bool nvswitch_reduces = false;  // passes an NVSwitch with SHARP
  bool fabric_reduces = false;    // passes a fabric switch with SHARP
  bool through_host = false;      // staged through host memory
  int nic_port = -1;              // the link leaving the first NIC, if any
};

RouteFacts Examine(const Topology& topology, const std::vector<int>& route) {
  RouteFacts facts;
  int64_t latency_ps = 0;
  for (size_t i = 0; i < route.size(); ++i) {
    const Link& link = topology.link(route[i]);
    facts.bottleneck_Bps =
        std::min(facts.bottleneck_Bps, link.capacity_bytes_per_second);
    latency_ps += link.latency_ps;
    switch (link.kind) {
      case LinkDef::NVLINK:
      case LinkDef::NVSWITCH:
        facts.has_nvlink = true;
        break;
      case LinkDef::PCIE:
        facts.has_pcie = true;
        break;
      default:
        facts.has_other = true;
        break;
    }
    if (facts.nic_port < 0 && topology.node(link.src).kind == NodeKind::kNic) {
      facts.nic_port = link.id;
    }
    if (i + 1 < route.size() && topology.node(link.dst).no_peer_to_peer) {
      facts.through_host = true;
    }
    if (i + 1 < route.size() && topology.HasInNetworkReduction(link.dst)) {
      const Node& node = topology.node(link.dst);
      if (node.switch_kind == SwitchDef::NVSWITCH)
        facts.nvswitch_reduces = true;
      if (node.host < 0) facts.fabric_reduces = true;
    }
  }
  facts.latency_us = static_cast<double>(latency_ps) / kPsPerUs;
  return facts;
}

}  // namespace

absl::string_view IntraNodeLinkName(IntraNodeLink link) {
  switch (link) {
    case IntraNodeLink::kNone:
      return "none";
    case IntraNodeLink::kNvlink:
      return "NVLink";
    case IntraNodeLink::kPcie:
      return "PCIe";
    case IntraNodeLink::kOther:
      return "other";
  }
  return "unknown";
}

std::string GroupHardware::DebugString() const {
  std::string out =
      absl::StrFormat("%d ranks on %d node(s) (%d-%d per node)", n, nodes,
                      min_ranks_per_node, max_ranks_per_node);
  if (intra_link != IntraNodeLink::kNone) {
    absl::StrAppendFormat(&out, "; intra %s %.1f GB/s %.2f us%s%s",
                          IntraNodeLinkName(intra_link), intra_bw_Bps / 1e9,
                          intra_latency_us,
                          nvlink_sharp ? " (NVLink SHARP)" : "",
                          intra_through_host ? " (through host memory)" : "");
  }
  if (nodes > 1) {
    absl::StrAppendFormat(
        &out, "; network %.1f GB/s per rank, %.1f GB/s per node, %.2f us%s",
        rank_net_bw_Bps / 1e9, node_net_bw_Bps / 1e9, net_latency_us,
        fabric_sharp ? " (SHARP)" : "");
  }
  return out;
}

absl::StatusOr<GroupHardware> DescribeGroupHardware(
    const Topology& topology, const std::vector<int>& device_indices) {
  if (device_indices.empty()) {
    return absl::InvalidArgumentError(
        "describing a group of devices needs at least one device");
  }
  std::set<int> seen;
  for (int index : device_indices) {
    if (index < 0 || index >= topology.num_devices()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device index ", index, " is out of range: topology '",
          topology.name(), "' has ", topology.num_devices(), " devices"));
    }
    if (!seen.insert(index).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("device ", topology.device(index).name,
                       " is listed twice; every rank needs its own device"));
    }
  }

  GroupHardware hw;
  hw.n = static_cast<int>(device_indices.size());
  hw.all_gpus = true;
  hw.memory_bw_Bps = std::numeric_limits<double>::infinity();
  hw.compute_capability = std::numeric_limits<int>::max();
  // Hosts in order of first appearance, each with its ranks' devices.
  std::vector<int> host_order;
  std::map<int, std::vector<int>> by_host;
  for (int index : device_indices) {
    const DeviceInfo& info = topology.device(index);
    if (info.kind != DeviceDef::GPU) hw.all_gpus = false;
    hw.memory_bw_Bps = std::min(hw.memory_bw_Bps,
                                info.spec.memory_bandwidth_bytes_per_second());
    hw.compute_capability =
        std::min(hw.compute_capability, info.spec.compute_capability());
    auto [it, inserted] = by_host.try_emplace(info.host);
    if (inserted) host_order.push_back(info.host);
    it->second.push_back(index);
  }
  hw.nodes = static_cast<int>(host_order.size());
  hw.min_ranks_per_node = std::numeric_limits<int>::max();
  for (const auto& [host, members] : by_host) {
    const int size = static_cast<int>(members.size());
    hw.max_ranks_per_node = std::max(hw.max_ranks_per_node, size);
    hw.min_ranks_per_node = std::min(hw.min_ranks_per_node, size);
  }

  Router router(topology);
  auto route_between = [&](int a, int b) -> absl::StatusOr<RouteFacts> {
    ASSIGN_OR_RETURN(
        std::vector<int> route,
        router.Route(topology.device(a).node, topology.device(b).node));
    return Examine(topology, route);
  };

  // Inside nodes: every rank to the next rank of its node.
  if (hw.max_ranks_per_node > 1) {
    bool nvlink = true, pcie = false, sharp = true, through_host = false;
    double bw = std::numeric_limits<double>::infinity();
    for (int host : host_order) {
      const std::vector<int>& members = by_host[host];
      if (members.size() < 2) continue;
      for (size_t i = 0; i < members.size(); ++i) {
        ASSIGN_OR_RETURN(
            RouteFacts facts,
            route_between(members[i], members[(i + 1) % members.size()]));
        bw = std::min(bw, facts.bottleneck_Bps);
        hw.intra_latency_us = std::max(hw.intra_latency_us, facts.latency_us);
        nvlink =
            nvlink && facts.has_nvlink && !facts.has_pcie && !facts.has_other;
        pcie = pcie || facts.has_pcie;
        sharp = sharp && facts.nvswitch_reduces;
        through_host = through_host || facts.through_host;
        if (members.size() == 2) break;  // the reverse route is symmetric
      }
    }
    hw.intra_bw_Bps = bw;
    hw.intra_link = nvlink ? IntraNodeLink::kNvlink
                    : pcie ? IntraNodeLink::kPcie
                           : IntraNodeLink::kOther;
    hw.nvlink_sharp = nvlink && sharp;
    hw.intra_through_host = through_host;
  }

  // Across nodes: rank i of each node to rank i of the next node.
  if (hw.nodes > 1) {
    // The fabric ports of the NICs paired with each device (NicDef.device):
    // NCCL spreads its channels over all the NICs close to its GPUs, so a
    // node whose GPUs have several ports each uses them all.
    std::map<int, std::vector<int>> ports_of_device;
    for (const Node& nic : topology.nodes()) {
      if (nic.kind != NodeKind::kNic || nic.paired_device < 0) continue;
      for (int link : topology.out_links(nic.id)) {
        if (topology.node(topology.link(link).dst).host < 0) {
          ports_of_device[nic.paired_device].push_back(link);
        }
      }
    }
    double rank_bw = std::numeric_limits<double>::infinity();
    double node_bw = std::numeric_limits<double>::infinity();
    bool sharp = true;
    for (size_t k = 0; k < host_order.size(); ++k) {
      const std::vector<int>& here = by_host[host_order[k]];
      const std::vector<int>& next =
          by_host[host_order[(k + 1) % host_order.size()]];
      std::set<int> ports;
      double ports_bw = 0;
      for (size_t i = 0; i < here.size(); ++i) {
        ASSIGN_OR_RETURN(RouteFacts facts,
                         route_between(here[i], next[i % next.size()]));
        rank_bw = std::min(rank_bw, facts.bottleneck_Bps);
        hw.net_latency_us = std::max(hw.net_latency_us, facts.latency_us);
        sharp = sharp && facts.fabric_reduces;
        // Without a NIC on the way (hosts joined directly), the route's
        // bottleneck stands for the node's port.
        const double port_bw =
            facts.nic_port >= 0
                ? topology.link(facts.nic_port).capacity_bytes_per_second
                : facts.bottleneck_Bps;
        if (facts.nic_port < 0 || ports.insert(facts.nic_port).second) {
          ports_bw += std::min(port_bw, facts.bottleneck_Bps);
        }
      }
      for (int member : here) {
        auto it = ports_of_device.find(topology.device(member).node);
        if (it == ports_of_device.end()) continue;
        for (int port : it->second) {
          if (ports.insert(port).second) {
            ports_bw += topology.link(port).capacity_bytes_per_second;
          }
        }
      }
      node_bw = std::min(node_bw, ports_bw);
    }
    hw.rank_net_bw_Bps = rank_bw;
    hw.node_net_bw_Bps = node_bw;
    hw.fabric_sharp = sharp;
  }
  if (hw.compute_capability == std::numeric_limits<int>::max()) {
    hw.compute_capability = 0;
  }
  return hw;
}

absl::StatusOr<std::vector<int>> PlaceGpuRanks(const Topology& topology,
                                               int64_t count,
                                               int64_t per_node) {
  if (count < 1 || per_node < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a group of ", count, " GPUs with ", per_node,
        " per node: give at least one GPU and a per-node count of 0 (fill "
        "each node) or more"));
  }
  std::vector<std::vector<int>> by_host(topology.host_names().size());
  int64_t total = 0;
  for (const DeviceInfo& d : topology.devices()) {
    if (d.kind != DeviceDef::GPU || d.host < 0) continue;
    by_host[static_cast<size_t>(d.host)].push_back(d.index);
    ++total;
  }
  std::vector<int> chosen;
  if (per_node == 0) {
    for (const std::vector<int>& gpus : by_host) {
      for (int g : gpus) {
        if (static_cast<int64_t>(chosen.size()) < count) chosen.push_back(g);
      }
    }
    if (static_cast<int64_t>(chosen.size()) < count) {
      return absl::InvalidArgumentError(
          absl::StrCat("a group of ", count, " GPUs but topology '",
                       topology.name(), "' has ", total));
    }
    return chosen;
  }
  int64_t hosts_with_room = 0;
  for (const std::vector<int>& gpus : by_host) {
    if (static_cast<int64_t>(gpus.size()) < per_node) continue;
    ++hosts_with_room;
    for (int64_t i = 0; i < per_node; ++i) {
      if (static_cast<int64_t>(chosen.size()) < count) {
        chosen.push_back(gpus[static_cast<size_t>(i)]);
      }
    }
  }
  if (static_cast<int64_t>(chosen.size()) < count) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a group of ", count, " GPUs placed ", per_node, " per node needs ",
        (count + per_node - 1) / per_node,
        " nodes with that many GPUs, but topology '", topology.name(), "' has ",
        hosts_with_room, "; use a larger cluster or fewer GPUs"));
  }
  return chosen;
}

}  // namespace simulator
