// ExecutionContext: what every model op (layers, losses, optimizers) is given
// besides its tensors. It says whether to compute values or only shapes
// (timing-only mode, for simulated devices that carry no data), where new
// tensors come from, and where each kernel's KernelCost goes, so that a
// caller can charge a simulated device for exactly the kernels the model ran.
// CostRecorder is a ready-made, thread-safe cost sink.
//
// Example:
//   distribute::models::CostRecorder recorder;
//   distribute::models::ExecutionContext ctx = recorder.Context();
//   absl::StatusOr<devices::Tensor> y = dense.Forward(ctx, params, x);
//   // recorder.count() == 2 (MatMul, BiasAdd),
//   // recorder.total_flops() == 2 * batch * in * out + batch * out
//   ctx.timing_only = true;  // Same ops, shape-only tensors, same costs.
#ifndef DISTRIBUTE_MODELS_EXECUTION_CONTEXT_H_
#define DISTRIBUTE_MODELS_EXECUTION_CONTEXT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "devices/allocator.h"
#include "devices/device.h"
#include "devices/dtype.h"
#include "devices/kernel_costs.h"
#include "devices/kernel_library.h"
#include "devices/shape.h"
#include "devices/tensor.h"

namespace distribute {
namespace models {

struct ExecutionContext {
  // False: ops compute values (on host tensors, or on compute_device's
  // tensors with its kernels). True: ops check shapes and
  // dtypes, return shape-only tensors and report costs without touching
  // data (inputs may be shape-only or not; their data is ignored).
  bool timing_only = false;

  // Receives the cost of every kernel an op runs, in the order they run, on
  // the calling thread. May be empty (costs are then dropped).
  std::function<void(const devices::KernelCost&)> cost_sink;

  // Where new tensors come from. Null: the host heap (functional mode) or
  // no memory at all (timing-only mode). Set: tensors are allocated from it
  // and named `device`, so a device's memory accounting (and its
  // out-of-memory errors) sees the model's tensors; in functional mode the
  // allocator must hand out host memory.
  std::shared_ptr<devices::Allocator> allocator;
  // The device() of new tensors (with an allocator or in timing-only mode).
  std::string device;

  // The device whose kernels compute in functional mode
  // (devices::Device::kernels()); null: the host kernels. When its kernels
  // compute in device memory (a GPU) and no allocator is set, new tensors
  // are allocated on it (Device::Allocate) and named by it.
  devices::Device* compute_device = nullptr;

  // The kernels ops run: compute_device's, or the host library.
  const devices::KernelLibrary& kernels() const {
    return compute_device != nullptr ? compute_device->kernels()
                                     : devices::HostKernels();
  }

  // Sends `cost` to cost_sink, if any.
  void Report(const devices::KernelCost& cost) const {
    if (cost_sink) cost_sink(cost);
  }

  // A new, uninitialised tensor for an op's output, as described above.
  // RESOURCE_EXHAUSTED from the allocator; FAILED_PRECONDITION in
  // functional mode when the allocator's memory is not the memory the
  // kernels compute in.
  absl::StatusOr<devices::Tensor> NewTensor(devices::DType dtype,
                                            devices::Shape shape) const;
};

// Collects the costs sent to the contexts it makes. Thread-safe: replicas on
// several threads may share one recorder (the order of costs is then the
// order in which they arrived).
class CostRecorder {
 public:
  CostRecorder() = default;
  CostRecorder(const CostRecorder&) = delete;
  CostRecorder& operator=(const CostRecorder&) = delete;

  // A sink that records into this recorder; the recorder must outlive it.
  std::function<void(const devices::KernelCost&)> Sink();
  // A context whose cost_sink is Sink().
  ExecutionContext Context(bool timing_only = false);

  void Record(const devices::KernelCost& cost);

  // Number of costs recorded, and the sums of their flops and bytes.
  int64_t count() const;
  double total_flops() const;
  double total_bytes() const;
  // Every cost recorded, in order.
  std::vector<devices::KernelCost> costs() const;
  // How many recorded costs have this kernel name.
  int64_t CountOf(const std::string& name) const;
  // Forgets everything recorded.
  void Clear();

 private:
  mutable absl::Mutex mu_;
  std::vector<devices::KernelCost> costs_ ABSL_GUARDED_BY(mu_);
  double total_flops_ ABSL_GUARDED_BY(mu_) = 0;
  double total_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace models
}  // namespace distribute

#endif  // DISTRIBUTE_MODELS_EXECUTION_CONTEXT_H_
