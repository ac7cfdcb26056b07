// Device: one compute device (a CPU, a GPU, a TPU core; real or simulated)
// with its memory and one ordered execution queue. Strategies and collective
// algorithms see only this interface, so the same program runs on host
// threads, CUDA devices and the simulator.
//
// Example:
//   absl::StatusOr<devices::Device*> device = platform->FindDevice("/cpu:0");
//   absl::StatusOr<devices::Tensor> x =
//       (*device)->Allocate(DType::kFloat32, devices::Shape({1024}));
//   std::shared_ptr<devices::Event> done = (*device)->Enqueue(
//       devices::FillCost(DType::kFloat32, 1024),
//       [&] { return devices::Fill(1.0, *x).status(); });
//   absl::Status status = done->Wait(absl::Seconds(10));
#ifndef DEVICES_DEVICE_H_
#define DEVICES_DEVICE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "devices/allocator.h"
#include "devices/dtype.h"
#include "devices/event.h"
#include "devices/kernel_costs.h"
#include "devices/kernel_library.h"
#include "devices/shape.h"
#include "devices/tensor.h"
#include "devices/thread_binding.h"

namespace devices {

enum class DeviceKind { kCPU, kGPU, kTPU };

// "CPU", "GPU", "TPU": the device type in device names.
absl::string_view DeviceKindName(DeviceKind kind);

// The longest a copy waits for the work queued before it. A copy that has
// not finished by then returns DEADLINE_EXCEEDED (the queue is stuck).
inline constexpr absl::Duration kCopyTimeout = absl::Minutes(5);

class Device {
 public:
  virtual ~Device() = default;

  // The full TensorFlow name, e.g.
  // "/job:localhost/replica:0/task:0/device:CPU:0".
  virtual const std::string& name() const = 0;
  virtual DeviceKind kind() const = 0;

  // Bytes of device memory in total, and in use by live tensors.
  virtual int64_t memory_capacity() const = 0;
  virtual int64_t memory_in_use() const = 0;
  // The allocator of this device's memory; it outlives the device's tensors.
  virtual Allocator& allocator() = 0;

  // False for timing-only simulated devices: their tensors are shape-only
  // (has_data() is false) and their kernels only charge time.
  virtual bool functional() const = 0;

  // A tensor in this device's memory (uninitialised) whose device() is
  // name(). RESOURCE_EXHAUSTED naming the device, the request and the bytes
  // in use when it does not fit in memory_capacity(). Thread-safe.
  virtual absl::StatusOr<Tensor> Allocate(DType dtype, const Shape& shape) = 0;

  // Appends `fn` to the device's queue and returns at once. Queued work runs
  // one item at a time in the order enqueued; `fn` runs exactly once and the
  // returned event completes with its status. A simulated device charges
  // `cost` to its clock; on a timing-only device (functional() false) `fn`
  // is data work and does not run: the event completes OK once the cost is
  // charged. Errors do not stop the queue; Synchronize() reports the first.
  // Thread-safe; `fn` may enqueue more work.
  virtual std::shared_ptr<Event> Enqueue(
      KernelCost cost, absl::AnyInvocable<absl::Status()> fn) = 0;

  // Waits until all work enqueued before the call is done. Returns the first
  // error returned by queued work since the previous Synchronize (and clears
  // it), OK if there was none, or DEADLINE_EXCEEDED naming the device if the
  // work is not done within `timeout`.
  virtual absl::Status Synchronize(absl::Duration timeout) = 0;

  // Copies between host memory and tensors of this device. Each copy runs on
  // the queue after the work enqueued before it and returns when it is done
  // (DEADLINE_EXCEEDED after kCopyTimeout). Common errors: INVALID_ARGUMENT
  // if a tensor is not on this device (or, for CopyToDevice, the shapes or
  // dtypes differ), FAILED_PRECONDITION if a tensor has no data on a
  // functional device. On a timing-only device copies only charge time.
  //
  // CopyFromHost copies dst.bytes() bytes from `src` into `dst`.
  virtual absl::Status CopyFromHost(const void* src, Tensor& dst) = 0;
  // CopyToHost copies src.bytes() bytes of `src` to `dst`.
  virtual absl::Status CopyToHost(const Tensor& src, void* dst) = 0;
  // CopyToDevice copies `src` (on this device) into `dst`, which may be on
  // another device of the same platform. The caller keeps dst's device from
  // using `dst` during the copy.
  virtual absl::Status CopyToDevice(const Tensor& src, Tensor& dst) = 0;

  // The kernels that compute on this device's tensors (kernel_library.h).
  // The default is the host library, right for devices whose memory is host
  // memory (the host CPU; simulated devices, which compute in host memory
  // in functional mode); an accelerator returns its own. Lives as long as
  // the device.
  virtual const KernelLibrary& kernels() const { return HostKernels(); }

  // Binds the calling thread to this device until the binding is destroyed
  // (thread_binding.h): strategies call it on each replica's thread. The
  // default binding does nothing; CUDA makes the device current; the
  // simulator makes the thread an actor of its engine.
  virtual std::unique_ptr<ThreadBinding> BindThread() {
    return std::make_unique<ThreadBinding>();
  }
};

}  // namespace devices

#endif  // DEVICES_DEVICE_H_
