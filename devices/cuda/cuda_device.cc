#include "devices/cuda/cuda_device.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "devices/completion.h"
#include "devices/cuda/cuda_status.h"
#include "devices/status_macros.h"

namespace devices {
namespace cuda {
namespace {

// Makes a GPU current for a bound thread.
class CudaThreadBinding : public ThreadBinding {
 public:
  explicit CudaThreadBinding(int ordinal) : on_device_(ordinal) {}

 private:
  ScopedCudaDevice on_device_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CudaDevice>> CudaDevice::Create(
    std::string name, int ordinal, CudaDeviceOptions options) {
  ASSIGN_OR_RETURN(int count, CudaDeviceCount());
  if (ordinal < 0 || ordinal >= count) {
    return absl::InvalidArgumentError(
        absl::StrCat("CUDA device ordinal ", ordinal, " for ", name,
                     " is not a visible GPU; this process sees ", count,
                     " GPU(s) (check CUDA_VISIBLE_DEVICES)"));
  }
  if (options.memory_limit < 0) {
    return absl::InvalidArgumentError(absl::StrCat("memory_limit for ", name,
                                                   " must be >= 0, not ",
                                                   options.memory_limit));
  }
  ScopedCudaDevice on_device(ordinal);
  RETURN_IF_ERROR(on_device.status());
  cudaDeviceProp props;
  absl::Status s = CudaStatus(cudaGetDeviceProperties(&props, ordinal),
                              "cudaGetDeviceProperties");
  RETURN_IF_ERROR(s);
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  s = CudaStatus(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  RETURN_IF_ERROR(s);
  int64_t capacity = static_cast<int64_t>(total_bytes);
  if (options.memory_limit > 0 && options.memory_limit < capacity) {
    capacity = options.memory_limit;
  }
  cudaStream_t stream = nullptr;
  // Non-blocking: the stream never waits for the legacy default stream, so
  // synchronous cudaMemcpy calls elsewhere do not serialize with it.
  s = CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                 "cudaStreamCreateWithFlags");
  RETURN_IF_ERROR(s);
  cublasContext* cublas = nullptr;
  s = CublasStatus(BlasCreate(&cublas, stream),
                   absl::StrCat("creating the cuBLAS handle of ", name));
  if (!s.ok()) {
    cudaStreamDestroy(stream);
    return s;
  }
  std::string description = absl::StrFormat(
      "%s (compute capability %d.%d, %d SMs, %.1f GiB)", props.name,
      props.major, props.minor, props.multiProcessorCount,
      static_cast<double>(total_bytes) / (1 << 30));
  auto allocator = std::make_shared<CudaAllocator>(name, ordinal, capacity);
  std::unique_ptr<CudaDevice> device(new CudaDevice(
      std::move(name), ordinal, std::move(description),
      {props.major, props.minor}, std::move(allocator), stream, cublas));
  if (options.make_kernels) device->kernels_ = options.make_kernels(*device);
  return device;
}

CudaDevice::CudaDevice(std::string name, int ordinal, std::string description,
                       CudaComputeCapability compute_capability,
                       std::shared_ptr<CudaAllocator> allocator,
                       cudaStream_t stream, cublasContext* cublas)
    : name_(std::move(name)),
      ordinal_(ordinal),
      description_(std::move(description)),
      compute_capability_(compute_capability),
      allocator_(std::move(allocator)),
      stream_(stream),
      cublas_(cublas),
      worker_([this] { WorkerLoop(); }) {}

CudaDevice::~CudaDevice() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  worker_.join();
  ScopedCudaDevice on_device(ordinal_);
  cudaStreamSynchronize(stream_);
  BlasDestroy(cublas_);
  cudaStreamDestroy(stream_);
}

void CudaDevice::WorkerLoop() {
  // Kernels launched by queued work go to this thread's current device.
  const absl::Status set_device =
      CudaStatus(cudaSetDevice(ordinal_), "cudaSetDevice on the queue thread");
  int64_t taken = 0;
  while (true) {
    Work work;
    // Work often comes in bursts (a kernel, then its wait): spin briefly
    // for the next item before parking, as waking a parked thread costs
    // tens of microseconds.
    SpinUntil([&] { return enqueued_.load(std::memory_order_acquire) > taken; },
              kDefaultSpin, BoundToOneCpu());
    {
      absl::MutexLock lock(&mu_);
      auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || stopping_;
      };
      mu_.Await(absl::Condition(&has_work));
      if (queue_.empty()) return;  // Stopping and drained.
      work = std::move(queue_.front());
      queue_.pop_front();
      ++taken;
    }
    absl::Status status = set_device.ok() ? work.fn() : set_device;
    cudaEvent_t recorded = nullptr;
    absl::Status record =
        CudaStatus(cudaEventCreateWithFlags(&recorded, cudaEventDisableTiming),
                   "cudaEventCreateWithFlags");
    if (record.ok()) {
      record =
          CudaStatus(cudaEventRecord(recorded, stream_), "cudaEventRecord");
      if (!record.ok()) {
        cudaEventDestroy(recorded);
        recorded = nullptr;
      }
    } else {
      recorded = nullptr;
    }
    if (status.ok()) status = record;
    if (!status.ok()) {
      absl::MutexLock lock(&mu_);
      if (first_error_.ok()) first_error_ = status;
    }
    work.event->MarkLaunched(std::move(status), recorded);
  }
}

std::shared_ptr<CudaEvent> CudaDevice::EnqueueCuda(
    KernelCost cost, absl::AnyInvocable<absl::Status()> fn) {
  auto event =
      std::make_shared<CudaEvent>(absl::StrCat(cost.name, " on ", name_));
  absl::MutexLock lock(&mu_);
  queue_.push_back(Work{std::move(fn), event});
  enqueued_.fetch_add(1, std::memory_order_release);
  return event;
}

absl::StatusOr<Tensor> CudaDevice::Allocate(DType dtype, const Shape& shape) {
  return Tensor::Allocate(allocator_, dtype, shape, name_);
}

absl::Status CudaDevice::Synchronize(absl::Duration timeout) {
  std::shared_ptr<CudaEvent> marker = EnqueueCuda(
      KernelCost{"Synchronize", 0, 0}, [] { return absl::OkStatus(); });
  absl::Status waited = marker->Wait(timeout);
  if (absl::IsDeadlineExceeded(waited) && !marker->IsReady()) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "device %s did not finish its queued work within %gs; a kernel may "
        "be blocked (e.g. waiting for a peer in a collective) or the timeout "
        "is too short",
        name_, absl::ToDoubleSeconds(timeout)));
  }
  absl::Status first;
  {
    absl::MutexLock lock(&mu_);
    first = std::exchange(first_error_, absl::OkStatus());
  }
  // An error of the GPU itself (a fault in a kernel) shows in the marker.
  return first.ok() ? waited : first;
}

absl::Status CudaDevice::CheckOwnTensor(const Tensor& tensor,
                                        absl::string_view what) const {
  if (tensor.device() != name_) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, " on ", name_, " was given a tensor on '", tensor.device(),
        "'; allocate it with this device's Allocate()"));
  }
  if (!tensor.has_data()) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " on ", name_, " was given ", tensor.DebugString(),
                     ", which has no data"));
  }
  return absl::OkStatus();
}

absl::Status CudaDevice::SyncStream(absl::string_view what) {
  return CudaStatus(
      cudaStreamSynchronize(stream_),
      absl::StrCat("cudaStreamSynchronize after ", what, " on ", name_));
}

absl::Status CudaDevice::RunCopy(absl::string_view what, int64_t bytes,
                                 absl::AnyInvocable<absl::Status()> copy) {
  // If the wait times out the caller may free its host buffer, so a queued
  // copy must then never start: it checks `abandoned` under the guard's
  // lock, which it holds until the copy has finished, and the caller sets
  // `abandoned` under the same lock.
  struct Guard {
    absl::Mutex mu;
    bool abandoned ABSL_GUARDED_BY(mu) = false;
  };
  auto guard = std::make_shared<Guard>();
  KernelCost cost = MemcpyCost(bytes);
  cost.name = std::string(what);
  std::shared_ptr<CudaEvent> done =
      EnqueueCuda(std::move(cost), [guard, copy = std::move(copy)]() mutable {
        absl::MutexLock lock(&guard->mu);
        if (guard->abandoned) {
          return absl::CancelledError(
              "copy abandoned after its caller timed out");
        }
        return copy();
      });
  absl::Status status = done->Wait(kCopyTimeout);
  if (absl::IsDeadlineExceeded(status) && !done->IsReady()) {
    absl::MutexLock lock(&guard->mu);
    guard->abandoned = true;
  }
  return status;
}

absl::Status CudaDevice::CopyFromHost(const void* src, Tensor& dst) {
  RETURN_IF_ERROR(CheckOwnTensor(dst, "CopyFromHost"));
  const size_t bytes = dst.bytes();
  if (bytes == 0) return absl::OkStatus();
  if (src == nullptr) {
    return absl::InvalidArgumentError("CopyFromHost got a null source");
  }
  void* out = dst.raw_data();
  return RunCopy(
      "CopyFromHost", static_cast<int64_t>(bytes), [this, out, src, bytes] {
        absl::Status s = CudaStatus(
            cudaMemcpyAsync(out, src, bytes, cudaMemcpyHostToDevice, stream_),
            absl::StrCat("cudaMemcpyAsync host to ", name_));
        return s.ok() ? SyncStream("CopyFromHost") : s;
      });
}

absl::Status CudaDevice::CopyToHost(const Tensor& src, void* dst) {
  RETURN_IF_ERROR(CheckOwnTensor(src, "CopyToHost"));
  const size_t bytes = src.bytes();
  if (bytes == 0) return absl::OkStatus();
  if (dst == nullptr) {
    return absl::InvalidArgumentError("CopyToHost got a null destination");
  }
  const void* in = src.raw_data();
  return RunCopy(
      "CopyToHost", static_cast<int64_t>(bytes), [this, in, dst, bytes] {
        absl::Status s = CudaStatus(
            cudaMemcpyAsync(dst, in, bytes, cudaMemcpyDeviceToHost, stream_),
            absl::StrCat("cudaMemcpyAsync ", name_, " to host"));
        return s.ok() ? SyncStream("CopyToHost") : s;
      });
}

absl::Status CudaDevice::CopyToDevice(const Tensor& src, Tensor& dst) {
  RETURN_IF_ERROR(CheckOwnTensor(src, "CopyToDevice"));
  if (!src.SameShapeAndType(dst)) {
    return absl::InvalidArgumentError(
        absl::StrCat("CopyToDevice from ", src.DebugString(), " to ",
                     dst.DebugString(), ": shapes and dtypes must match"));
  }
  if (!dst.has_data()) {
    return absl::FailedPreconditionError(
        absl::StrCat("CopyToDevice on ", name_, " cannot write ",
                     dst.DebugString(), ": it has no data"));
  }
  const size_t bytes = src.bytes();
  if (bytes == 0) return absl::OkStatus();
  // Where dst lives: host memory, this GPU or another one.
  int dst_ordinal = -1;
  if (!dst.host_accessible()) {
    cudaPointerAttributes attributes;
    RETURN_IF_ERROR(
        CudaStatus(cudaPointerGetAttributes(&attributes, dst.raw_data()),
                   "cudaPointerGetAttributes of the CopyToDevice destination"));
    if (attributes.type != cudaMemoryTypeDevice &&
        attributes.type != cudaMemoryTypeManaged) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CopyToDevice on ", name_, ": destination ", dst.DebugString(),
          " is neither host memory nor GPU memory"));
    }
    dst_ordinal = attributes.device;
  }
  // The closure holds both tensors, so their buffers outlive the copy even
  // if the caller stops waiting.
  return RunCopy(
      "CopyToDevice", static_cast<int64_t>(bytes),
      [this, src, dst, bytes, dst_ordinal]() mutable {
        absl::Status s;
        if (dst_ordinal < 0) {
          s = CudaStatus(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), bytes,
                                         cudaMemcpyDeviceToHost, stream_),
                         absl::StrCat("cudaMemcpyAsync ", name_, " to host"));
        } else if (dst_ordinal == ordinal_) {
          s = CudaStatus(cudaMemcpyAsync(dst.raw_data(), src.raw_data(), bytes,
                                         cudaMemcpyDeviceToDevice, stream_),
                         absl::StrCat("cudaMemcpyAsync within ", name_));
        } else {
          // Kernels queued on the other GPU's stream return before they
          // run, and dst's block may have served one of them before it was
          // freed and handed out again: let that GPU finish them first.
          s = CudaStatus(cudaSetDevice(dst_ordinal),
                         "cudaSetDevice to the CopyToDevice destination");
          if (s.ok()) {
            s = CudaStatus(cudaDeviceSynchronize(),
                           absl::StrCat("cudaDeviceSynchronize of GPU ",
                                        dst_ordinal, " before a peer copy"));
          }
          absl::Status back = CudaStatus(cudaSetDevice(ordinal_),
                                         "cudaSetDevice on the queue thread");
          if (s.ok()) s = back;
          RETURN_IF_ERROR(s);
          s = CudaStatus(
              cudaMemcpyPeerAsync(dst.raw_data(), dst_ordinal, src.raw_data(),
                                  ordinal_, bytes, stream_),
              absl::StrCat("cudaMemcpyPeerAsync from ", name_, " to GPU ",
                           dst_ordinal));
        }
        return s.ok() ? SyncStream("CopyToDevice") : s;
      });
}

std::unique_ptr<ThreadBinding> CudaDevice::BindThread() {
  return std::make_unique<CudaThreadBinding>(ordinal_);
}

}  // namespace cuda
}  // namespace devices
