#include "simulator/cluster_fabric.h"

#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace simulator {
namespace {

LinkDef* AddFabricLink(TopologyDef& def, const RailFabricOptions& options,
                       const std::string& a, const std::string& b,
                       double bandwidth, double latency_ns) {
  LinkDef* link = def.add_links();
  link->set_a(a);
  link->set_b(b);
  link->set_kind(options.ethernet ? LinkDef::ETHERNET : LinkDef::INFINIBAND);
  link->set_bandwidth_bytes_per_second(bandwidth);
  link->set_count(1);
  link->set_latency_ns(latency_ns);
  return link;
}

std::string LeafName(int64_t rail, int64_t group) {
  return absl::StrCat("ib_leaf_r", rail, "_g", group);
}

}  // namespace

absl::StatusOr<TopologyDef> BuildRailOptimizedCluster(
    const TopologyDef& node, const RailFabricOptions& options) {
  const std::string what = absl::StrCat("cluster of '", node.name(), "' nodes");
  if (node.hosts_size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": the node definition has ", node.hosts_size(),
        " hosts; a cluster is built from the definition of one host"));
  }
  if (node.nics_size() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": the node has no NICs to join the fabric; add `nics`"));
  }
  if (node.has_mesh()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": TPU meshes are built with TpuV4Slice or TpuV5eSlice"));
  }
  if (options.nodes < 1 || options.nodes > kMaxClusterNodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": nodes = ", options.nodes, "; use 1 to ", kMaxClusterNodes));
  }
  if (options.nodes_per_leaf < 1 || options.spines < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": nodes_per_leaf and spines must be at least 1 (got ",
        options.nodes_per_leaf, " and ", options.spines, ")"));
  }
  const bool three_levels = options.nodes_per_pod > 0;
  if (options.nodes_per_pod < 0 || options.cores < 0 ||
      (three_levels && options.nodes_per_pod % options.nodes_per_leaf != 0) ||
      (three_levels && options.cores % options.spines != 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": nodes_per_pod (", options.nodes_per_pod,
                     ") must be a multiple of nodes_per_leaf (",
                     options.nodes_per_leaf, ") and cores (", options.cores,
                     ") a multiple of spines (", options.spines, "), or 0"));
  }
  if (!(options.port_bandwidth_bytes_per_second > 0) ||
      !std::isfinite(options.port_bandwidth_bytes_per_second) ||
      !(options.nic_latency_ns >= 0) || !(options.switch_latency_ns >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": port bandwidth must be positive and latencies not negative"));
  }
  if (options.ethernet && options.in_network_reduction) {
    return absl::InvalidArgumentError(absl::StrCat(
        what,
        ": Ethernet switches do not reduce in the network (SHARP is "
        "an InfiniBand feature); turn in_network_reduction off"));
  }
  TopologyDef def;
  def.set_name(options.name.empty()
                   ? absl::StrCat(node.name(), "_cluster:", options.nodes)
                   : options.name);
  const int64_t rails = node.nics_size();
  const int64_t groups =
      (options.nodes + options.nodes_per_leaf - 1) / options.nodes_per_leaf;
  const int64_t groups_per_pod =
      three_levels ? options.nodes_per_pod / options.nodes_per_leaf : groups;
  const int64_t pods = (groups + groups_per_pod - 1) / groups_per_pod;
  const int64_t cores_per_plane = !three_levels ? 0
                                  : options.cores > 0
                                      ? options.cores / options.spines
                                      : groups_per_pod * rails;
  const char* fabric_kind = options.ethernet ? "Ethernet (RoCE)" : "InfiniBand";
  def.set_description(
      three_levels
          ? absl::StrCat(options.nodes, " x ", node.name(),
                         " on a three-level rail-optimized ", fabric_kind,
                         " fat tree (", rails, " rails; ", pods, " pods of ",
                         options.nodes_per_pod, " nodes, ", options.spines,
                         " spines each; ", cores_per_plane * options.spines,
                         " cores)")
          : absl::StrCat(options.nodes, " x ", node.name(),
                         " on a rail-optimized ", fabric_kind, " fat tree (",
                         rails, " rails, ", options.spines, " spines)"));
  def.mutable_routing()->set_policy(
      options.routing != RoutingDef::POLICY_UNSPECIFIED ? options.routing
      : options.ethernet                                ? RoutingDef::ECMP
                                                        : RoutingDef::D_MOD_K);
  def.mutable_routing()->set_ecmp_seed(options.ecmp_seed);
  *def.mutable_device_specs() = node.device_specs();

  const std::string& template_host = node.hosts(0).name();
  auto rename = [](const std::string& prefix, const std::string& name) {
    return name.empty() ? name : absl::StrCat(prefix, name);
  };
  for (int64_t k = 0; k < options.nodes; ++k) {
    const std::string host = absl::StrCat("node", k);
    const std::string prefix = absl::StrCat(host, "/");
    def.add_hosts()->set_name(host);
    auto host_of = [&](const std::string& name) {
      return name == template_host ? host : name;
    };
    for (const DeviceDef& device : node.devices()) {
      DeviceDef* copy = def.add_devices();
      *copy = device;
      copy->set_name(rename(prefix, device.name()));
      copy->set_host(host_of(device.host()));
    }
    for (const SwitchDef& sw : node.switches()) {
      SwitchDef* copy = def.add_switches();
      *copy = sw;
      copy->set_name(rename(prefix, sw.name()));
      if (!sw.host().empty()) copy->set_host(host_of(sw.host()));
    }
    for (const NicDef& nic : node.nics()) {
      NicDef* copy = def.add_nics();
      *copy = nic;
      copy->set_name(rename(prefix, nic.name()));
      copy->set_host(host_of(nic.host()));
      copy->set_device(rename(prefix, nic.device()));
    }
    for (const LinkDef& link : node.links()) {
      LinkDef* copy = def.add_links();
      *copy = link;
      copy->set_a(rename(prefix, link.a()));
      copy->set_b(rename(prefix, link.b()));
    }
  }

  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t r = 0; r < rails; ++r) {
      SwitchDef* leaf = def.add_switches();
      leaf->set_name(LeafName(r, g));
      leaf->set_kind(options.ethernet ? SwitchDef::ETHERNET_SWITCH
                                      : SwitchDef::IB_LEAF);
      leaf->set_in_network_reduction(options.in_network_reduction);
    }
  }
  auto spine_name = [&](int64_t pod, int64_t s) {
    return three_levels ? absl::StrCat("ib_spine_p", pod, "_", s)
                        : absl::StrCat("ib_spine", s);
  };
  auto add_switch = [&](const std::string& name) {
    SwitchDef* sw = def.add_switches();
    sw->set_name(name);
    sw->set_kind(options.ethernet ? SwitchDef::ETHERNET_SWITCH
                                  : SwitchDef::IB_SPINE);
    sw->set_in_network_reduction(options.in_network_reduction);
  };
  for (int64_t pod = 0; pod < (three_levels ? pods : 1); ++pod) {
    for (int64_t s = 0; s < options.spines; ++s) add_switch(spine_name(pod, s));
  }
  for (int64_t c = 0; c < cores_per_plane * options.spines; ++c) {
    add_switch(absl::StrCat("ib_core", c));
  }
  for (int64_t k = 0; k < options.nodes; ++k) {
    for (int64_t r = 0; r < rails; ++r) {
      AddFabricLink(
          def, options,
          absl::StrCat("node", k, "/", node.nics(static_cast<int>(r)).name()),
          LeafName(r, k / options.nodes_per_leaf),
          options.port_bandwidth_bytes_per_second, options.nic_latency_ns);
    }
  }
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t r = 0; r < rails; ++r) {
      for (int64_t s = 0; s < options.spines; ++s) {
        AddFabricLink(
            def, options, LeafName(r, g), spine_name(g / groups_per_pod, s),
            options.port_bandwidth_bytes_per_second, options.switch_latency_ns);
      }
    }
  }
  if (three_levels) {
    for (int64_t pod = 0; pod < pods; ++pod) {
      for (int64_t s = 0; s < options.spines; ++s) {
        for (int64_t k = 0; k < cores_per_plane; ++k) {
          AddFabricLink(def, options, spine_name(pod, s),
                        absl::StrCat("ib_core", k * options.spines + s),
                        options.port_bandwidth_bytes_per_second,
                        options.switch_latency_ns);
        }
      }
    }
  }
  return def;
}

}  // namespace simulator
