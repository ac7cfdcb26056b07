#include "simulator/builtin_topologies.h"

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "devices/status_macros.h"
#include "google/protobuf/text_format.h"
#include "simulator/cluster_fabric.h"
#include "simulator/topologies/embedded_topologies.h"
#include "simulator/tpu_topologies.h"

namespace simulator {
namespace {

constexpr absl::string_view kFileDirectory = "simulator/topologies/";

// A built-in file by topology name ("dgx_h100" -> dgx_h100.textproto).
const topologies::EmbeddedFile* FindFile(absl::string_view name) {
  const std::string file_name = absl::StrCat(name, ".textproto");
  for (const topologies::EmbeddedFile& file :
       topologies::EmbeddedTopologyFiles()) {
    if (file.name == file_name) return &file;
  }
  return nullptr;
}

absl::StatusOr<TopologyDef> ParseFile(const topologies::EmbeddedFile& file) {
  TopologyDef def;
  if (!google::protobuf::TextFormat::ParseFromString(std::string(file.text),
                                                     &def)) {
    return absl::InternalError(absl::StrCat(
        "built-in topology file ", kFileDirectory, file.name,
        " does not parse; load it with Topology::FromFile to see why"));
  }
  return def;
}

// The clusters of GPU nodes: the node file and the fabric it ships with.
struct ClusterKind {
  absl::string_view kind;  // "dgx_h100_cluster"
  absl::string_view node;  // "dgx_h100"
  // NIC and switch port speed, Gb/s (each way).
  int64_t nic_gbps;
  // Nodes per leaf and spines: half of a switch's ports down, half up.
  int64_t nodes_per_leaf;
  absl::string_view description;
};

// Port speeds from the adapters' and switches' datasheets: ConnectX-6 with
// Quantum QM8700 (HDR, 200 Gb/s, 40 ports: 20 nodes per leaf, 20 spines);
// ConnectX-7 with Quantum-2 QM9700 (NDR, 400 Gb/s, 64 ports: 32 and 32).
constexpr ClusterKind kClusterKinds[] = {
    {"dgx_a100_cluster", "dgx_a100", 200, 20,
     "N DGX A100 nodes on a rail-optimized HDR InfiniBand fat tree (8 rails, "
     "20 nodes per leaf, 20 spines)"},
    {"dgx_h100_cluster", "dgx_h100", 400, 32,
     "N DGX H100 nodes on a rail-optimized NDR InfiniBand fat tree (8 rails, "
     "32 nodes per leaf, 32 spines)"},
    {"hgx_h200_cluster", "hgx_h200", 400, 32,
     "N HGX H200 nodes on a rail-optimized NDR InfiniBand fat tree (8 rails, "
     "32 nodes per leaf, 32 spines)"},
    {"hgx_b200_cluster", "hgx_b200", 400, 32,
     "N HGX B200 nodes on a rail-optimized NDR InfiniBand fat tree (8 rails, "
     "32 nodes per leaf, 32 spines)"},
    {"gb200_nvl72_cluster", "gb200_nvl72", 400, 32,
     "N GB200 NVL72 racks on a rail-optimized NDR InfiniBand fat tree (72 "
     "rails, 32 racks per leaf, 32 spines)"},
};

// Options after the node count: ",nics=K,nic_gbps=G,fabric=ib|roce|efa".
constexpr absl::string_view kClusterOptionsHelp =
    "NAME:N[,nics=K][,nic_gbps=G][,fabric=ib|roce|efa][,levels=2|3][,pod=P]"
    "[,routing=dmodk|ecmp] "
    "(N from 1 to 16384 nodes; K NIC ports per node, dividing the node's "
    "NICs or a multiple of them; G Gb/s per port; InfiniBand with "
    "SHARP-capable switches, RoCE Ethernet or AWS EFA without; a two-level "
    "leaf-spine fat tree up to 4096 nodes, three levels (leaf-spine-core) "
    "beyond or with levels=3, in pods of P nodes, by default as many as "
    "fill half a spine's ports with leaves; every level non-blocking (1:1), "
    "leaves and spines of radix 2 x nodes per leaf; uplinks picked by "
    "destination (dmodk, as OpenSM's fat-tree routing; InfiniBand's "
    "default) or by a hash per flow (ecmp; Ethernet's default))";
// Clusters above this many nodes get three levels unless levels=2.
constexpr int64_t kMaxTwoLevelNodes = 4096;

// Gives `node` `nics` NIC ports. Fewer than it has: the first `nics` stay,
// and the GPUs whose NIC went away reach the network through the PCIe
// switch of the NIC that now serves them (GPUs 2k and 2k+1 share NIC k
// when half remain), over a PCIe link like the one that joined the removed
// NIC. A multiple of what it has: each NIC becomes that many ports beside
// it, on the same PCIe switch (as cloud nodes with 16 or 32 100 Gb/s ports
// for 8 GPUs).
absl::Status SetNics(TopologyDef& node, int64_t nics,
                     absl::string_view full_name) {
  const int64_t have = node.nics_size();
  if (nics < 1 || (have % nics != 0 && nics % have != 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("built-in topology '", full_name, "': nics=", nics,
                     " but a ", node.name(), " node has ", have,
                     " NIC ports; give a number that divides ", have,
                     " or a multiple of it"));
  }
  if (nics == have) return absl::OkStatus();
  // The PCIe switch each NIC hangs off, and that link.
  std::vector<std::string> nic_switch(have);
  std::vector<LinkDef> nic_link(have);
  for (int64_t i = 0; i < have; ++i) {
    const std::string& nic = node.nics(static_cast<int>(i)).name();
    for (const LinkDef& link : node.links()) {
      if (link.a() == nic || link.b() == nic) {
        nic_switch[i] = link.a() == nic ? link.b() : link.a();
        nic_link[i] = link;
      }
    }
    if (nic_switch[i].empty()) {
      return absl::InternalError(absl::StrCat("built-in node ", node.name(),
                                              ": NIC ", nic, " has no link"));
    }
  }
  if (nics > have) {
    TopologyDef more = node;
    more.clear_nics();
    const int64_t per = nics / have;
    for (int64_t i = 0; i < have; ++i) {
      const NicDef& nic = node.nics(static_cast<int>(i));
      for (int64_t j = 0; j < per; ++j) {
        NicDef* port = more.add_nics();
        *port = nic;
        if (j == 0) continue;
        port->set_name(absl::StrCat(nic.name(), "_", j));
        LinkDef* link = more.add_links();
        *link = nic_link[i];
        link->set_a(port->name());
        link->set_b(nic_switch[i]);
      }
    }
    node = std::move(more);
    return absl::OkStatus();
  }
  std::set<std::string> removed;
  for (int64_t i = nics; i < have; ++i) {
    removed.insert(node.nics(static_cast<int>(i)).name());
  }
  TopologyDef kept = node;
  kept.clear_nics();
  for (int64_t i = 0; i < nics; ++i) *kept.add_nics() = node.nics(i);
  kept.clear_links();
  for (const LinkDef& link : node.links()) {
    if (removed.count(link.a()) > 0 || removed.count(link.b()) > 0) continue;
    *kept.add_links() = link;
  }
  const int64_t share = have / nics;
  for (int64_t i = nics; i < have; ++i) {
    const int64_t serving = i / share;
    if (nic_switch[i] == nic_switch[serving]) continue;
    LinkDef* bridge = kept.add_links();
    *bridge = nic_link[i];
    bridge->set_a(nic_switch[i]);
    bridge->set_b(nic_switch[serving]);
  }
  node = std::move(kept);
  return absl::OkStatus();
}

absl::StatusOr<TopologyDef> GpuCluster(absl::string_view full_name,
                                       const ClusterKind& kind,
                                       absl::string_view arg) {
  std::vector<absl::string_view> parts = absl::StrSplit(arg, ',');
  int64_t nodes = 0;
  if (!absl::SimpleAtoi(parts[0], &nodes) || nodes < 1 ||
      nodes > kMaxClusterNodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("built-in topology '", full_name,
                     "': the number of nodes must be a whole number from 1 to ",
                     kMaxClusterNodes, " (e.g. ", kind.kind,
                     ":16); the form is ", kClusterOptionsHelp));
  }
  RailFabricOptions fabric;
  fabric.nodes = nodes;
  int64_t nics = 0;
  int64_t gbps = kind.nic_gbps;
  bool efa = false;
  int64_t levels = 0;  // 0: by the number of nodes
  int64_t pod = 0;
  for (size_t i = 1; i < parts.size(); ++i) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(parts[i], absl::MaxSplits('=', 1));
    bool ok = true;
    if (kv.first == "nics") {
      ok = absl::SimpleAtoi(kv.second, &nics) && nics > 0;
    } else if (kv.first == "nic_gbps") {
      ok = absl::SimpleAtoi(kv.second, &gbps) && gbps > 0 && gbps <= 100000;
    } else if (kv.first == "fabric") {
      ok = kv.second == "ib" || kv.second == "roce" || kv.second == "efa";
      fabric.ethernet = kv.second != "ib";
      efa = kv.second == "efa";
    } else if (kv.first == "routing") {
      ok = kv.second == "dmodk" || kv.second == "ecmp";
      fabric.routing =
          kv.second == "ecmp" ? RoutingDef::ECMP : RoutingDef::D_MOD_K;
    } else if (kv.first == "levels") {
      ok = absl::SimpleAtoi(kv.second, &levels) && (levels == 2 || levels == 3);
    } else if (kv.first == "pod") {
      ok = absl::SimpleAtoi(kv.second, &pod) && pod > 0 &&
           pod % kind.nodes_per_leaf == 0;
      if (!ok) {
        return absl::InvalidArgumentError(
            absl::StrCat("built-in topology '", full_name, "': pod=", kv.second,
                         " must be a positive multiple of the ",
                         kind.nodes_per_leaf, " nodes of a leaf"));
      }
    } else {
      ok = false;
    }
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("built-in topology '", full_name, "': cannot use '",
                       parts[i], "'; the form is ", kClusterOptionsHelp));
    }
  }
  const topologies::EmbeddedFile* file = FindFile(kind.node);
  if (file == nullptr) {
    return absl::InternalError(
        absl::StrCat("the node file ", kind.node, " is not embedded"));
  }
  ASSIGN_OR_RETURN(TopologyDef node, ParseFile(*file));
  if (nics > 0) {
    RETURN_IF_ERROR(SetNics(node, nics, full_name));
  }
  // Gb/s to bytes/s each way.
  fabric.port_bandwidth_bytes_per_second = static_cast<double>(gbps) * 1e9 / 8;
  fabric.nodes_per_leaf = kind.nodes_per_leaf;
  fabric.spines = kind.nodes_per_leaf;
  if (levels == 2 && pod > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("built-in topology '", full_name,
                     "': pods are part of three-level fabrics; drop levels=2 "
                     "or pod"));
  }
  if (levels == 0) levels = pod > 0 || nodes > kMaxTwoLevelNodes ? 3 : 2;
  if (levels == 2 && nodes > kMaxTwoLevelNodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("built-in topology '", full_name,
                     "': a two-level fat tree holds at "
                     "most ",
                     kMaxTwoLevelNodes, " nodes; drop levels=2"));
  }
  if (levels == 3) {
    // A spine's down ports (half of its radix, as many as a leaf's) filled
    // with leaves, one per rail for each group of nodes_per_leaf nodes.
    const int64_t rails = node.nics_size();
    fabric.nodes_per_pod =
        pod > 0 ? pod
                : kind.nodes_per_leaf *
                      std::max<int64_t>(1, kind.nodes_per_leaf / rails);
  }
  // Estimates from the datasheets' orders of magnitude: about 0.6 us
  // through an adapter, about 130 ns port to port through an InfiniBand
  // switch. Ethernet switches of the same generation (Spectrum-4) take
  // about as long; RoCE's extra cost is in the NIC's transport, which the
  // NCCL model charges per message.
  fabric.nic_latency_ns = 600;
  fabric.switch_latency_ns = 130;
  // AWS EFA: the SRD transport runs on the Nitro card and its libfabric
  // provider (aws-ofi-nccl), not in a verbs NIC. Fitted: 25 us per adapter
  // meets the aws-p4d-efa-eks latency points (2 x p4d, NCCL 2.8: 8 B
  // all-reduce in 167 us); no datasheet gives it.
  if (efa) fabric.nic_latency_ns = 25000;
  // Quantum and Quantum-2 switches run SHARP (in-network reduction);
  // Ethernet switches do not.
  fabric.in_network_reduction = !fabric.ethernet;
  fabric.name = std::string(full_name);
  return BuildRailOptimizedCluster(node, fabric);
}

// Parses "AxBxC" with `count` positive numbers.
bool ParseShape(absl::string_view text, size_t count, std::vector<int>& out) {
  std::vector<absl::string_view> parts = absl::StrSplit(text, 'x');
  if (parts.size() != count) return false;
  out.clear();
  for (absl::string_view part : parts) {
    int value = 0;
    if (!absl::SimpleAtoi(part, &value) || value < 1) return false;
    out.push_back(value);
  }
  return true;
}

std::string KnownNames() {
  std::vector<std::string> names;
  for (const BuiltinTopologyInfo& info : ListBuiltinTopologies()) {
    names.push_back(info.name);
  }
  return absl::StrJoin(names, ", ");
}

}  // namespace

std::vector<BuiltinTopologyInfo> ListBuiltinTopologies() {
  std::vector<BuiltinTopologyInfo> list;
  for (const topologies::EmbeddedFile& file :
       topologies::EmbeddedTopologyFiles()) {
    absl::string_view name = file.name;
    absl::ConsumeSuffix(&name, ".textproto");
    absl::StatusOr<TopologyDef> def = ParseFile(file);
    list.push_back({std::string(name),
                    def.ok() ? def->description() : "(does not parse)"});
  }
  for (const ClusterKind& kind : kClusterKinds) {
    list.push_back(
        {absl::StrCat(kind.kind, ":N"),
         absl::StrCat(kind.description, "; options: ", kClusterOptionsHelp)});
  }
  list.push_back({"tpu_v4:XxYxZ",
                  "TPU v4 slice: 3D mesh, torus when every axis is a "
                  "multiple of 4; 2 cores per chip, 2x2x1 chips per host"});
  list.push_back({"tpu_v5e:XxY",
                  "TPU v5e slice: 2D mesh, axes of 16 wrap; 1 core per chip, "
                  "8 chips per host"});
  return list;
}

absl::StatusOr<TopologyDef> BuiltinTopologyDef(absl::string_view name) {
  if (const topologies::EmbeddedFile* file = FindFile(name)) {
    return ParseFile(*file);
  }
  const size_t colon = name.find(':');
  const absl::string_view kind = name.substr(0, colon);
  const absl::string_view arg =
      colon == absl::string_view::npos ? "" : name.substr(colon + 1);
  for (const ClusterKind& cluster : kClusterKinds) {
    if (kind == cluster.kind) return GpuCluster(name, cluster, arg);
  }
  std::vector<int> shape;
  if (kind == "tpu_v4") {
    if (!ParseShape(arg, 3, shape)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "built-in topology '", name,
          "': give the slice shape as tpu_v4:XxYxZ, e.g. tpu_v4:4x4x4"));
    }
    return TpuV4Slice(shape[0], shape[1], shape[2]);
  }
  if (kind == "tpu_v5e") {
    if (!ParseShape(arg, 2, shape)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "built-in topology '", name,
          "': give the slice shape as tpu_v5e:XxY, e.g. tpu_v5e:4x4"));
    }
    return TpuV5eSlice(shape[0], shape[1]);
  }
  return absl::NotFoundError(absl::StrCat(
      "no built-in topology '", name, "'; the built-ins are ", KnownNames(),
      ", or the path of a topology .textproto file (Topology::FromFile "
      "in C++)"));
}

absl::StatusOr<Topology> BuiltinTopology(absl::string_view name) {
  if (const topologies::EmbeddedFile* file = FindFile(name)) {
    return Topology::FromTextProto(file->text,
                                   absl::StrCat(kFileDirectory, file->name));
  }
  ASSIGN_OR_RETURN(TopologyDef def, BuiltinTopologyDef(name));
  return Topology::FromDef(def, name);
}

std::vector<std::string> DeviceSpecPresetNames() {
  std::vector<std::string> names;
  for (const topologies::EmbeddedFile& file :
       topologies::EmbeddedTopologyFiles()) {
    absl::StatusOr<TopologyDef> def = ParseFile(file);
    if (!def.ok()) continue;
    for (const NamedDeviceSpec& spec : def->device_specs()) {
      names.push_back(spec.name());
    }
  }
  return names;
}

absl::StatusOr<DeviceSpec> DeviceSpecPreset(absl::string_view name) {
  for (const topologies::EmbeddedFile& file :
       topologies::EmbeddedTopologyFiles()) {
    ASSIGN_OR_RETURN(TopologyDef def, ParseFile(file));
    for (const NamedDeviceSpec& spec : def.device_specs()) {
      if (spec.name() == name) return spec.spec();
    }
  }
  return absl::NotFoundError(
      absl::StrCat("no device spec preset '", name, "'; the presets are ",
                   absl::StrJoin(DeviceSpecPresetNames(), ", ")));
}

}  // namespace simulator
