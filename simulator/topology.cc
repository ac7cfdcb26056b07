#include "simulator/topology.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/status_macros.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"
#include "simulator/source_locations.h"
#include "simulator/topology_checks.h"

namespace simulator {
namespace {

using ::google::protobuf::TextFormat;

// Syntax errors of a text-format file, as "source:line:column: message".
class CollectingErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  explicit CollectingErrorCollector(absl::string_view source_name)
      : source_name_(source_name) {}

  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    errors_.push_back(absl::StrCat(source_name_, ":", line + 1, ":", column + 1,
                                   ": ", message));
  }
  void AddWarning(int /*line*/, google::protobuf::io::ColumnNumber /*column*/,
                  const std::string& /*message*/) override {}

  const std::vector<std::string>& errors() const { return errors_; }

 private:
  std::string source_name_;
  std::vector<std::string> errors_;
};

const char* DeviceTypeName(DeviceDef::Kind kind) {
  switch (kind) {
    case DeviceDef::CPU:
      return "CPU";
    case DeviceDef::GPU:
      return "GPU";
    case DeviceDef::TPU_CORE:
      return "TPU";
    default:
      return "UNKNOWN";
  }
}

int KindRank(DeviceDef::Kind kind) {
  switch (kind) {
    case DeviceDef::CPU:
      return 0;
    case DeviceDef::GPU:
      return 1;
    default:
      return 2;
  }
}

}  // namespace

int MeshShape::Size(int axis) const {
  return axis == 0 ? x : (axis == 1 ? y : z);
}

bool MeshShape::Wraps(int axis) const {
  return axis == 0 ? wrap_x : (axis == 1 ? wrap_y : wrap_z);
}

absl::StatusOr<Topology> Topology::FromTextProto(
    absl::string_view text, absl::string_view source_name) {
  TopologyDef def;
  TextFormat::ParseInfoTree tree;
  CollectingErrorCollector errors(source_name);
  TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.WriteLocationsTo(&tree);
  if (!parser.ParseFromString(std::string(text), &def)) {
    std::string message = errors.errors().empty()
                              ? absl::StrCat(source_name, ": cannot be parsed")
                              : absl::StrJoin(errors.errors(), "\n");
    return absl::InvalidArgumentError(absl::StrCat(
        message,
        "\n(a topology file is a text-format simulator.TopologyDef; see "
        "simulator/topology.proto)"));
  }
  SourceLocations locations(source_name, &tree);
  return Build(def, locations);
}

absl::StatusOr<Topology> Topology::FromFile(absl::string_view path) {
  std::ifstream file{std::string(path)};
  if (!file) {
    return absl::NotFoundError(
        absl::StrCat("cannot open topology file '", path,
                     "'; check the path, or use a built-in topology by name"));
  }
  std::stringstream contents;
  contents << file.rdbuf();
  return FromTextProto(contents.str(), path);
}

absl::StatusOr<Topology> Topology::FromDef(const TopologyDef& def,
                                           absl::string_view source_name) {
  SourceLocations locations(source_name, nullptr);
  return Build(def, locations);
}

absl::StatusOr<Topology> Topology::Build(const TopologyDef& def,
                                         const SourceLocations& locations) {
  Topology topology;
  topology.source_name_ = locations.source_name();
  topology.def_ = def;
  topology.name_ = def.name().empty() ? topology.source_name_ : def.name();
  if (def.devices().empty()) {
    return locations.FileError(
        "the topology has no devices; add at least one `devices { ... }`");
  }
  absl::Status status = topology.AddHosts(locations);
  if (status.ok()) status = topology.AddNodes(locations);
  if (status.ok()) status = topology.AddLinks(locations);
  if (status.ok()) status = topology.AddMesh(locations);
  RETURN_IF_ERROR(status);

  topology.routing_policy_ = def.routing().policy();
  if (topology.routing_policy_ == RoutingDef::POLICY_UNSPECIFIED) {
    topology.routing_policy_ = RoutingDef::SHORTEST_PATH;
  }
  topology.ecmp_seed_ = def.routing().ecmp_seed();
  if (topology.routing_policy_ == RoutingDef::DIMENSION_ORDER &&
      !topology.mesh_.has_value()) {
    return locations.Error(
        "routing", -1, "policy",
        "routing policy DIMENSION_ORDER needs a `mesh { x: .. y: .. z: .. }` "
        "and ICI_ROUTER switches with coordinates");
  }
  topology.OrderDevices();
  topology.IndexLinks();
  status = CheckConnected(topology, locations);
  if (status.ok()) status = CheckDevicesReachEachOther(topology, locations);
  if (status.ok() && topology.routing_policy_ == RoutingDef::DIMENSION_ORDER) {
    status = CheckMeshRoutable(topology, locations);
  }
  RETURN_IF_ERROR(status);
  return topology;
}

void Topology::OrderDevices() {
  std::vector<DeviceInfo> ordered = std::move(devices_);
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const DeviceInfo& a, const DeviceInfo& b) {
                     if (a.host != b.host) return a.host < b.host;
                     return KindRank(a.kind) < KindRank(b.kind);
                   });
  devices_ = std::move(ordered);
  absl::flat_hash_map<std::pair<int, int>, int> next_local;
  for (size_t i = 0; i < devices_.size(); ++i) {
    DeviceInfo& info = devices_[i];
    info.index = static_cast<int>(i);
    info.local_index = next_local[{info.host, static_cast<int>(info.kind)}]++;
    nodes_[static_cast<size_t>(info.node)].device = info.index;
  }
}

void Topology::IndexLinks() {
  const size_t n = nodes_.size();
  out_offsets_.assign(n + 1, 0);
  in_offsets_.assign(n + 1, 0);
  for (const Link& link : links_) {
    ++out_offsets_[static_cast<size_t>(link.src) + 1];
    ++in_offsets_[static_cast<size_t>(link.dst) + 1];
  }
  for (size_t i = 0; i < n; ++i) {
    out_offsets_[i + 1] += out_offsets_[i];
    in_offsets_[i + 1] += in_offsets_[i];
  }
  out_link_ids_.assign(links_.size(), -1);
  in_link_ids_.assign(links_.size(), -1);
  std::vector<int> out_next(out_offsets_.begin(), out_offsets_.end() - 1);
  std::vector<int> in_next(in_offsets_.begin(), in_offsets_.end() - 1);
  // Links are visited in id order, so each node's lists are sorted.
  for (const Link& link : links_) {
    out_link_ids_[static_cast<size_t>(
        out_next[static_cast<size_t>(link.src)]++)] = link.id;
    in_link_ids_[static_cast<size_t>(
        in_next[static_cast<size_t>(link.dst)]++)] = link.id;
  }
}

absl::Span<const int> Topology::out_links(int node) const {
  const size_t begin = static_cast<size_t>(out_offsets_[node]);
  const size_t end = static_cast<size_t>(out_offsets_[node + 1]);
  return absl::MakeConstSpan(out_link_ids_).subspan(begin, end - begin);
}

absl::Span<const int> Topology::in_links(int node) const {
  const size_t begin = static_cast<size_t>(in_offsets_[node]);
  const size_t end = static_cast<size_t>(in_offsets_[node + 1]);
  return absl::MakeConstSpan(in_link_ids_).subspan(begin, end - begin);
}

int Topology::LinkBetween(int src, int dst) const {
  if (src < 0 || src >= num_nodes()) return -1;
  for (int id : out_links(src)) {
    if (links_[static_cast<size_t>(id)].dst == dst) return id;
  }
  return -1;
}

int64_t Topology::CountDevices(DeviceDef::Kind kind) const {
  return std::count_if(devices_.begin(), devices_.end(),
                       [kind](const DeviceInfo& d) { return d.kind == kind; });
}

absl::StatusOr<int> Topology::FindDevice(int host, DeviceDef::Kind kind,
                                         int local_index) const {
  for (const DeviceInfo& info : devices_) {
    if (info.host == host && info.kind == kind &&
        info.local_index == local_index) {
      return info.index;
    }
  }
  return absl::NotFoundError(absl::StrCat(
      "topology '", name(), "' has no ", DeviceTypeName(kind), ":", local_index,
      " on task ", host, " (it has ", num_hosts(), " host(s) and ",
      CountDevices(kind), " ", DeviceTypeName(kind), " device(s) in all)"));
}

std::string Topology::TfDeviceName(int device_index,
                                   absl::string_view job) const {
  const DeviceInfo& info = device(device_index);
  return absl::StrCat("/job:", job, "/replica:0/task:", info.host,
                      "/device:", DeviceTypeName(info.kind), ":",
                      info.local_index);
}

absl::StatusOr<int> Topology::FindNode(absl::string_view name) const {
  auto it = node_by_name_.find(std::string(name));
  if (it == node_by_name_.end()) {
    return absl::NotFoundError(absl::StrCat("topology '", this->name(),
                                            "' has no device, switch or "
                                            "NIC named '",
                                            name, "'"));
  }
  return it->second;
}

bool Topology::HasInNetworkReduction(int node) const {
  if (node < 0 || node >= num_nodes()) return false;
  const Node& n = nodes_[static_cast<size_t>(node)];
  return n.kind == NodeKind::kSwitch && n.in_network_reduction;
}

int Topology::MeshRouter(int x, int y, int z) const {
  if (!mesh_.has_value() || x < 0 || y < 0 || z < 0 || x >= mesh_->x ||
      y >= mesh_->y || z >= mesh_->z) {
    return -1;
  }
  const int64_t chip = x + int64_t{mesh_->x} * (y + int64_t{mesh_->y} * z);
  return mesh_routers_[static_cast<size_t>(chip)];
}

}  // namespace simulator
