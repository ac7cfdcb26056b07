// Compute model; see compute_model.h.
#include "simulator/compute_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "devices/status_macros.h"
#include "simulator/engine.h"
#include "simulator/faults.h"
#include "simulator/time.h"
#include "simulator/trace.h"

namespace simulator {
namespace {

bool FinitePositive(double x) { return std::isfinite(x) && x > 0; }

// Largest double that llround converts to a valid SimTime.
constexpr double kMaxPicoseconds = 9.2e18;

}  // namespace

absl::Status ValidateDeviceSpec(const ComputeSpec& spec) {
  for (const auto& [dtype, flops] : spec.peak_flops) {
    if (dtype.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("device spec '", spec.model,
                       "' has a peak FLOP/s with an empty "
                       "dtype name"));
    }
    if (!FinitePositive(flops)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device spec '", spec.model, "' has peak ", flops, " FLOP/s for ",
          dtype, "; give a finite rate > 0 or leave the dtype out"));
    }
  }
  if (!FinitePositive(spec.memory_bandwidth)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device spec '", spec.model, "' has memory bandwidth ",
        spec.memory_bandwidth, " bytes/s; give a finite bandwidth > 0"));
  }
  if (spec.memory_capacity < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("device spec '", spec.model,
                     "' has negative memory capacity ", spec.memory_capacity));
  }
  if (spec.launch_overhead < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device spec '", spec.model, "' has negative launch overhead ",
        FormatTime(spec.launch_overhead)));
  }
  return absl::OkStatus();
}

absl::StatusOr<SimTime> RooflineTime(const ComputeSpec& spec,
                                     const KernelCost& cost, double straggler) {
  if (!(std::isfinite(cost.flops) && cost.flops >= 0) ||
      !(std::isfinite(cost.bytes) && cost.bytes >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel '", cost.name, "' has ", cost.flops, " FLOPs and ",
                     cost.bytes, " bytes; both must be finite and >= 0"));
  }
  if (!FinitePositive(straggler)) {
    return absl::InvalidArgumentError(
        absl::StrCat("straggler factor ", straggler, " for kernel '", cost.name,
                     "' must be finite and > 0"));
  }
  double compute_ps = 0;
  if (cost.flops > 0) {
    auto it = spec.peak_flops.find(cost.dtype);
    if (it == spec.peak_flops.end()) {
      std::string known;
      for (const auto& [dtype, flops] : spec.peak_flops) {
        absl::StrAppend(&known, known.empty() ? "" : ", ", dtype);
      }
      return absl::NotFoundError(absl::StrCat(
          "device '", spec.model, "' has no peak FLOP/s for dtype '",
          cost.dtype, "' (kernel '", cost.name,
          "'); it has: ", known.empty() ? "none" : known,
          ". Add the dtype to "
          "ComputeSpec::peak_flops"));
    }
    if (!FinitePositive(it->second)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device '", spec.model, "' has peak ", it->second,
          " FLOP/s for dtype '", cost.dtype, "'; it must be finite and > 0"));
    }
    compute_ps = cost.flops * kPicosecondsPerSecond / it->second;
  }
  double memory_ps = 0;
  if (cost.bytes > 0) {
    if (!FinitePositive(spec.memory_bandwidth)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device '", spec.model, "' has memory bandwidth ",
          spec.memory_bandwidth, " bytes/s; it must be finite and > 0"));
    }
    memory_ps = cost.bytes * kPicosecondsPerSecond / spec.memory_bandwidth;
  }
  const double total = (static_cast<double>(spec.launch_overhead) +
                        std::max(compute_ps, memory_ps)) *
                       straggler;
  if (!(total < kMaxPicoseconds)) {
    return absl::OutOfRangeError(
        absl::StrCat("kernel '", cost.name, "' would take ", total, " ps on '",
                     spec.model, "', more than simulated time can represent"));
  }
  return static_cast<SimTime>(std::llround(total));
}

MemoryTracker::MemoryTracker(std::string device, int64_t capacity)
    : device_(std::move(device)), capacity_(capacity) {}

absl::Status MemoryTracker::Allocate(int64_t bytes) {
  if (bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot allocate a negative size (", bytes, " bytes) on ", device_));
  }
  absl::MutexLock lock(&mu_);
  if (bytes > capacity_ - in_use_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("out of memory on ", device_, ": requested ", bytes,
                     " bytes, ", in_use_, " of ", capacity_,
                     " in use; free buffers, use a smaller "
                     "batch, or shard the model over more devices"));
  }
  in_use_ += bytes;
  peak_ = std::max(peak_, in_use_);
  return absl::OkStatus();
}

absl::Status MemoryTracker::Free(int64_t bytes) {
  if (bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot free a negative size (", bytes, " bytes) on ", device_));
  }
  absl::MutexLock lock(&mu_);
  if (bytes > in_use_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "freeing ", bytes, " bytes on ", device_, " but only ", in_use_,
        " are in use; each Free must match an earlier Allocate"));
  }
  in_use_ -= bytes;
  return absl::OkStatus();
}

int64_t MemoryTracker::in_use() const {
  absl::MutexLock lock(&mu_);
  return in_use_;
}

int64_t MemoryTracker::peak() const {
  absl::MutexLock lock(&mu_);
  return peak_;
}

ComputeModel::ComputeModel(Engine& engine, Trace* trace, FaultInjector* faults)
    : engine_(engine), trace_(trace), faults_(faults) {
  if (faults_ != nullptr) faults_->AddListener(*this);
}

absl::StatusOr<DeviceIndex> ComputeModel::AddDevice(std::string name,
                                                    std::string host,
                                                    ComputeSpec spec) {
  if (name.empty() || host.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a device needs a name and a host (got '", name, "' on '", host, "')"));
  }
  RETURN_IF_ERROR(ValidateDeviceSpec(spec));
  if (devices_.size() >= static_cast<size_t>(INT32_MAX)) {
    return absl::ResourceExhaustedError(
        "too many devices in one compute model");
  }
  const DeviceIndex index = static_cast<DeviceIndex>(devices_.size());
  if (!device_ids_.try_emplace(name, index).second) {
    return absl::AlreadyExistsError(absl::StrCat(
        "a device named '", name, "' exists already; device names are unique"));
  }
  hosts_[host].push_back(index);
  Device device;
  device.memory = std::make_unique<MemoryTracker>(name, spec.memory_capacity);
  if (trace_ != nullptr) device.track = trace_->Track(name, "compute");
  device.name = std::move(name);
  device.host = std::move(host);
  device.spec = std::move(spec);
  devices_.push_back(std::move(device));
  return index;
}

absl::StatusOr<DeviceIndex> ComputeModel::FindDevice(
    absl::string_view name) const {
  auto it = device_ids_.find(name);
  if (it == device_ids_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no device named '", name, "' in this compute model"));
  }
  return it->second;
}

absl::Status ComputeModel::CheckDevice(DeviceIndex device,
                                       absl::string_view what) const {
  if (device < 0 || static_cast<size_t>(device) >= devices_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": device index ", device, " does not exist (the model has ",
        devices_.size(), " devices)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<SimTime> ComputeModel::KernelTime(DeviceIndex device,
                                                 const KernelCost& cost) const {
  RETURN_IF_ERROR(CheckDevice(device, "KernelTime"));
  const Device& d = devices_[static_cast<size_t>(device)];
  return RooflineTime(d.spec, cost, d.straggler);
}

absl::StatusOr<SimTime> ComputeModel::Launch(DeviceIndex device,
                                             KernelCost cost,
                                             KernelCallback done) {
  RETURN_IF_ERROR(CheckDevice(device, "Launch"));
  if (!done) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel '", cost.name, "' was launched with an empty callback"));
  }
  if (faults_ != nullptr) {
    const Device& d = devices_[static_cast<size_t>(device)];
    faults_->CountOperation(FaultTargetKind::kDevice, d.name);
    faults_->CountOperation(FaultTargetKind::kHost, d.host);
  }
  Device& d = devices_[static_cast<size_t>(device)];
  RETURN_IF_ERROR(d.death);
  ASSIGN_OR_RETURN(SimTime duration, RooflineTime(d.spec, cost, d.straggler));
  const SimTime start = std::max(engine_.now(), d.stream_free_at);
  if (duration > kInfiniteTime - start) {
    return absl::OutOfRangeError(absl::StrCat("kernel '", cost.name, "' on ",
                                              d.name,
                                              " would end after the end of "
                                              "representable simulated time"));
  }
  const SimTime end = start + duration;
  ASSIGN_OR_RETURN(
      EventId event,
      engine_.ScheduleAt(end, kComputeActorBase + static_cast<ActorId>(device),
                         [this, device] { OnKernelDone(device); }));
  d.stream_free_at = end;
  Kernel kernel;
  kernel.name = std::move(cost.name);
  kernel.start = start;
  kernel.end = end;
  kernel.event = event;
  kernel.flops = static_cast<int64_t>(std::llround(std::min(cost.flops, 9e18)));
  kernel.bytes = static_cast<int64_t>(std::llround(std::min(cost.bytes, 9e18)));
  kernel.done = std::move(done);
  d.queue.push_back(std::move(kernel));
  return end;
}

void ComputeModel::RecordKernel(Device& device, const Kernel& kernel,
                                SimTime end, bool failed) {
  const SimTime start = std::min(kernel.start, end);
  device.busy += end - start;
  if (!failed) ++device.kernels;
  if (trace_ != nullptr && (end > start || !failed)) {
    std::vector<TraceArg> args = {{"flops", kernel.flops},
                                  {"bytes", kernel.bytes}};
    if (failed) args.push_back({"status", std::string("UNAVAILABLE")});
    trace_
        ->AddComplete(device.track, kernel.name, "compute", start, end,
                      std::move(args))
        .IgnoreError();
  }
}

void ComputeModel::OnKernelDone(DeviceIndex device) {
  Device& d = devices_[static_cast<size_t>(device)];
  if (d.queue.empty()) return;
  Kernel kernel = std::move(d.queue.front());
  d.queue.pop_front();
  RecordKernel(d, kernel, kernel.end, /*failed=*/false);
  KernelResult result;
  result.start = kernel.start;
  result.end = kernel.end;
  kernel.done(result);  // May launch more kernels: `d` is not used after.
}

void ComputeModel::Kill(DeviceIndex device, absl::Status death) {
  Device& d = devices_[static_cast<size_t>(device)];
  if (!d.death.ok()) return;
  d.death = death;
  const SimTime now = engine_.now();
  const ActorId actor = kComputeActorBase + static_cast<ActorId>(device);
  std::deque<Kernel> queue = std::move(d.queue);
  d.queue.clear();
  d.stream_free_at = now;
  for (Kernel& kernel : queue) {
    engine_.Cancel(kernel.event);
    // The running kernel counts as busy until now; queued ones not at all.
    if (kernel.start < now) RecordKernel(d, kernel, now, /*failed=*/true);
    KernelResult result;
    result.status = absl::UnavailableError(
        absl::StrCat("kernel '", kernel.name, "' failed: ", death.message()));
    result.start = std::min(kernel.start, now);
    result.end = now;
    engine_
        .ScheduleAt(
            now, actor,
            [done = std::move(kernel.done), result]() mutable { done(result); })
        .IgnoreError();
  }
}

absl::Status ComputeModel::KillDevice(DeviceIndex device) {
  RETURN_IF_ERROR(CheckDevice(device, "KillDevice"));
  const Device& d = devices_[static_cast<size_t>(device)];
  Kill(device, absl::UnavailableError(absl::StrCat(
                   "device '", d.name, "' died at ", FormatTime(engine_.now()),
                   "; its work is lost")));
  return absl::OkStatus();
}

absl::Status ComputeModel::KillHost(absl::string_view host) {
  auto it = hosts_.find(host);
  if (it == hosts_.end()) {
    return absl::NotFoundError(
        absl::StrCat("no device is on host '", host, "'"));
  }
  for (const DeviceIndex device : it->second) {
    Kill(device, absl::UnavailableError(absl::StrCat(
                     "host '", host, "' of device '",
                     devices_[static_cast<size_t>(device)].name, "' died at ",
                     FormatTime(engine_.now()), "; its work is lost")));
  }
  return absl::OkStatus();
}

absl::Status ComputeModel::SetStraggler(DeviceIndex device, double factor) {
  RETURN_IF_ERROR(CheckDevice(device, "SetStraggler"));
  if (!FinitePositive(factor)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "straggler factor ", factor, " for device '",
        devices_[static_cast<size_t>(device)].name,
        "' must be finite and > 0 (3 means three times slower, 1 restores)"));
  }
  devices_[static_cast<size_t>(device)].straggler = factor;
  return absl::OkStatus();
}

absl::Status ComputeModel::DeviceStatus(DeviceIndex device) const {
  RETURN_IF_ERROR(CheckDevice(device, "DeviceStatus"));
  return devices_[static_cast<size_t>(device)].death;
}

absl::StatusOr<MemoryTracker*> ComputeModel::Memory(DeviceIndex device) {
  RETURN_IF_ERROR(CheckDevice(device, "Memory"));
  return devices_[static_cast<size_t>(device)].memory.get();
}

void ComputeModel::AddToSummary(Summary& summary) const {
  for (const Device& d : devices_) {
    DeviceUsage usage;
    usage.name = d.name;
    usage.kernels = d.kernels;
    usage.busy = d.busy;
    // The kernel running at end_time counts up to it.
    if (!d.queue.empty() && d.queue.front().start < summary.end_time) {
      usage.busy += std::min(d.queue.front().end, summary.end_time) -
                    d.queue.front().start;
    }
    usage.idle = std::max<SimTime>(0, summary.end_time - usage.busy);
    summary.devices.push_back(std::move(usage));
  }
}

bool ComputeModel::OwnsTarget(FaultTargetKind kind,
                              absl::string_view name) const {
  if (kind == FaultTargetKind::kDevice) return device_ids_.contains(name);
  if (kind == FaultTargetKind::kHost) return hosts_.contains(name);
  return false;
}

void ComputeModel::ApplyFault(const Fault& fault) {
  switch (fault.type) {
    case FaultType::kDeviceDeath:
      if (auto it = device_ids_.find(fault.target); it != device_ids_.end()) {
        KillDevice(it->second).IgnoreError();
      }
      break;
    case FaultType::kStraggler:
      if (auto it = device_ids_.find(fault.target); it != device_ids_.end()) {
        SetStraggler(it->second, fault.factor).IgnoreError();
      }
      break;
    case FaultType::kHostDeath:
      KillHost(fault.target).IgnoreError();
      break;
    case FaultType::kLinkCut:
    case FaultType::kLinkSlowdown:
      break;
  }
}

}  // namespace simulator
