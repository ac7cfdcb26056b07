// CudaDevice: one GPU as a devices::Device. Its memory is the GPU's (a
// caching CudaAllocator), and its execution queue is one CUDA stream fed by
// a host thread: Enqueue(cost, fn) appends fn to a FIFO queue; the device's
// queue thread runs each fn in order (fn launches kernels on stream()), then
// records a cudaEvent on the stream, so the returned CudaEvent completes
// when the GPU has done fn's work. Copies run on the same stream, ordered
// after the work enqueued before them.
//
// Example:
//   absl::StatusOr<std::unique_ptr<devices::cuda::CudaDevice>> gpu =
//       devices::cuda::CudaDevice::Create(
//           "/job:localhost/replica:0/task:0/device:GPU:0", /*ordinal=*/0);
//   absl::StatusOr<devices::Tensor> x =
//       (*gpu)->Allocate(devices::DType::kFloat32, devices::Shape({1024}));
//   (*gpu)->CopyFromHost(host_values.data(), *x);
//   auto done = (*gpu)->Enqueue(devices::ScaleCost(DType::kFloat32, 1024), [&]
//   {
//     return devices::cuda::Scale(**gpu, *x, 2.0, *x).status();
//   });
//   absl::Status s = (*gpu)->Synchronize(absl::Seconds(10));
#ifndef DEVICES_CUDA_CUDA_DEVICE_H_
#define DEVICES_CUDA_CUDA_DEVICE_H_

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "devices/cuda/cuda_allocator.h"
#include "devices/cuda/cuda_blas.h"
#include "devices/cuda/cuda_event.h"
#include "devices/device.h"
#include "devices/kernel_library.h"

namespace devices {
namespace cuda {

class CudaDevice;

struct CudaDeviceOptions {
  // Caps the memory tensors may use, in bytes; 0 means the GPU's total
  // memory (cudaMemGetInfo).
  int64_t memory_limit = 0;
  // Makes the device's kernel library (kernels()); CudaPlatform passes
  // MakeCudaKernelLibrary (cuda_kernel_library.h). Unset: kernels() is the
  // host library, whose kernels refuse this GPU's tensors with
  // FAILED_PRECONDITION.
  std::function<std::unique_ptr<KernelLibrary>(CudaDevice&)> make_kernels;
};

// A GPU's compute capability (9.0 for an H100).
struct CudaComputeCapability {
  int major = 0;
  int minor = 0;
};

class CudaDevice : public Device {
 public:
  // The device for CUDA device `ordinal`, named `name` (the full device
  // name). Creates its stream, cuBLAS handle and queue thread.
  // INVALID_ARGUMENT for an ordinal that is not a visible GPU or a negative
  // memory limit; FAILED_PRECONDITION without any GPU; UNAVAILABLE/INTERNAL
  // for CUDA errors.
  static absl::StatusOr<std::unique_ptr<CudaDevice>> Create(
      std::string name, int ordinal, CudaDeviceOptions options = {});
  // Runs the work still queued, waits for the GPU, then frees the stream.
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  const std::string& name() const override { return name_; }
  DeviceKind kind() const override { return DeviceKind::kGPU; }
  int64_t memory_capacity() const override { return allocator_->capacity(); }
  int64_t memory_in_use() const override { return allocator_->bytes_in_use(); }
  Allocator& allocator() override { return *allocator_; }
  bool functional() const override { return true; }

  absl::StatusOr<Tensor> Allocate(DType dtype, const Shape& shape) override;
  std::shared_ptr<Event> Enqueue(
      KernelCost cost, absl::AnyInvocable<absl::Status()> fn) override {
    return EnqueueCuda(std::move(cost), std::move(fn));
  }
  absl::Status Synchronize(absl::Duration timeout) override;
  // Copies use cudaMemcpyAsync on stream() and wait for it. CopyToDevice
  // accepts a destination on this GPU, on another GPU (cudaMemcpyPeerAsync,
  // direct when peer access is enabled) or in host memory.
  absl::Status CopyFromHost(const void* src, Tensor& dst) override;
  absl::Status CopyToHost(const Tensor& src, void* dst) override;
  absl::Status CopyToDevice(const Tensor& src, Tensor& dst) override;
  // Makes this GPU the thread's current CUDA device until the binding dies.
  std::unique_ptr<ThreadBinding> BindThread() override;
  // The library made by options.make_kernels (see CudaDeviceOptions).
  const KernelLibrary& kernels() const override {
    return kernels_ != nullptr ? *kernels_ : HostKernels();
  }

  // Enqueue with the concrete event type.
  std::shared_ptr<CudaEvent> EnqueueCuda(KernelCost cost,
                                         absl::AnyInvocable<absl::Status()> fn);

  // The CUDA device ordinal, the stream all of this device's work runs on,
  // and a cuBLAS handle bound to that stream (usable from any thread).
  int ordinal() const { return ordinal_; }
  cudaStream_t stream() const { return stream_; }
  cublasContext* cublas() const { return cublas_; }
  // "NVIDIA H100 80GB HBM3 (compute capability 9.0, 132 SMs, 79.1 GiB)".
  const std::string& description() const { return description_; }
  // As cudaGetDeviceProperties gave it when the device was made.
  const CudaComputeCapability& compute_capability() const {
    return compute_capability_;
  }
  CudaAllocator& cuda_allocator() { return *allocator_; }

  // OK if `tensor` has data on this device (INVALID_ARGUMENT naming `what`
  // and the tensor's device otherwise, FAILED_PRECONDITION without data).
  absl::Status CheckOwnTensor(const Tensor& tensor,
                              absl::string_view what) const;

 private:
  struct Work {
    absl::AnyInvocable<absl::Status()> fn;
    std::shared_ptr<CudaEvent> event;
  };

  CudaDevice(std::string name, int ordinal, std::string description,
             CudaComputeCapability compute_capability,
             std::shared_ptr<CudaAllocator> allocator, cudaStream_t stream,
             cublasContext* cublas);
  void WorkerLoop();
  // Enqueues a copy and waits for it (up to kCopyTimeout).
  absl::Status RunCopy(absl::string_view what, int64_t bytes,
                       absl::AnyInvocable<absl::Status()> copy);
  // cudaStreamSynchronize(stream_) as a Status naming `what`.
  absl::Status SyncStream(absl::string_view what);

  const std::string name_;
  const int ordinal_;
  const std::string description_;
  const CudaComputeCapability compute_capability_;
  const std::shared_ptr<CudaAllocator> allocator_;
  const cudaStream_t stream_;
  cublasContext* const cublas_;
  absl::Mutex mu_;
  std::deque<Work> queue_ ABSL_GUARDED_BY(mu_);
  std::atomic<int64_t> enqueued_{
      0};  // Work ever queued; the worker spins on it.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<KernelLibrary> kernels_;  // Set once, by Create().
  std::thread worker_;  // Started last, after every field it uses.
};

}  // namespace cuda
}  // namespace devices

#endif  // DEVICES_CUDA_CUDA_DEVICE_H_
