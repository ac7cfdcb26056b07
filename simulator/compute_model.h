// Compute model: roofline kernel times, per-device execution streams, and
// device memory accounting.
//
// A kernel on a device takes
//   launch_overhead + max(flops / peak_flops[dtype], bytes / memory_bandwidth)
// multiplied by the device's straggler factor (1 unless a fault or
// SetStraggler says otherwise), rounded to the nearest picosecond. Kernels
// on one device run one after another in launch order (one stream). Memory
// capacity is enforced by MemoryTracker: going over it is RESOURCE_EXHAUSTED,
// as on the card.
//
//   ComputeSpec h100{"H100-SXM", {{"bf16", 989e12}, {"f32", 67e12}},
//                   /*memory_bandwidth=*/3.35e12,
//                   /*memory_capacity=*/int64_t{80} << 30,
//                   /*launch_overhead=*/Microseconds(4)};
//   ComputeModel compute(engine, &trace);
//   DeviceIndex gpu0 = compute.AddDevice("GPU:0", "host0", h100).value();
//   compute.Launch(gpu0, {"matmul", "bf16", 2e12, 3e9},
//                  [](const KernelResult& r) { /* r.status, r.end */ })
//       .IgnoreError();
//   engine.Run();
//
// Faults (through a FaultInjector or the Kill/SetStraggler calls): a dead
// device, or a device whose host died, fails its queued and running kernels
// with UNAVAILABLE naming it and refuses new ones. Single-threaded except
// MemoryTracker: call it from the engine's thread (see actor_runtime.h).
#ifndef SIMULATOR_COMPUTE_MODEL_H_
#define SIMULATOR_COMPUTE_MODEL_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "simulator/engine.h"
#include "simulator/faults.h"
#include "simulator/time.h"
#include "simulator/trace.h"

namespace simulator {

// Device d's kernel events use actor kComputeActorBase + d.
inline constexpr ActorId kComputeActorBase =
    kFirstReservedActor + (uint64_t{1} << 32);

// A device's specification, from its data sheet.
struct ComputeSpec {
  std::string model;                         // e.g. "H100-SXM"
  std::map<std::string, double> peak_flops;  // dtype name -> FLOP/s
  double memory_bandwidth = 0;               // bytes per second
  int64_t memory_capacity = 0;               // bytes
  SimTime launch_overhead = 0;               // per kernel
};

// INVALID_ARGUMENT naming the first bad field: a peak that is not finite and
// > 0 or has an empty dtype name, a bandwidth that is not finite and > 0, a
// negative capacity or launch overhead.
absl::Status ValidateDeviceSpec(const ComputeSpec& spec);

// What a kernel does, for the roofline.
struct KernelCost {
  std::string name;   // shown in the trace
  std::string dtype;  // key into ComputeSpec::peak_flops; unused if flops == 0
  double flops = 0;
  double bytes = 0;  // memory traffic
};

// The roofline time of `cost` on `spec`, times `straggler`. INVALID_ARGUMENT
// for negative or non-finite flops/bytes, a straggler factor that is not
// finite and > 0, or a spec whose used peak or bandwidth is not > 0;
// NOT_FOUND if flops > 0 and the spec has no peak for cost.dtype;
// OUT_OF_RANGE if the time does not fit in SimTime.
absl::StatusOr<SimTime> RooflineTime(const ComputeSpec& spec,
                                     const KernelCost& cost,
                                     double straggler = 1.0);

// Bytes in use on one device's memory, against its capacity. Thread-safe.
class MemoryTracker {
 public:
  MemoryTracker(std::string device, int64_t capacity);
  MemoryTracker(const MemoryTracker&) = delete;
  MemoryTracker& operator=(const MemoryTracker&) = delete;

  // RESOURCE_EXHAUSTED "out of memory on <device>: requested X bytes, Y of Z
  // in use" if it does not fit (nothing is allocated then); INVALID_ARGUMENT
  // for negative sizes.
  absl::Status Allocate(int64_t bytes);
  // FAILED_PRECONDITION if more than is in use; INVALID_ARGUMENT if negative.
  absl::Status Free(int64_t bytes);

  int64_t in_use() const;
  int64_t peak() const;
  int64_t capacity() const { return capacity_; }
  const std::string& device() const { return device_; }

 private:
  const std::string device_;
  const int64_t capacity_;
  mutable absl::Mutex mu_;
  int64_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t peak_ ABSL_GUARDED_BY(mu_) = 0;
};

using DeviceIndex = int32_t;

struct KernelResult {
  absl::Status status;  // OK, or UNAVAILABLE if the device died
  SimTime start = 0;
  SimTime end = 0;  // completion (or failure) time
};

using KernelCallback = absl::AnyInvocable<void(const KernelResult&)>;

class ComputeModel final : public FaultListener {
 public:
  // `trace` (may be null) gets a track (device name, "compute") per device.
  // `faults` (may be null) supplies device and host faults; the model
  // registers itself and counts one operation per launch on the device and
  // one on its host.
  explicit ComputeModel(Engine& engine, Trace* trace = nullptr,
                        FaultInjector* faults = nullptr);
  ComputeModel(const ComputeModel&) = delete;
  ComputeModel& operator=(const ComputeModel&) = delete;

  // Adds a device on `host`. INVALID_ARGUMENT for an empty name or host or a
  // bad spec; ALREADY_EXISTS if the name is taken.
  absl::StatusOr<DeviceIndex> AddDevice(std::string name, std::string host,
                                        ComputeSpec spec);
  // NOT_FOUND if no device has this name.
  absl::StatusOr<DeviceIndex> FindDevice(absl::string_view name) const;
  int64_t num_devices() const { return static_cast<int64_t>(devices_.size()); }

  // The time `cost` would take on `device` now (roofline x straggler).
  absl::StatusOr<SimTime> KernelTime(DeviceIndex device,
                                     const KernelCost& cost) const;

  // Queues a kernel on the device's stream: it starts when the previous one
  // ends (or now) and `done` is called from an engine event when it ends or
  // fails. Returns the planned end time; errors as KernelTime, plus
  // INVALID_ARGUMENT for an unknown device or empty callback and UNAVAILABLE
  // if the device (or its host) is dead. On error `done` is never called.
  absl::StatusOr<SimTime> Launch(DeviceIndex device, KernelCost cost,
                                 KernelCallback done);

  // OK if alive; UNAVAILABLE naming the device (or host) if dead;
  // INVALID_ARGUMENT for an unknown device.
  absl::Status DeviceStatus(DeviceIndex device) const;

  // The device's memory; INVALID_ARGUMENT for an unknown device.
  absl::StatusOr<MemoryTracker*> Memory(DeviceIndex device);

  // Kills the device now: queued and running kernels fail. Idempotent.
  absl::Status KillDevice(DeviceIndex device);
  // Kills every device of `host`. NOT_FOUND if no device is on it.
  absl::Status KillHost(absl::string_view host);
  // Kernels launched from now on take `factor` times longer (finite, > 0).
  absl::Status SetStraggler(DeviceIndex device, double factor);

  // Appends one DeviceUsage per device (in index order) for
  // [0, summary.end_time].
  void AddToSummary(Summary& summary) const;

  // FaultListener: owns devices and hosts by name.
  bool OwnsTarget(FaultTargetKind kind, absl::string_view name) const override;
  void ApplyFault(const Fault& fault) override;

 private:
  struct Kernel {
    std::string name;
    SimTime start = 0;
    SimTime end = 0;
    EventId event = 0;
    int64_t flops = 0;
    int64_t bytes = 0;
    KernelCallback done;
  };
  struct Device {
    std::string name;
    std::string host;
    ComputeSpec spec;
    absl::Status death;  // OK while alive
    double straggler = 1.0;
    SimTime stream_free_at = 0;
    std::deque<Kernel> queue;  // launched, not finished, in launch order
    int64_t kernels = 0;
    SimTime busy = 0;
    Trace::TrackId track = -1;
    std::unique_ptr<MemoryTracker> memory;
  };

  absl::Status CheckDevice(DeviceIndex device, absl::string_view what) const;
  void OnKernelDone(DeviceIndex device);
  void Kill(DeviceIndex device, absl::Status death);
  void RecordKernel(Device& device, const Kernel& kernel, SimTime end,
                    bool failed);

  Engine& engine_;
  Trace* const trace_;
  FaultInjector* const faults_;
  std::vector<Device> devices_;
  absl::flat_hash_map<std::string, DeviceIndex> device_ids_;
  absl::flat_hash_map<std::string, std::vector<DeviceIndex>> hosts_;
};

}  // namespace simulator

#endif  // SIMULATOR_COMPUTE_MODEL_H_
