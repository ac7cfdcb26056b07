#include "simulator/topology_generator.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "google/protobuf/text_format.h"
#include "simulator/builtin_topologies.h"
#include "simulator/cluster_fabric.h"
#include "simulator/topology.h"

namespace simulator {
namespace {

bool PositiveFinite(double value) { return std::isfinite(value) && value > 0; }
bool NonNegativeFinite(double value) {
  return std::isfinite(value) && value >= 0;
}

void AddLink(TopologyDef& def, const std::string& a, const std::string& b,
             LinkDef::Kind kind, double bandwidth, double latency_ns) {
  LinkDef* link = def.add_links();
  link->set_a(a);
  link->set_b(b);
  link->set_kind(kind);
  link->set_bandwidth_bytes_per_second(bandwidth);
  link->set_count(1);
  link->set_latency_ns(latency_ns);
}

absl::Status CheckOptions(const GeneratorOptions& o) {
  auto bad = [](const std::string& message) {
    return absl::InvalidArgumentError(
        absl::StrCat("topology generator: ", message));
  };
  if (o.nodes < 1 || o.nodes > 4096) {
    return bad(absl::StrCat("nodes = ", o.nodes, "; use 1 to 4096"));
  }
  if (o.gpus_per_node < 1 || o.gpus_per_node > 64) {
    return bad(
        absl::StrCat("gpus_per_node = ", o.gpus_per_node, "; use 1 to 64"));
  }
  if (o.nics_per_node < 0 || o.nics_per_node > 64) {
    return bad(
        absl::StrCat("nics_per_node = ", o.nics_per_node, "; use 0 to 64"));
  }
  if (o.nodes > 1 && o.nics_per_node == 0) {
    return bad("nodes > 1 needs at least one NIC per node (nics_per_node)");
  }
  if (o.intra_node_link != LinkDef::NVSWITCH &&
      o.intra_node_link != LinkDef::NVLINK &&
      o.intra_node_link != LinkDef::PCIE) {
    return bad(absl::StrCat(
        "intra_node_link = ", LinkDef::Kind_Name(o.intra_node_link),
        "; use NVSWITCH, NVLINK or PCIE"));
  }
  if (!PositiveFinite(o.intra_node_bandwidth_bytes_per_second) ||
      !PositiveFinite(o.pcie_bandwidth_bytes_per_second) ||
      (o.nics_per_node > 0 && !PositiveFinite(o.nic_gbit_per_second))) {
    return bad("bandwidths must be positive (bytes/s; NIC speed in Gb/s)");
  }
  if (!NonNegativeFinite(o.intra_node_latency_ns) ||
      !NonNegativeFinite(o.pcie_latency_ns)) {
    return bad("latencies must not be negative");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<TopologyDef> GenerateTopology(const GeneratorOptions& o) {
  RETURN_IF_ERROR(CheckOptions(o));
  ASSIGN_OR_RETURN(DeviceSpec gpu_spec, DeviceSpecPreset(o.gpu_preset));
  ASSIGN_OR_RETURN(DeviceSpec cpu_spec, DeviceSpecPreset(o.cpu_preset));

  TopologyDef node;
  node.set_name(o.nodes == 1 ? o.name : absl::StrCat(o.name, "_node"));
  node.set_description(absl::StrCat(
      "Generated: ", o.nodes, " node(s) x ", o.gpus_per_node, " ", o.gpu_preset,
      " over ", LinkDef::Kind_Name(o.intra_node_link), ", ", o.nics_per_node,
      " x ", o.nic_gbit_per_second, " Gb/s NICs"));
  node.add_hosts()->set_name("node");
  NamedDeviceSpec* named = node.add_device_specs();
  named->set_name(o.gpu_preset);
  *named->mutable_spec() = gpu_spec;
  if (o.cpu_preset != o.gpu_preset) {
    named = node.add_device_specs();
    named->set_name(o.cpu_preset);
    *named->mutable_spec() = cpu_spec;
  }
  auto add_device = [&](const std::string& name, DeviceDef::Kind kind,
                        const std::string& spec) {
    DeviceDef* device = node.add_devices();
    device->set_name(name);
    device->set_kind(kind);
    device->set_host("node");
    device->set_spec_name(spec);
  };
  auto add_switch = [&](const std::string& name, SwitchDef::Kind kind,
                        bool reduces) {
    SwitchDef* sw = node.add_switches();
    sw->set_name(name);
    sw->set_kind(kind);
    sw->set_host("node");
    sw->set_in_network_reduction(reduces);
  };
  add_device("cpu", DeviceDef::CPU, o.cpu_preset);
  const int64_t gpus = o.gpus_per_node;
  for (int64_t i = 0; i < gpus; ++i) {
    add_device(absl::StrCat("gpu", i), DeviceDef::GPU, o.gpu_preset);
  }
  const int64_t pcie_switches = std::max<int64_t>(o.nics_per_node, 1);
  auto switch_of_gpu = [&](int64_t i) { return i * pcie_switches / gpus; };
  for (int64_t j = 0; j < pcie_switches; ++j) {
    add_switch(absl::StrCat("pcie", j), SwitchDef::PCIE_SWITCH, false);
  }
  const bool pcie_root =
      o.intra_node_link == LinkDef::PCIE && pcie_switches > 1;
  if (pcie_root) add_switch("pcie_root", SwitchDef::PCIE_SWITCH, false);
  if (o.intra_node_link == LinkDef::NVSWITCH) {
    add_switch("nvswitch", SwitchDef::NVSWITCH,
               o.nvswitch_in_network_reduction);
  }
  for (int64_t j = 0; j < o.nics_per_node; ++j) {
    NicDef* nic = node.add_nics();
    nic->set_name(absl::StrCat("nic", j));
    nic->set_host("node");
    for (int64_t i = 0; i < gpus; ++i) {
      if (switch_of_gpu(i) == j) {
        nic->set_device(absl::StrCat("gpu", i));
        break;
      }
    }
  }
  const double intra = o.intra_node_bandwidth_bytes_per_second;
  const double pcie = o.pcie_bandwidth_bytes_per_second;
  for (int64_t i = 0; i < gpus; ++i) {
    const std::string gpu = absl::StrCat("gpu", i);
    if (o.intra_node_link == LinkDef::NVSWITCH) {
      AddLink(node, gpu, "nvswitch", LinkDef::NVSWITCH, intra,
              o.intra_node_latency_ns);
    } else if (o.intra_node_link == LinkDef::NVLINK) {
      for (int64_t peer = i + 1; peer < gpus; ++peer) {
        AddLink(node, gpu, absl::StrCat("gpu", peer), LinkDef::NVLINK, intra,
                o.intra_node_latency_ns);
      }
    }
    AddLink(node, gpu, absl::StrCat("pcie", switch_of_gpu(i)), LinkDef::PCIE,
            pcie, o.pcie_latency_ns);
  }
  for (int64_t j = 0; j < o.nics_per_node; ++j) {
    AddLink(node, absl::StrCat("nic", j), absl::StrCat("pcie", j),
            LinkDef::PCIE, pcie, o.pcie_latency_ns);
  }
  for (int64_t j = 0; j < pcie_switches; ++j) {
    AddLink(node, absl::StrCat("pcie", j), pcie_root ? "pcie_root" : "cpu",
            LinkDef::PCIE, pcie, o.pcie_latency_ns);
  }
  if (pcie_root) {
    AddLink(node, "pcie_root", "cpu", LinkDef::PCIE, pcie, o.pcie_latency_ns);
  }

  TopologyDef def;
  if (o.nodes == 1) {
    def = std::move(node);
    def.mutable_routing()->set_policy(RoutingDef::SHORTEST_PATH);
  } else {
    RailFabricOptions fabric;
    fabric.name = o.name;
    fabric.nodes = o.nodes;
    fabric.nodes_per_leaf = o.nodes_per_leaf;
    fabric.spines = o.spines;
    fabric.port_bandwidth_bytes_per_second = o.nic_gbit_per_second * 1e9 / 8;
    ASSIGN_OR_RETURN(TopologyDef cluster,
                     BuildRailOptimizedCluster(node, fabric));
    def = std::move(cluster);
  }
  ASSIGN_OR_RETURN(Topology checked, Topology::FromDef(def, o.name));
  return def;
}

std::string ToTextProto(const TopologyDef& def) {
  std::string text;
  google::protobuf::TextFormat::Printer printer;
  printer.PrintToString(def, &text);
  return text;
}

}  // namespace simulator
