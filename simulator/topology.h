// The in-memory graph of a simulated machine, cluster or TPU slice.
//
// A Topology is read from a text-format TopologyDef (simulator/topology.proto),
// checked, and turned into a graph the network model can use:
//   - nodes: devices (CPU, GPU, TPU core), switches and NICs;
//   - directed links with an id, a capacity in bytes/s and a latency in
//     picoseconds (each link of the file becomes two directed links, ids 2i
//     for a->b and 2i+1 for b->a; `count` parallel lanes multiply the
//     capacity);
//   - the devices in a canonical order (by host, then CPU, GPU, TPU core,
//     then file order) with a host (task) index and a per-host, per-kind
//     local index, so that a platform can name them
//     /job:worker/replica:0/task:<host>/device:GPU:<local index>;
//   - the TPU mesh shape and each TPU core's coordinates.
//
// Only switches and NICs forward traffic: a route may start or end at a
// device but never passes through one. (Model a CPU root complex that
// carries peer-to-peer PCIe traffic as a PCIE_SWITCH.)
//
// Loading fails with INVALID_ARGUMENT and a "file:line: problem" message for
// syntax errors, unknown names, duplicate names, missing or non-positive
// figures, a graph that is not connected, and TPU meshes that dimension-order
// routing cannot use.
//
// Example:
//   absl::StatusOr<simulator::Topology> topology =
//       simulator::Topology::FromFile("my_cluster.textproto");
//   if (!topology.ok()) return topology.status();
//   for (const simulator::DeviceInfo& device : topology->devices()) {
//     std::cout << topology->TfDeviceName(device.index) << " on node "
//               << topology->node(device.node).name << "\n";
//   }

#ifndef SIMULATOR_TOPOLOGY_H_
#define SIMULATOR_TOPOLOGY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "simulator/topology.pb.h"

namespace simulator {

class SourceLocations;

// Position of a TPU chip in the mesh and, for a core, its index on the chip.
struct MeshCoordinates {
  int x = 0;
  int y = 0;
  int z = 0;
  int core = 0;
};

// The chip mesh of a TPU slice. Axes are numbered 0 (x), 1 (y), 2 (z).
struct MeshShape {
  int x = 1;
  int y = 1;
  int z = 1;
  bool wrap_x = false;
  bool wrap_y = false;
  bool wrap_z = false;
  int cores_per_chip = 1;

  // Length of `axis` (0, 1 or 2).
  int Size(int axis) const;
  // Whether `axis` has wraparound links.
  bool Wraps(int axis) const;
  int64_t NumChips() const { return int64_t{x} * y * z; }
};

enum class NodeKind { kDevice, kSwitch, kNic };

// One vertex of the graph. Node ids are positions in Topology::nodes(): the
// file's devices first, then its switches, then its NICs, each in file order.
struct Node {
  int id = -1;
  std::string name;
  NodeKind kind = NodeKind::kDevice;
  // Index into Topology::host_names(), or -1 (a fabric switch).
  int host = -1;
  // kDevice: index into Topology::devices().
  int device = -1;
  // kSwitch: its kind and whether it reduces data in the network.
  SwitchDef::Kind switch_kind = SwitchDef::KIND_UNSPECIFIED;
  bool in_network_reduction = false;
  // kSwitch: a root complex that stages peer traffic in host memory.
  bool no_peer_to_peer = false;
  // kNic: node id of the device the NIC serves, or -1.
  int paired_device = -1;
  // TPU cores and ICI routers: the chip's position (and the core index).
  std::optional<MeshCoordinates> coordinates;
  // True for switches and NICs: routes may pass through them.
  bool forwards_traffic = false;
  // Position of the element in the file's devices, switches or nics list.
  int def_index = -1;
};

// One direction of a link.
struct Link {
  int id = -1;
  // "src->dst", unique in the topology (parallel links between the same
  // pair get " #2", " #3", ...).
  std::string name;
  int src = -1;
  int dst = -1;
  LinkDef::Kind kind = LinkDef::KIND_UNSPECIFIED;
  // bandwidth_bytes_per_second * count, in this direction.
  double capacity_bytes_per_second = 0;
  int64_t latency_ps = 0;
  // Id of the link in the opposite direction.
  int reverse = -1;
  // Position of the link in the file's links list.
  int def_index = -1;
};

struct DeviceInfo {
  // Position in Topology::devices() (the canonical order).
  int index = -1;
  int node = -1;
  std::string name;
  DeviceDef::Kind kind = DeviceDef::KIND_UNSPECIFIED;
  // Host (task) index.
  int host = -1;
  // Index among the devices of the same kind on the same host.
  int local_index = -1;
  // The device's figures, with spec_name resolved.
  DeviceSpec spec;
  // TPU cores only.
  std::optional<MeshCoordinates> coordinates;
};

class Topology {
 public:
  // Parses and checks a text-format TopologyDef. `source_name` (a file name)
  // starts every error message: "source_name:line: problem".
  static absl::StatusOr<Topology> FromTextProto(absl::string_view text,
                                                absl::string_view source_name);
  // Reads `path` and calls FromTextProto. NOT_FOUND if it cannot be read.
  static absl::StatusOr<Topology> FromFile(absl::string_view path);
  // Checks an already built TopologyDef (errors name the element instead of
  // a line).
  static absl::StatusOr<Topology> FromDef(const TopologyDef& def,
                                          absl::string_view source_name);

  // The file's `name`, or the source name where it has none.
  const std::string& name() const { return name_; }
  const std::string& source_name() const { return source_name_; }
  // The definition the topology was built from.
  const TopologyDef& def() const { return def_; }

  // Hosts in file order; a host's index is its task index.
  const std::vector<std::string>& host_names() const { return host_names_; }
  int64_t num_hosts() const { return static_cast<int64_t>(host_names_.size()); }

  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(int id) const { return nodes_[static_cast<size_t>(id)]; }
  int64_t num_nodes() const { return static_cast<int64_t>(nodes_.size()); }

  const std::vector<Link>& links() const { return links_; }
  const Link& link(int id) const { return links_[static_cast<size_t>(id)]; }
  int64_t num_links() const { return static_cast<int64_t>(links_.size()); }
  // Ids of the links leaving / entering `node`, in increasing order.
  absl::Span<const int> out_links(int node) const;
  absl::Span<const int> in_links(int node) const;
  // Lowest id of a link from `src` to `dst`, or -1 where there is none.
  int LinkBetween(int src, int dst) const;

  // Devices in canonical order.
  const std::vector<DeviceInfo>& devices() const { return devices_; }
  const DeviceInfo& device(int index) const {
    return devices_[static_cast<size_t>(index)];
  }
  int64_t num_devices() const { return static_cast<int64_t>(devices_.size()); }
  // Number of devices of `kind` on all hosts.
  int64_t CountDevices(DeviceDef::Kind kind) const;
  // Index into devices() of the local_index-th device of `kind` on `host`.
  // NOT_FOUND where there is no such device.
  absl::StatusOr<int> FindDevice(int host, DeviceDef::Kind kind,
                                 int local_index) const;
  // "/job:<job>/replica:0/task:<host>/device:<CPU|GPU|TPU>:<local index>".
  std::string TfDeviceName(int device_index,
                           absl::string_view job = "worker") const;

  // Node id of the device, switch or NIC called `name`; NOT_FOUND otherwise.
  absl::StatusOr<int> FindNode(absl::string_view name) const;

  // True if `node` is a switch that reduces data in the network.
  bool HasInNetworkReduction(int node) const;

  // The TPU mesh, if the file has one.
  const std::optional<MeshShape>& mesh() const { return mesh_; }
  // Node id of the ICI router of the chip at (x, y, z), or -1.
  int MeshRouter(int x, int y, int z) const;

  RoutingDef::Policy routing_policy() const { return routing_policy_; }
  uint64_t ecmp_seed() const { return ecmp_seed_; }

 private:
  Topology() = default;
  static absl::StatusOr<Topology> Build(const TopologyDef& def,
                                        const SourceLocations& locations);

  absl::Status AddHosts(const SourceLocations& locations);
  absl::Status AddNodes(const SourceLocations& locations);
  absl::Status AddDevice(int def_index, const SourceLocations& locations);
  absl::Status AddSwitch(int def_index, const SourceLocations& locations);
  absl::Status AddNic(int def_index, const SourceLocations& locations);
  absl::Status AddLinks(const SourceLocations& locations);
  absl::Status AddMesh(const SourceLocations& locations);
  void OrderDevices();
  void IndexLinks();

  std::string source_name_;
  std::string name_;
  TopologyDef def_;
  std::vector<std::string> host_names_;
  absl::flat_hash_map<std::string, int> host_by_name_;
  std::vector<Node> nodes_;
  absl::flat_hash_map<std::string, int> node_by_name_;
  std::vector<Link> links_;
  // out_link_ids_[out_offsets_[n] .. out_offsets_[n+1]) leave node n.
  std::vector<int> out_offsets_;
  std::vector<int> out_link_ids_;
  std::vector<int> in_offsets_;
  std::vector<int> in_link_ids_;
  std::vector<DeviceInfo> devices_;
  std::optional<MeshShape> mesh_;
  // Chip index (x + X * (y + Y * z)) -> router node id, or -1.
  std::vector<int> mesh_routers_;
  RoutingDef::Policy routing_policy_ = RoutingDef::SHORTEST_PATH;
  uint64_t ecmp_seed_ = 0;
};

}  // namespace simulator

#endif  // SIMULATOR_TOPOLOGY_H_
