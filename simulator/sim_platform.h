// The simulated platform: a devices::Platform whose devices are the devices
// of a topology (simulator/topology.h) running on one deterministic
// simulation (simulation.h, actor_runtime.h), so that a program written
// against devices:: runs unchanged on a simulated DGX, cluster or TPU slice.
//
// Devices are named as TensorFlow would name them, one task per host:
// /job:worker/replica:0/task:<host>/device:<CPU|GPU|TPU>:<i>; short names
// ("/gpu:3", "GPU:3") mean task 0. Kernels, copies and messages take their
// simulated time from the roofline, link and contention models; the thread
// that issues one is parked until it completes in simulated time (see
// sim_device.h and sim_transport.h for the details, and actor_runtime.h for
// how bound and unbound threads are ordered).
//
// Specs for devices::CreatePlatform (after RegisterSimPlatform()):
//   "sim:<topology>[;<option>]..."
// where <topology> is a built-in name (builtin_topologies.h: "laptop",
// "dgx_h100", "dgx_h100_cluster:2", "tpu_v4:2x2x1", ...) or the path of a
// topology file (ending in ".textproto" or ".pbtxt", or containing '/'),
// and the options, separated by ';', are:
//   timing         timing-only mode: shape-only tensors, no data moved
//   functional     real values (the default)
//   notrace        do not record the Chrome trace
//   dtype=<name>   the peak_flops entry kernels are charged at (default
//                  float32; e.g. dtype=bfloat16 for tensor-core training)
// e.g. "sim:dgx_h100;timing;dtype=bfloat16". The platform's name is the
// spec without its options ("sim:dgx_h100").
//
// Example:
//   simulator::RegisterSimPlatform();
//   auto platform = devices::CreatePlatform("sim:dgx_h100");
//   devices::Device* gpu3 = *(*platform)->FindDevice("/gpu:3");
//   // Or, with the simulator's own accessors:
//   absl::StatusOr<std::unique_ptr<simulator::SimPlatform>> sim =
//       simulator::SimPlatform::Create(*simulator::BuiltinTopology("tpu_v4:2x2x1"));
//   const simulator::MeshCoordinates& at =
//       *(*(*sim)->FindSimDevice("TPU:3"))->coordinates();
//   ... run a step ...
//   simulator::SimTime t = (*sim)->now();
//   (*sim)->WriteTrace("/tmp/step.json").IgnoreError();
#ifndef SIMULATOR_SIM_PLATFORM_H_
#define SIMULATOR_SIM_PLATFORM_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "devices/communicator.h"
#include "devices/device.h"
#include "devices/platform.h"
#include "devices/transport.h"
#include "simulator/faults.h"
#include "simulator/sim_context.h"
#include "simulator/sim_device.h"
#include "simulator/simulation.h"
#include "simulator/time.h"
#include "simulator/topology.h"
#include "simulator/trace.h"

namespace simulator {

struct SimPlatformOptions {
  // Real values in host memory (true) or shapes and time only (false).
  bool functional = true;
  // Faults to inject. Device targets may be given by any name FindDevice
  // accepts or by the topology's node name ("gpu3"); hosts by the
  // topology's host names; links by the topology's link names
  // ("gpu0->nvswitch").
  FaultScript faults;
  // Record the Chrome trace.
  bool trace = true;
  // The peak_flops entry that kernels are charged at; every device needs one.
  std::string compute_dtype = "float32";
  // Host-time limit of operations that take no timeout (kernels, copies).
  absl::Duration wall_timeout = devices::kCopyTimeout;
  // Host time with every bound thread blocked and nothing to simulate
  // before waits fail as deadlocked.
  absl::Duration deadlock_grace = absl::Milliseconds(250);
  // The platform's name; empty means "sim:<topology name>".
  std::string name;
};

// A parsed "sim:" spec.
struct SimPlatformSpec {
  std::string topology;  // built-in name or file path
  SimPlatformOptions options;
};

// INVALID_ARGUMENT for a spec without the "sim:" prefix, with an empty
// topology or an unknown option.
absl::StatusOr<SimPlatformSpec> ParseSimPlatformSpec(absl::string_view spec);

// The topology a spec's topology part names: a file where it ends in
// .textproto or .pbtxt or holds a '/', else a built-in (BuiltinTopology).
// The errors of Topology::FromFile and BuiltinTopology.
absl::StatusOr<Topology> LoadSimTopology(absl::string_view topology);

class SimPlatform : public devices::Platform {
 public:
  // Job, replica and task that short device names get.
  static constexpr absl::string_view kDefaultJobPrefix =
      "/job:worker/replica:0/task:0";

  // A platform over `topology`. INVALID_ARGUMENT for a topology without
  // devices, a device without a peak for options.compute_dtype or a bad
  // fault script; NOT_FOUND for a fault whose target does not exist.
  static absl::StatusOr<std::unique_ptr<SimPlatform>> Create(
      Topology topology, SimPlatformOptions options = {});
  // A platform from a "sim:" spec (see the file comment). Errors of
  // ParseSimPlatformSpec, of loading the topology (NOT_FOUND for an unknown
  // built-in or a missing file) and of Create.
  static absl::StatusOr<std::unique_ptr<SimPlatform>> FromSpec(
      absl::string_view spec);

  SimPlatform(const SimPlatform&) = delete;
  SimPlatform& operator=(const SimPlatform&) = delete;

  const std::string& name() const override { return context_->platform_name(); }
  std::vector<std::string> DeviceNames() const override {
    return context_->device_names();
  }
  absl::StatusOr<devices::Device*> FindDevice(absl::string_view name) override;
  absl::StatusOr<std::vector<std::unique_ptr<devices::Transport>>>
  CreateTransportGroup(const std::vector<std::string>& device_names) override;
  // A simulated NCCL communicator over GPUs (sim_nccl_communicator.h), rank
  // i being device_names[i]. INVALID_ARGUMENT for an empty list or a device
  // named twice; NOT_FOUND (as FindDevice) for an unknown name;
  // FAILED_PRECONDITION for a CPU or TPU
  // device (those run collectives over CreateTransportGroup, e.g.
  // distribute::collective::ScheduleCommunicator).
  absl::StatusOr<std::unique_ptr<devices::Communicator>> CreateCommunicator(
      const std::vector<std::string>& device_names) override;
  // A TPU slice's mesh and each TPU core's place on it, task by task (a task
  // per host); UNIMPLEMENTED for a topology without a TPU mesh.
  absl::StatusOr<devices::TpuTopology> GetTpuTopology() const override;

  // --- The simulator's view. ---

  // FindDevice, typed. Same errors.
  absl::StatusOr<SimDevice*> FindSimDevice(absl::string_view name);
  // Device `index` in the topology's canonical order (DeviceNames order).
  SimDevice* device(int index) {
    return devices_[static_cast<size_t>(index)].get();
  }
  int64_t num_devices() const { return static_cast<int64_t>(devices_.size()); }
  const Topology& topology() const { return context_->topology(); }
  // The simulation's shared state (engine, network, routes, actor runtime),
  // for tools that drive the simulation themselves: a schedule replayed as
  // one state machine per rank instead of a host thread each.
  SimContext& context() const { return *context_; }
  // The TPU chip mesh, for TPU slices (SimDevice::coordinates() places each
  // core on it).
  const std::optional<MeshShape>& mesh() const { return topology().mesh(); }
  bool functional() const { return context_->functional(); }

  // The current simulated time. Thread-safe.
  SimTime now() const { return context_->runtime().Now(); }
  // The Chrome trace so far: one track per device (kernels) and per link
  // (transfers). Empty of events with options.trace false.
  std::string TraceJson() const { return context_->simulation().TraceJson(); }
  absl::Status WriteTrace(const std::string& path) const {
    return context_->simulation().WriteTrace(path);
  }
  // Busy and idle time per device, bytes and utilisation per link, up to
  // now().
  Summary RunSummary() const { return context_->simulation().GetSummary(); }
  // Engine events run so far: the simulation's work, for scale figures.
  int64_t EventsProcessed() const {
    return context_->simulation().EventsProcessed();
  }
  // What device `name` has done so far: compute and communication time
  // charged, bytes moved. Errors of FindDevice.
  absl::StatusOr<SimDeviceStats> DeviceStats(absl::string_view name) const;
  // The faults fired so far, one line each.
  std::vector<std::string> FiredFaults() const {
    return context_->simulation().FiredFaults();
  }

 private:
  explicit SimPlatform(std::shared_ptr<SimContext> context);
  absl::StatusOr<size_t> Index(absl::string_view name) const;

  const std::shared_ptr<SimContext> context_;
  std::vector<std::unique_ptr<SimDevice>> devices_;
};

// Registers the "sim" prefix with the global platform registry (specs as
// above). Idempotent and thread-safe.
void RegisterSimPlatform();

}  // namespace simulator

#endif  // SIMULATOR_SIM_PLATFORM_H_
