// The live simulation behind a simulated platform: one engine with its
// network (flow) and compute (roofline) models, fault injection, the Chrome
// trace, the ActorRuntime that parks the platform's host threads on it, and
// per-device counters of compute and communication time.
//
// Model calls (LaunchKernel, StartTransfer, DeviceStatus, now) are for the
// driving thread only: start functions, posted work and engine events (see
// actor_runtime.h). The observers (Stats, GetSummary, TraceJson, WriteTrace)
// may be called from any other thread; they take the engine exclusively.
//
// This file takes devices and links as plain figures rather than from
// simulator/topology.h, so that it depends only on the models. (The
// compute model's device figures are a ComputeSpec: the name DeviceSpec
// belongs to the topology proto, and two types of one name in one
// namespace would break the link.)
//
// Example:
//   SimulatedDevice gpu{"/job:worker/replica:0/task:0/device:GPU:0", "box",
//                       {{"float32", 67e12}}, 3.35e12, int64_t{80} << 30,
//                       Microseconds(4)};
//   absl::StatusOr<std::unique_ptr<Simulation>> sim =
//       Simulation::Create({gpu}, /*links=*/{}, SimulationOptions());
//   // In a start function:
//   (*sim)->LaunchKernel(0, "MatMul", 2e12, 3e9, [wake](absl::Status s) {
//     wake(s);
//   });
#ifndef SIMULATOR_SIMULATION_H_
#define SIMULATOR_SIMULATION_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "simulator/actor_runtime.h"
#include "simulator/engine.h"
#include "simulator/faults.h"
#include "simulator/network_model.h"
#include "simulator/time.h"
#include "simulator/trace.h"

namespace simulator {

class ComputeModel;

// Engine actor of the events that end collectives (StartCollective): after
// the per-device counters', before the network's.
inline constexpr ActorId kCollectiveActor =
    kFirstReservedActor + (uint64_t{1} << 38);

// Engine actors of the per-device counters' own events (a kernel that
// starts later than it was launched): after the compute model's, before the
// network's.
inline constexpr ActorId kDeviceStatsActorBase =
    kFirstReservedActor + (uint64_t{1} << 36);

// A device's figures (those of the topology's device specification).
struct SimulatedDevice {
  // The full device name: the compute model's name, the trace's process and
  // the target name of device faults.
  std::string name;
  // The host's name, the target name of host faults.
  std::string host;
  std::map<std::string, double> peak_flops;  // dtype name -> FLOP/s
  double memory_bandwidth = 0;               // bytes/s
  int64_t memory_capacity = 0;               // bytes
  SimTime launch_overhead = 0;
};

// One directed link; its position in the list is its LinkId.
struct SimulatedLink {
  std::string name;
  double bandwidth = 0;  // bytes/s
  SimTime latency = 0;
};

struct SimulationOptions {
  // Record the Chrome trace (kernels per device, transfers per link).
  bool trace = true;
  FaultScript faults;
  // The peak_flops entry that kernels are charged at.
  std::string compute_dtype = "float32";
  ActorRuntimeOptions actors;
};

// What one device has done so far, in simulated time. Over an interval of
// length T, T - busy_time is the device's idle time.
struct SimDeviceStats {
  int64_t kernels = 0;             // completed kernels
  SimTime compute_time = 0;        // time with a kernel running
  SimTime communication_time = 0;  // time with a transfer to or from it
  SimTime busy_time = 0;           // time with either
  int64_t bytes_sent = 0;          // by completed transfers
  int64_t bytes_received = 0;
};

class Simulation {
 public:
  // INVALID_ARGUMENT for bad figures (naming the device or link) or a
  // device without a peak for options.compute_dtype; ALREADY_EXISTS for a
  // duplicate name; NOT_FOUND for a fault whose target does not exist.
  static absl::StatusOr<std::unique_ptr<Simulation>> Create(
      std::vector<SimulatedDevice> devices, std::vector<SimulatedLink> links,
      SimulationOptions options);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  ActorRuntime& runtime() { return *runtime_; }
  int64_t num_devices() const { return static_cast<int64_t>(stats_.size()); }

  // --- Driving thread only. ---

  SimTime now() const { return engine_.now(); }

  // Queues a kernel of `flops` (at the compute dtype's peak) and `bytes` of
  // memory traffic on the device's stream. `done` is called from an engine
  // event with OK, or UNAVAILABLE if the device dies first. Errors found at
  // once (a dead device, bad figures) are returned and `done` is dropped.
  absl::Status LaunchKernel(int device, std::string name, double flops,
                            double bytes,
                            absl::AnyInvocable<void(absl::Status)> done);

  // Starts a transfer of `bytes` from `src_device` to `dst_device` over
  // `route` (link ids; empty for a transfer that crosses no link). `done`
  // is called from an engine event on delivery (OK), or with UNAVAILABLE if
  // a link on the route is cut or an endpoint dies before delivery.
  // Errors found at once (a dead endpoint, a cut link) are returned and
  // `done` is dropped.
  absl::Status StartTransfer(int src_device, int dst_device,
                             const std::vector<int>& route, int64_t bytes,
                             std::string label,
                             absl::AnyInvocable<void(absl::Status)> done);

  // Charges a collective that a library runs as a whole (a simulated NCCL
  // call) to `devices` from now for `duration`: each device counts it as
  // communication time, and the trace gets a span named `name` on each
  // device's "collective" track with `args`. `done` is called from an engine
  // event at now + duration with OK, or UNAVAILABLE naming a device that
  // died (or whose host died) or one of `links` (link ids the collective
  // depends on) that was cut meanwhile. The collective loads no modeled
  // link: its time comes from the caller's model. Errors found at once (a
  // dead device, a cut link, an unknown index, a negative duration) are
  // returned and `done` is dropped.
  absl::Status StartCollective(const std::vector<int>& devices,
                               const std::vector<int>& links, SimTime duration,
                               std::string name, std::vector<TraceArg> args,
                               absl::AnyInvocable<void(absl::Status)> done);

  // OK if the device and its host are alive; UNAVAILABLE naming the dead
  // one otherwise.
  absl::Status DeviceStatus(int device) const;

  // --- Any thread but the driving one. ---

  // As created.
  const SimulationOptions& options() const { return options_; }
  SimDeviceStats Stats(int device) const;
  // Per-device busy time and per-link traffic up to now.
  Summary GetSummary() const;
  // Engine events run so far (flow starts, completions, kernels, ...).
  int64_t EventsProcessed() const;
  // Engine events still pending: 0 when no transfer, kernel or collective
  // is in flight and nothing is scheduled.
  int64_t PendingEvents() const;
  std::string TraceJson() const;
  absl::Status WriteTrace(const std::string& path) const;
  // Faults fired so far, as "<time>: <description>" lines.
  std::vector<std::string> FiredFaults() const;

 private:
  // Open intervals of activity on a device, for SimDeviceStats.
  struct Activity {
    SimDeviceStats totals;
    int64_t kernels_running = 0;
    int64_t transfers = 0;
    SimTime compute_since = 0;
    SimTime communication_since = 0;
    SimTime busy_since = 0;
  };
  struct PendingKernel;

  Simulation(SimulationOptions options, int64_t num_devices);
  void BeginCompute(int device);
  void EndCompute(int device);
  void BeginTransfer(int device);
  void EndTransfer(int device);

  const SimulationOptions options_;
  Engine engine_;
  Trace trace_;
  FaultInjector faults_;
  NetworkModel network_;
  std::unique_ptr<ComputeModel> compute_;
  std::unique_ptr<ActorRuntime> runtime_;
  std::vector<Activity> stats_;
  std::vector<std::string> device_names_;
};

}  // namespace simulator

#endif  // SIMULATOR_SIMULATION_H_
