// Topology's construction from a TopologyDef: hosts, devices, switches,
// NICs, links and the TPU mesh, each checked as it is added. (Split from
// topology.cc to keep files short; see topology.h for the contract.)

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/status_macros.h"
#include "simulator/source_locations.h"
#include "simulator/topology.h"

namespace simulator {
namespace {

constexpr const char* kKnownDtypes[] = {
    "float64",       "float32",     "tf32", "float16", "bfloat16",
    "float8_e4m3fn", "float8_e5m2", "int8", "int32"};

bool IsKnownDtype(absl::string_view name) {
  for (const char* known : kKnownDtypes) {
    if (name == known) return true;
  }
  return false;
}

bool IsPositiveFinite(double value) {
  return std::isfinite(value) && value > 0;
}

// Returns "" if `spec` is usable, or what is wrong with it.
std::string SpecProblem(const DeviceSpec& spec) {
  if (spec.peak_flops().empty()) {
    return "has no peak_flops; add at least one entry, e.g. "
           "peak_flops { key: \"float32\" value: 19.5e12 }";
  }
  std::vector<std::string> keys;
  for (const auto& [key, value] : spec.peak_flops()) keys.push_back(key);
  std::sort(keys.begin(), keys.end());
  for (const std::string& key : keys) {
    if (!IsKnownDtype(key)) {
      return absl::StrCat("has peak_flops for unknown dtype '", key,
                          "'; use one of ", absl::StrJoin(kKnownDtypes, ", "));
    }
    const double value = spec.peak_flops().at(key);
    if (!IsPositiveFinite(value)) {
      return absl::StrCat("has peak_flops['", key, "'] = ", value,
                          "; it must be a positive number of FLOP/s");
    }
  }
  if (!IsPositiveFinite(spec.memory_bandwidth_bytes_per_second())) {
    return absl::StrCat("has memory_bandwidth_bytes_per_second = ",
                        spec.memory_bandwidth_bytes_per_second(),
                        "; it must be positive, in bytes/s (2 TB/s = 2e12)");
  }
  if (spec.memory_capacity_bytes() <= 0) {
    return absl::StrCat(
        "has memory_capacity_bytes = ", spec.memory_capacity_bytes(),
        "; it must be a positive number of bytes");
  }
  if (spec.compute_capability() < 0 || spec.compute_capability() > 1000) {
    return absl::StrCat("has compute_capability = ", spec.compute_capability(),
                        "; give the CUDA compute capability times ten (90 for "
                        "9.0), or 0");
  }
  if (spec.launch_overhead_ns() < 0 || spec.launch_overhead_ns() > 1e9) {
    return absl::StrCat("has launch_overhead_ns = ", spec.launch_overhead_ns(),
                        "; it must be between 0 and 1e9 nanoseconds");
  }
  return "";
}

MeshCoordinates ToCoordinates(const CoordinatesDef& def) {
  return MeshCoordinates{def.x(), def.y(), def.z(), def.core()};
}

// Latency values above one second are certainly a unit mistake.
constexpr double kMaxLatencyNs = 1e9;
// Slower links would overflow the router's path costs (picoseconds per MiB).
constexpr double kMinBandwidth = 1e3;

}  // namespace

absl::Status Topology::AddHosts(const SourceLocations& locations) {
  for (int i = 0; i < def_.hosts_size(); ++i) {
    const std::string& name = def_.hosts(i).name();
    if (name.empty()) {
      return locations.Error("hosts", i, "",
                             "a host has no name; give it a unique `name`");
    }
    auto [it, inserted] = host_by_name_.emplace(name, i);
    if (!inserted) {
      return locations.Error(
          "hosts", i, "name",
          absl::StrCat("duplicate host name '", name, "' (also at line ",
                       locations.Line("hosts", it->second), ")"));
    }
    host_names_.push_back(name);
  }
  return absl::OkStatus();
}

absl::Status Topology::AddNodes(const SourceLocations& locations) {
  // Named specifications first: devices refer to them.
  absl::flat_hash_map<std::string, int> spec_index;
  for (int i = 0; i < def_.device_specs_size(); ++i) {
    const NamedDeviceSpec& named = def_.device_specs(i);
    if (named.name().empty()) {
      return locations.Error("device_specs", i, "",
                             "a device spec has no name; give it a `name`");
    }
    if (!spec_index.emplace(named.name(), i).second) {
      return locations.Error(
          "device_specs", i, "name",
          absl::StrCat("duplicate device spec name '", named.name(), "'"));
    }
    const std::string problem = SpecProblem(named.spec());
    if (!problem.empty()) {
      return locations.Error(
          "device_specs", i, "spec",
          absl::StrCat("device spec '", named.name(), "' ", problem));
    }
  }
  for (int i = 0; i < def_.devices_size(); ++i) {
    const DeviceDef& device = def_.devices(i);
    if (device.spec_source_case() == DeviceDef::kSpecName &&
        !spec_index.contains(device.spec_name())) {
      std::vector<std::string> names;
      for (const NamedDeviceSpec& named : def_.device_specs()) {
        names.push_back(absl::StrCat("'", named.name(), "'"));
      }
      return locations.Error(
          "devices", i, "spec_name",
          absl::StrCat("device '", device.name(), "' names unknown spec '",
                       device.spec_name(), "'; device_specs has ",
                       names.empty() ? "none" : absl::StrJoin(names, ", ")));
    }
    RETURN_IF_ERROR(AddDevice(i, locations));
    if (device.spec_source_case() == DeviceDef::kSpecName) {
      devices_.back().spec =
          def_.device_specs(spec_index.at(device.spec_name())).spec();
    }
  }
  for (int i = 0; i < def_.switches_size(); ++i) {
    RETURN_IF_ERROR(AddSwitch(i, locations));
  }
  for (int i = 0; i < def_.nics_size(); ++i) {
    RETURN_IF_ERROR(AddNic(i, locations));
  }
  return absl::OkStatus();
}

namespace {

const char* FieldOf(NodeKind kind) {
  switch (kind) {
    case NodeKind::kDevice:
      return "devices";
    case NodeKind::kSwitch:
      return "switches";
    case NodeKind::kNic:
      return "nics";
  }
  return "devices";
}

// Checks the name and host shared by devices, switches and NICs and adds the
// node. `host_required` is false for switches.
absl::Status AddNamedNode(Node node, absl::string_view what,
                          absl::string_view host, bool host_required,
                          const absl::flat_hash_map<std::string, int>& hosts,
                          const SourceLocations& locations,
                          std::vector<Node>& nodes,
                          absl::flat_hash_map<std::string, int>& by_name) {
  const char* field = FieldOf(node.kind);
  if (node.name.empty()) {
    return locations.Error(field, node.def_index, "",
                           absl::StrCat("a ", what,
                                        " has no name; give it a unique "
                                        "`name`"));
  }
  auto existing = by_name.find(node.name);
  if (existing != by_name.end()) {
    const Node& other = nodes[static_cast<size_t>(existing->second)];
    return locations.Error(
        field, node.def_index, "name",
        absl::StrCat("duplicate name '", node.name, "': already used by the ",
                     FieldOf(other.kind), " entry at line ",
                     locations.Line(FieldOf(other.kind), other.def_index),
                     "; names of devices, switches and NICs must be unique"));
  }
  if (host.empty()) {
    if (host_required) {
      return locations.Error(
          field, node.def_index, "",
          absl::StrCat(what, " '", node.name,
                       "' has no host; set `host` to one of the hosts"));
    }
  } else {
    auto it = hosts.find(std::string(host));
    if (it == hosts.end()) {
      return locations.Error(
          field, node.def_index, "host",
          absl::StrCat(what, " '", node.name, "' names unknown host '", host,
                       "'; add `hosts { name: \"", host, "\" }`"));
    }
    node.host = it->second;
  }
  node.id = static_cast<int>(nodes.size());
  by_name.emplace(node.name, node.id);
  nodes.push_back(std::move(node));
  return absl::OkStatus();
}

}  // namespace

absl::Status Topology::AddDevice(int i, const SourceLocations& locations) {
  const DeviceDef& def = def_.devices(i);
  if (def.kind() == DeviceDef::KIND_UNSPECIFIED) {
    return locations.Error(
        "devices", i, "",
        absl::StrCat("device '", def.name(),
                     "' has no kind; set kind: CPU, GPU or TPU_CORE"));
  }
  DeviceInfo info;
  info.name = def.name();
  info.kind = def.kind();
  switch (def.spec_source_case()) {
    case DeviceDef::kSpec: {
      const std::string problem = SpecProblem(def.spec());
      if (!problem.empty()) {
        return locations.Error(
            "devices", i, "spec",
            absl::StrCat("device '", def.name(), "' spec ", problem));
      }
      info.spec = def.spec();
      break;
    }
    case DeviceDef::kSpecName:
      break;  // Resolved by AddNodes.
    case DeviceDef::SPEC_SOURCE_NOT_SET:
      return locations.Error(
          "devices", i, "",
          absl::StrCat("device '", def.name(),
                       "' has no spec; add `spec { ... }` or `spec_name` "
                       "naming one of device_specs"));
  }
  if (def.has_coordinates() && def.kind() != DeviceDef::TPU_CORE) {
    return locations.Error(
        "devices", i, "coordinates",
        absl::StrCat("device '", def.name(),
                     "' has coordinates, but only TPU_CORE devices do"));
  }
  if (def.kind() == DeviceDef::TPU_CORE) {
    if (!def.has_coordinates()) {
      return locations.Error(
          "devices", i, "",
          absl::StrCat("TPU_CORE device '", def.name(),
                       "' needs `coordinates { x: .. y: .. z: .. core: .. }`"));
    }
    info.coordinates = ToCoordinates(def.coordinates());
  }
  Node node;
  node.name = def.name();
  node.kind = NodeKind::kDevice;
  node.device = static_cast<int>(devices_.size());
  node.coordinates = info.coordinates;
  node.def_index = i;
  RETURN_IF_ERROR(AddNamedNode(std::move(node), "device", def.host(),
                               /*host_required=*/true, host_by_name_, locations,
                               nodes_, node_by_name_));
  info.node = nodes_.back().id;
  info.host = nodes_.back().host;
  devices_.push_back(std::move(info));
  return absl::OkStatus();
}

absl::Status Topology::AddSwitch(int i, const SourceLocations& locations) {
  const SwitchDef& def = def_.switches(i);
  if (def.kind() == SwitchDef::KIND_UNSPECIFIED) {
    return locations.Error(
        "switches", i, "",
        absl::StrCat("switch '", def.name(),
                     "' has no kind; set kind: NVSWITCH, PCIE_SWITCH, "
                     "IB_LEAF, IB_SPINE, ETHERNET_SWITCH or ICI_ROUTER"));
  }
  Node node;
  node.name = def.name();
  node.kind = NodeKind::kSwitch;
  node.switch_kind = def.kind();
  node.in_network_reduction = def.in_network_reduction();
  node.no_peer_to_peer = def.no_peer_to_peer();
  node.forwards_traffic = true;
  node.def_index = i;
  if (def.kind() == SwitchDef::ICI_ROUTER) {
    if (!def.has_coordinates()) {
      return locations.Error(
          "switches", i, "",
          absl::StrCat("ICI_ROUTER '", def.name(),
                       "' needs `coordinates { x: .. y: .. z: .. }`"));
    }
    node.coordinates = ToCoordinates(def.coordinates());
    node.coordinates->core = 0;
  } else if (def.has_coordinates()) {
    return locations.Error(
        "switches", i, "coordinates",
        absl::StrCat("switch '", def.name(),
                     "' has coordinates, but only ICI_ROUTER switches do"));
  }
  return AddNamedNode(std::move(node), "switch", def.host(),
                      /*host_required=*/false, host_by_name_, locations, nodes_,
                      node_by_name_);
}

absl::Status Topology::AddNic(int i, const SourceLocations& locations) {
  const NicDef& def = def_.nics(i);
  Node node;
  node.name = def.name();
  node.kind = NodeKind::kNic;
  node.forwards_traffic = true;
  node.def_index = i;
  RETURN_IF_ERROR(AddNamedNode(std::move(node), "NIC", def.host(),
                               /*host_required=*/true, host_by_name_, locations,
                               nodes_, node_by_name_));
  Node& nic = nodes_.back();
  if (!def.device().empty()) {
    auto it = node_by_name_.find(def.device());
    if (it == node_by_name_.end() ||
        nodes_[static_cast<size_t>(it->second)].kind != NodeKind::kDevice) {
      return locations.Error(
          "nics", i, "device",
          absl::StrCat("NIC '", def.name(), "' names unknown device '",
                       def.device(), "'"));
    }
    const Node& device = nodes_[static_cast<size_t>(it->second)];
    if (device.host != nic.host) {
      return locations.Error(
          "nics", i, "device",
          absl::StrCat("NIC '", def.name(), "' serves device '", def.device(),
                       "' of another host; pair a NIC with a device of its "
                       "own host"));
    }
    nic.paired_device = device.id;
  }
  return absl::OkStatus();
}

absl::Status Topology::AddLinks(const SourceLocations& locations) {
  links_.reserve(static_cast<size_t>(def_.links_size()) * 2);
  absl::flat_hash_map<std::pair<int, int>, int> links_per_pair;
  for (int i = 0; i < def_.links_size(); ++i) {
    const LinkDef& def = def_.links(i);
    int ends[2];
    const std::string* names[2] = {&def.a(), &def.b()};
    for (int e = 0; e < 2; ++e) {
      const char* field = e == 0 ? "a" : "b";
      if (names[e]->empty()) {
        return locations.Error(
            "links", i, "",
            absl::StrCat("link has no endpoint `", field,
                         "`; set both `a` and `b` to names of devices, "
                         "switches or NICs"));
      }
      auto it = node_by_name_.find(*names[e]);
      if (it == node_by_name_.end()) {
        return locations.Error(
            "links", i, field,
            absl::StrCat("link endpoint ", field, ": '", *names[e],
                         "' is not a device, switch or NIC of this "
                         "topology; declare it or fix the name"));
      }
      ends[e] = it->second;
    }
    const std::string what =
        absl::StrCat("link '", def.a(), "' <-> '", def.b(), "'");
    if (ends[0] == ends[1]) {
      return locations.Error("links", i, "b",
                             absl::StrCat(what, " joins a node to itself"));
    }
    if (def.kind() == LinkDef::KIND_UNSPECIFIED) {
      return locations.Error(
          "links", i, "",
          absl::StrCat(what,
                       " has no kind; set kind: NVLINK, NVSWITCH, PCIE, "
                       "ETHERNET, INFINIBAND, ICI or ON_CHIP"));
    }
    if (!IsPositiveFinite(def.bandwidth_bytes_per_second()) ||
        def.bandwidth_bytes_per_second() < kMinBandwidth) {
      return locations.Error(
          "links", i, "bandwidth_bytes_per_second",
          absl::StrCat(what, " has bandwidth_bytes_per_second = ",
                       def.bandwidth_bytes_per_second(),
                       "; it must be at least 1e3 (1 kB/s): bytes/s per "
                       "direction and lane (25 GB/s = 25e9)"));
    }
    if (!std::isfinite(def.latency_ns()) || def.latency_ns() < 0 ||
        def.latency_ns() > kMaxLatencyNs) {
      return locations.Error(
          "links", i, "latency_ns",
          absl::StrCat(what, " has latency_ns = ", def.latency_ns(),
                       "; it must be between 0 and 1e9 nanoseconds"));
    }
    if (def.count() < 0) {
      return locations.Error(
          "links", i, "count",
          absl::StrCat(what, " has count = ", def.count(),
                       "; it is a number of parallel lanes (0 means 1)"));
    }
    const double capacity =
        def.bandwidth_bytes_per_second() * std::max(def.count(), 1);
    const int64_t latency_ps = std::llround(def.latency_ns() * 1000.0);
    for (int direction = 0; direction < 2; ++direction) {
      Link link;
      link.id = static_cast<int>(links_.size());
      link.src = ends[direction];
      link.dst = ends[1 - direction];
      link.kind = def.kind();
      link.capacity_bytes_per_second = capacity;
      link.latency_ps = latency_ps;
      link.reverse = link.id + (direction == 0 ? 1 : -1);
      link.def_index = i;
      const int same_pair = ++links_per_pair[{link.src, link.dst}];
      link.name = absl::StrCat(nodes_[static_cast<size_t>(link.src)].name, "->",
                               nodes_[static_cast<size_t>(link.dst)].name);
      if (same_pair > 1) absl::StrAppend(&link.name, " #", same_pair);
      links_.push_back(std::move(link));
    }
  }
  return absl::OkStatus();
}

absl::Status Topology::AddMesh(const SourceLocations& locations) {
  if (!def_.has_mesh()) {
    for (const Node& node : nodes_) {
      if (node.coordinates.has_value()) {
        return locations.Error(
            FieldOf(node.kind), node.def_index, "coordinates",
            absl::StrCat("'", node.name,
                         "' has mesh coordinates but the topology has no "
                         "`mesh { x: .. y: .. z: .. cores_per_chip: .. }`"));
      }
    }
    return absl::OkStatus();
  }
  const MeshDef& def = def_.mesh();
  MeshShape shape{def.x(),
                  def.y(),
                  def.z(),
                  def.wrap_x(),
                  def.wrap_y(),
                  def.wrap_z(),
                  def.cores_per_chip()};
  constexpr int64_t kMaxChips = int64_t{1} << 20;
  const char* axis_names[3] = {"x", "y", "z"};
  const char* wrap_names[3] = {"wrap_x", "wrap_y", "wrap_z"};
  for (int axis = 0; axis < 3; ++axis) {
    if (shape.Size(axis) < 1) {
      return locations.Error(
          "mesh", -1, axis_names[axis],
          absl::StrCat("mesh ", axis_names[axis], " = ", shape.Size(axis),
                       "; every axis needs at least 1 chip"));
    }
    if (shape.Size(axis) > kMaxChips) {
      // Checked per axis first, so that the product below cannot overflow.
      return locations.Error(
          "mesh", -1, axis_names[axis],
          absl::StrCat("mesh ", axis_names[axis], " = ", shape.Size(axis),
                       "; at most ", kMaxChips, " chips are supported"));
    }
    if (shape.Wraps(axis) && shape.Size(axis) <= 2) {
      return locations.Error(
          "mesh", -1, wrap_names[axis],
          absl::StrCat("mesh ", wrap_names[axis], " is set but ",
                       axis_names[axis], " = ", shape.Size(axis),
                       "; wraparound needs more than 2 chips on the axis"));
    }
  }
  if (shape.NumChips() > kMaxChips) {
    return locations.Error(
        "mesh", -1, "",
        absl::StrCat("mesh has ", shape.NumChips(), " chips; at most ",
                     kMaxChips, " are supported"));
  }
  if (shape.cores_per_chip < 1) {
    return locations.Error("mesh", -1, "cores_per_chip",
                           "mesh cores_per_chip must be at least 1");
  }
  mesh_routers_.assign(static_cast<size_t>(shape.NumChips()), -1);
  absl::flat_hash_map<int64_t, int> core_at;
  for (const Node& node : nodes_) {
    if (!node.coordinates.has_value()) continue;
    const MeshCoordinates& c = *node.coordinates;
    const bool is_core = node.kind == NodeKind::kDevice;
    if (c.x < 0 || c.x >= shape.x || c.y < 0 || c.y >= shape.y || c.z < 0 ||
        c.z >= shape.z ||
        (is_core && (c.core < 0 || c.core >= shape.cores_per_chip))) {
      return locations.Error(
          FieldOf(node.kind), node.def_index, "coordinates",
          absl::StrCat("'", node.name, "' has coordinates (", c.x, ",", c.y,
                       ",", c.z, is_core ? absl::StrCat(", core ", c.core) : "",
                       ") outside the ", shape.x, "x", shape.y, "x", shape.z,
                       " mesh with ", shape.cores_per_chip,
                       " core(s) per chip"));
    }
    const int64_t chip =
        c.x + int64_t{shape.x} * (c.y + int64_t{shape.y} * c.z);
    int other = -1;
    if (is_core) {
      auto [it, inserted] =
          core_at.emplace(chip * shape.cores_per_chip + c.core, node.id);
      if (!inserted) other = it->second;
    } else {
      int& router = mesh_routers_[static_cast<size_t>(chip)];
      if (router >= 0) other = router;
      router = node.id;
    }
    if (other >= 0) {
      return locations.Error(
          FieldOf(node.kind), node.def_index, "coordinates",
          absl::StrCat("'", node.name, "' has the same coordinates as '",
                       nodes_[static_cast<size_t>(other)].name, "'"));
    }
  }
  mesh_ = shape;
  return absl::OkStatus();
}
}  // namespace simulator
