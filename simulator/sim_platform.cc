// The simulated platform; see sim_platform.h.
#include "simulator/sim_platform.h"

#include <map>
#include <utility>
#include <vector>

#include "absl/base/call_once.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "devices/platform_registry.h"
#include "devices/status_macros.h"
#include "simulator/builtin_topologies.h"
#include "simulator/sim_nccl_communicator.h"
#include "simulator/sim_transport.h"

namespace simulator {
namespace {

constexpr absl::string_view kSpecPrefix = "sim:";

// The full device name a device fault's target means: any name FindDevice
// accepts, or the topology's node name. Unknown targets stay as they are
// (arming the faults reports them).
std::string ResolveDeviceTarget(const std::string& target,
                                const Topology& topology,
                                const std::vector<std::string>& names) {
  absl::StatusOr<size_t> index = devices::FindDeviceIndex(
      target, SimPlatform::kDefaultJobPrefix, names, "sim");
  if (index.ok()) return names[*index];
  absl::StatusOr<int> node = topology.FindNode(target);
  if (node.ok() && topology.node(*node).kind == NodeKind::kDevice) {
    return names[static_cast<size_t>(topology.node(*node).device)];
  }
  return target;
}

bool IsTopologyFile(absl::string_view topology) {
  return absl::EndsWith(topology, ".textproto") ||
         absl::EndsWith(topology, ".pbtxt") || absl::StrContains(topology, "/");
}

}  // namespace

absl::StatusOr<SimPlatformSpec> ParseSimPlatformSpec(absl::string_view spec) {
  if (!absl::StartsWith(spec, kSpecPrefix)) {
    return absl::InvalidArgumentError(
        absl::StrCat("simulated platform spec '", spec,
                     "' must start with 'sim:', e.g. "
                     "'sim:dgx_h100' or 'sim:my_cluster.textproto;timing'"));
  }
  std::vector<absl::string_view> parts =
      absl::StrSplit(spec.substr(kSpecPrefix.size()), ';');
  SimPlatformSpec parsed;
  parsed.topology = std::string(parts[0]);
  if (parsed.topology.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "simulated platform spec '", spec,
        "' names no topology; use "
        "'sim:<built-in name>' (e.g. sim:dgx_h100, sim:tpu_v4:2x2x1) or "
        "'sim:<file>.textproto'"));
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    const absl::string_view option = parts[i];
    if (option == "timing") {
      parsed.options.functional = false;
    } else if (option == "functional") {
      parsed.options.functional = true;
    } else if (option == "notrace") {
      parsed.options.trace = false;
    } else if (option == "trace") {
      parsed.options.trace = true;
    } else if (absl::StartsWith(option, "dtype=") && option.size() > 6) {
      parsed.options.compute_dtype = std::string(option.substr(6));
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown option '", option, "' in simulated platform spec '", spec,
          "'; options (after ';') are timing, functional, trace, notrace and "
          "dtype=<name>"));
    }
  }
  parsed.options.name = absl::StrCat(kSpecPrefix, parsed.topology);
  return parsed;
}

absl::StatusOr<std::unique_ptr<SimPlatform>> SimPlatform::FromSpec(
    absl::string_view spec) {
  ASSIGN_OR_RETURN(SimPlatformSpec parsed, ParseSimPlatformSpec(spec));
  ASSIGN_OR_RETURN(Topology topology, LoadSimTopology(parsed.topology));
  return Create(std::move(topology), std::move(parsed.options));
}

absl::StatusOr<Topology> LoadSimTopology(absl::string_view topology) {
  return IsTopologyFile(topology) ? Topology::FromFile(topology)
                                  : BuiltinTopology(topology);
}

absl::StatusOr<std::unique_ptr<SimPlatform>> SimPlatform::Create(
    Topology topology, SimPlatformOptions options) {
  if (topology.num_devices() == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "topology '", topology.name(), "' has no devices to simulate"));
  }
  RETURN_IF_ERROR(options.faults.Validate());
  std::vector<std::string> names;
  std::vector<SimulatedDevice> devices;
  for (const DeviceInfo& info : topology.devices()) {
    names.push_back(topology.TfDeviceName(info.index));
    SimulatedDevice device;
    device.name = names.back();
    device.host = topology.host_names()[static_cast<size_t>(info.host)];
    device.peak_flops.insert(info.spec.peak_flops().begin(),
                             info.spec.peak_flops().end());
    device.memory_bandwidth = info.spec.memory_bandwidth_bytes_per_second();
    device.memory_capacity = info.spec.memory_capacity_bytes();
    device.launch_overhead = Nanoseconds(info.spec.launch_overhead_ns());
    devices.push_back(std::move(device));
  }
  std::vector<SimulatedLink> links;
  for (const Link& link : topology.links()) {
    links.push_back(SimulatedLink{link.name, link.capacity_bytes_per_second,
                                  link.latency_ps});
  }
  SimulationOptions simulation;
  simulation.trace = options.trace;
  simulation.compute_dtype = options.compute_dtype;
  simulation.actors.deadlock_grace = options.deadlock_grace;
  for (Fault fault : options.faults.faults()) {
    if (TargetKindOf(fault.type) == FaultTargetKind::kDevice) {
      fault.target = ResolveDeviceTarget(fault.target, topology, names);
    }
    simulation.faults.Add(std::move(fault));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<Simulation> sim,
                   Simulation::Create(std::move(devices), std::move(links),
                                      std::move(simulation)));
  std::string name = options.name.empty()
                         ? absl::StrCat(kSpecPrefix, topology.name())
                         : options.name;
  auto context = std::make_shared<SimContext>(
      std::make_unique<Topology>(std::move(topology)), std::move(sim),
      std::move(names), options.functional, options.wall_timeout,
      std::move(name));
  return std::unique_ptr<SimPlatform>(new SimPlatform(std::move(context)));
}

SimPlatform::SimPlatform(std::shared_ptr<SimContext> context)
    : context_(std::move(context)) {
  for (int i = 0; i < context_->num_devices(); ++i) {
    devices_.push_back(std::make_unique<SimDevice>(context_, i));
  }
}

absl::StatusOr<size_t> SimPlatform::Index(absl::string_view name) const {
  return devices::FindDeviceIndex(name, kDefaultJobPrefix,
                                  context_->device_names(), this->name());
}

absl::StatusOr<devices::Device*> SimPlatform::FindDevice(
    absl::string_view name) {
  ASSIGN_OR_RETURN(size_t index, Index(name));
  return devices_[index].get();
}

absl::StatusOr<SimDevice*> SimPlatform::FindSimDevice(absl::string_view name) {
  ASSIGN_OR_RETURN(size_t index, Index(name));
  return devices_[index].get();
}

absl::StatusOr<std::vector<std::unique_ptr<devices::Transport>>>
SimPlatform::CreateTransportGroup(
    const std::vector<std::string>& device_names) {
  if (device_names.empty()) {
    return absl::InvalidArgumentError(
        "CreateTransportGroup needs at least one device name");
  }
  std::vector<int> indices;
  for (const std::string& name : device_names) {
    ASSIGN_OR_RETURN(size_t index, Index(name));
    indices.push_back(static_cast<int>(index));
  }
  return CreateSimTransportGroup(context_, std::move(indices));
}

absl::StatusOr<devices::TpuTopology> SimPlatform::GetTpuTopology() const {
  if (!mesh().has_value()) {
    return absl::UnimplementedError(
        absl::StrCat("platform ", name(),
                     " has no TPU mesh: its topology is not a TPU slice (try "
                     "sim:tpu_v4:2x2x1 or sim:tpu_v5e:4x4)"));
  }
  std::map<int, devices::TpuTopology::Task> tasks;
  for (const std::unique_ptr<SimDevice>& device : devices_) {
    const DeviceInfo& info = device->info();
    devices::TpuTopology::Task& task = tasks[info.host];
    if (device->kind() == devices::DeviceKind::kCPU && info.local_index == 0) {
      task.cpu_device = device->name();
    }
    if (device->kind() != devices::DeviceKind::kTPU) continue;
    if (!info.coordinates.has_value()) {
      return absl::InternalError(absl::StrCat("TPU device ", device->name(),
                                              " has no place on the mesh"));
    }
    const MeshCoordinates& at = *info.coordinates;
    const size_t ordinal = static_cast<size_t>(info.local_index);
    if (task.tpus.size() <= ordinal) task.tpus.resize(ordinal + 1);
    task.tpus[ordinal] = devices::TpuTopology::Core{
        devices::TpuCoordinates{at.x, at.y, at.z, at.core}, device->name()};
  }
  std::vector<devices::TpuTopology::Task> ordered;
  for (auto& [host, task] : tasks) {
    if (!task.tpus.empty()) ordered.push_back(std::move(task));
  }
  const MeshShape& m = *mesh();
  return devices::TpuTopology::Create({m.x, m.y, m.z, m.cores_per_chip},
                                      std::move(ordered));
}

absl::StatusOr<std::unique_ptr<devices::Communicator>>
SimPlatform::CreateCommunicator(const std::vector<std::string>& device_names) {
  if (device_names.empty()) {
    return absl::InvalidArgumentError(
        "CreateCommunicator needs at least one device name");
  }
  std::vector<int> indices;
  for (const std::string& name : device_names) {
    ASSIGN_OR_RETURN(size_t index, Index(name));
    indices.push_back(static_cast<int>(index));
  }
  return CreateSimNcclCommunicator(context_, std::move(indices));
}

absl::StatusOr<SimDeviceStats> SimPlatform::DeviceStats(
    absl::string_view name) const {
  ASSIGN_OR_RETURN(size_t index, Index(name));
  return context_->simulation().Stats(static_cast<int>(index));
}

void RegisterSimPlatform() {
  static absl::once_flag once;
  absl::call_once(once, [] {
    // Only a second copy of this function could register "sim", so the
    // status is OK or ALREADY_EXISTS.
    absl::Status registered = devices::RegisterPlatformFactory(
        "sim",
        [](absl::string_view spec)
            -> absl::StatusOr<std::unique_ptr<devices::Platform>> {
          ASSIGN_OR_RETURN(std::unique_ptr<SimPlatform> platform,
                           SimPlatform::FromSpec(spec));
          return std::unique_ptr<devices::Platform>(std::move(platform));
        });
    (void)registered;
  });
}

}  // namespace simulator
