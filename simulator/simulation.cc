// The live simulation behind a simulated platform; see simulation.h.
#include "simulator/simulation.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "simulator/compute_model.h"

namespace simulator {

// A launched kernel, as the device counters see it: it may start later than
// it was launched (behind another kernel of the device).
struct Simulation::PendingKernel {
  int device = 0;
  bool started = false;
  EventId start_event = 0;
};

Simulation::Simulation(SimulationOptions options, int64_t num_devices)
    : options_(std::move(options)),
      faults_(engine_, options_.faults),
      network_(engine_, options_.trace ? &trace_ : nullptr, &faults_),
      compute_(std::make_unique<ComputeModel>(
          engine_, options_.trace ? &trace_ : nullptr, &faults_)),
      runtime_(std::make_unique<ActorRuntime>(engine_, options_.actors)),
      stats_(static_cast<size_t>(num_devices)) {}

Simulation::~Simulation() = default;

absl::StatusOr<std::unique_ptr<Simulation>> Simulation::Create(
    std::vector<SimulatedDevice> devices, std::vector<SimulatedLink> links,
    SimulationOptions options) {
  const std::string dtype = options.compute_dtype;
  std::unique_ptr<Simulation> sim(
      new Simulation(std::move(options), static_cast<int64_t>(devices.size())));
  for (size_t i = 0; i < links.size(); ++i) {
    SimulatedLink& link = links[i];
    ASSIGN_OR_RETURN(LinkId id,
                     sim->network_.AddLink(LinkSpec{
                         std::move(link.name), link.bandwidth, link.latency}));
    if (id != static_cast<LinkId>(i)) {
      return absl::InternalError(
          absl::StrCat("the network model numbered link ", i, " as ", id));
    }
  }
  for (SimulatedDevice& device : devices) {
    if (device.peak_flops.count(dtype) == 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device ", device.name, " has no peak FLOP/s for '", dtype,
          "', the dtype kernels are charged at; give its specification a "
          "peak_flops entry for it or choose another compute dtype (e.g. "
          "the 'dtype=bfloat16' option of a sim: spec)"));
    }
    ComputeSpec spec;
    spec.model = device.name;
    spec.peak_flops = std::move(device.peak_flops);
    spec.memory_bandwidth = device.memory_bandwidth;
    spec.memory_capacity = device.memory_capacity;
    spec.launch_overhead = device.launch_overhead;
    sim->device_names_.push_back(device.name);
    RETURN_IF_ERROR(sim->compute_
                        ->AddDevice(std::move(device.name),
                                    std::move(device.host), std::move(spec))
                        .status());
  }
  RETURN_IF_ERROR(sim->faults_.Arm());
  return sim;
}

void Simulation::BeginCompute(int device) {
  Activity& a = stats_[static_cast<size_t>(device)];
  const SimTime now = engine_.now();
  if (a.kernels_running == 0) a.compute_since = now;
  if (a.kernels_running == 0 && a.transfers == 0) a.busy_since = now;
  ++a.kernels_running;
}

void Simulation::EndCompute(int device) {
  Activity& a = stats_[static_cast<size_t>(device)];
  const SimTime now = engine_.now();
  --a.kernels_running;
  if (a.kernels_running == 0) a.totals.compute_time += now - a.compute_since;
  if (a.kernels_running == 0 && a.transfers == 0) {
    a.totals.busy_time += now - a.busy_since;
  }
}

void Simulation::BeginTransfer(int device) {
  Activity& a = stats_[static_cast<size_t>(device)];
  const SimTime now = engine_.now();
  if (a.transfers == 0) a.communication_since = now;
  if (a.kernels_running == 0 && a.transfers == 0) a.busy_since = now;
  ++a.transfers;
}

void Simulation::EndTransfer(int device) {
  Activity& a = stats_[static_cast<size_t>(device)];
  const SimTime now = engine_.now();
  --a.transfers;
  if (a.transfers == 0) {
    a.totals.communication_time += now - a.communication_since;
  }
  if (a.kernels_running == 0 && a.transfers == 0) {
    a.totals.busy_time += now - a.busy_since;
  }
}

absl::Status Simulation::LaunchKernel(
    int device, std::string name, double flops, double bytes,
    absl::AnyInvocable<void(absl::Status)> done) {
  if (device < 0 || device >= num_devices()) {
    return absl::InvalidArgumentError(
        absl::StrCat("LaunchKernel on unknown device index ", device));
  }
  auto pending = std::make_shared<PendingKernel>();
  pending->device = device;
  KernelCost cost{std::move(name), options_.compute_dtype, flops, bytes};
  const KernelCost probe = cost;
  ASSIGN_OR_RETURN(SimTime duration, compute_->KernelTime(device, probe));
  ASSIGN_OR_RETURN(
      SimTime end,
      compute_->Launch(
          device, std::move(cost),
          [this, pending,
           done = std::move(done)](const KernelResult& result) mutable {
            if (pending->started) {
              EndCompute(pending->device);
              if (result.status.ok()) {
                ++stats_[static_cast<size_t>(pending->device)].totals.kernels;
              }
            } else {
              engine_.Cancel(pending->start_event);
            }
            done(result.status);
          }));
  // The launch may have fired a straggler fault: take the time it ran with.
  absl::StatusOr<SimTime> charged = compute_->KernelTime(device, probe);
  const SimTime start = end - (charged.ok() ? *charged : duration);
  if (start <= engine_.now()) {
    pending->started = true;
    BeginCompute(device);
  } else {
    absl::StatusOr<EventId> event = engine_.ScheduleAt(
        start, kDeviceStatsActorBase + static_cast<ActorId>(device),
        [this, pending] {
          pending->started = true;
          BeginCompute(pending->device);
        });
    if (event.ok()) pending->start_event = *event;
  }
  return absl::OkStatus();
}

absl::Status Simulation::DeviceStatus(int device) const {
  return compute_->DeviceStatus(device);
}

absl::Status Simulation::StartTransfer(
    int src_device, int dst_device, const std::vector<int>& route,
    int64_t bytes, std::string label,
    absl::AnyInvocable<void(absl::Status)> done) {
  for (int device : {src_device, dst_device}) {
    RETURN_IF_ERROR(compute_->DeviceStatus(device));
  }
  FlowSpec spec;
  spec.route.assign(route.begin(), route.end());
  spec.bytes = bytes;
  spec.start_time = engine_.now();
  spec.label = std::move(label);
  absl::StatusOr<FlowId> flow = network_.StartFlow(
      std::move(spec),
      [this, src_device, dst_device, bytes,
       done = std::move(done)](const FlowResult& result) mutable {
        EndTransfer(src_device);
        if (dst_device != src_device) EndTransfer(dst_device);
        absl::Status status = result.status;
        for (int device : {src_device, dst_device}) {
          if (!status.ok()) break;
          status = compute_->DeviceStatus(device);
        }
        if (status.ok()) {
          stats_[static_cast<size_t>(src_device)].totals.bytes_sent += bytes;
          stats_[static_cast<size_t>(dst_device)].totals.bytes_received +=
              bytes;
        }
        done(std::move(status));
      });
  RETURN_IF_ERROR(flow.status());
  BeginTransfer(src_device);
  if (dst_device != src_device) BeginTransfer(dst_device);
  return absl::OkStatus();
}

absl::Status Simulation::StartCollective(
    const std::vector<int>& devices, const std::vector<int>& links,
    SimTime duration, std::string name, std::vector<TraceArg> args,
    absl::AnyInvocable<void(absl::Status)> done) {
  if (duration < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("collective '", name, "' has a negative duration"));
  }
  for (int device : devices) {
    if (device < 0 || device >= num_devices()) {
      return absl::InvalidArgumentError(
          absl::StrCat("collective '", name, "' names unknown device index ",
                       device, ", outside [0, ", num_devices(), ")"));
    }
    RETURN_IF_ERROR(compute_->DeviceStatus(device));
  }
  for (int link : links) {
    absl::Status up = network_.LinkStatus(link);
    if (!up.ok()) {
      return absl::Status(
          up.code(), absl::StrCat("collective '", name, "': ", up.message()));
    }
  }
  const SimTime start = engine_.now();
  absl::StatusOr<EventId> event = engine_.ScheduleAt(
      start + duration, kCollectiveActor,
      [this, devices, links, name, done = std::move(done)]() mutable {
        absl::Status status;
        for (int device : devices) {
          EndTransfer(device);
          if (status.ok()) status = compute_->DeviceStatus(device);
        }
        for (size_t i = 0; i < links.size() && status.ok(); ++i) {
          absl::Status up = network_.LinkStatus(links[i]);
          if (!up.ok()) {
            status = absl::Status(
                up.code(), absl::StrCat("collective '", name,
                                        "' did not complete: ", up.message()));
          }
        }
        done(std::move(status));
      });
  RETURN_IF_ERROR(event.status());
  for (int device : devices) {
    BeginTransfer(device);
    if (options_.trace) {
      const Trace::TrackId track = trace_.Track(
          device_names_[static_cast<size_t>(device)], "collective");
      trace_
          .AddComplete(track, name, "collective", start, start + duration, args)
          .IgnoreError();
    }
  }
  return absl::OkStatus();
}

SimDeviceStats Simulation::Stats(int device) const {
  SimDeviceStats stats;
  if (device < 0 || device >= num_devices()) return stats;
  runtime_->WithEngine([&] {
    const Activity& a = stats_[static_cast<size_t>(device)];
    const SimTime now = engine_.now();
    stats = a.totals;
    if (a.kernels_running > 0) stats.compute_time += now - a.compute_since;
    if (a.transfers > 0) {
      stats.communication_time += now - a.communication_since;
    }
    if (a.kernels_running > 0 || a.transfers > 0) {
      stats.busy_time += now - a.busy_since;
    }
  });
  return stats;
}

Summary Simulation::GetSummary() const {
  Summary summary;
  runtime_->WithEngine([&] {
    summary.end_time = engine_.now();
    compute_->AddToSummary(summary);
    network_.AddToSummary(summary);
  });
  return summary;
}

int64_t Simulation::EventsProcessed() const {
  int64_t events = 0;
  runtime_->WithEngine([&] { events = engine_.events_processed(); });
  return events;
}

int64_t Simulation::PendingEvents() const {
  int64_t pending = 0;
  runtime_->WithEngine([&] { pending = engine_.pending(); });
  return pending;
}

std::string Simulation::TraceJson() const {
  std::string json;
  runtime_->WithEngine([&] { json = trace_.ToJson(); });
  return json;
}

absl::Status Simulation::WriteTrace(const std::string& path) const {
  absl::Status status;
  runtime_->WithEngine([&] { status = trace_.WriteJson(path); });
  return status;
}

std::vector<std::string> Simulation::FiredFaults() const {
  std::vector<std::string> fired;
  runtime_->WithEngine([&] {
    for (const FaultInjector::Fired& f : faults_.fired()) {
      fired.push_back(
          absl::StrCat(FormatTime(f.time), ": ", f.fault.Describe()));
    }
  });
  return fired;
}

}  // namespace simulator
