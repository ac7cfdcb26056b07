#include "tests/opaque_memory_platform.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/allocator.h"
#include "devices/device.h"
#include "devices/kernel_library.h"
#include "devices/status_macros.h"

namespace distsim_testing {
namespace {

using devices::KernelCost;
using devices::Tensor;

// The device keeps every byte XOR-ed with this mask, so host code that
// dereferences device memory instead of copying it out (as it could not on a
// GPU) reads garbage and fails the tests, while byte-moving transports and
// device-to-device copies carry the stored bytes unchanged.
constexpr unsigned char kStoredMask = 0x5A;

// Copies `bytes` from src to dst, applying the mask (to store or to load).
void MaskedCopy(const void* src, void* dst, size_t bytes) {
  const auto* in = static_cast<const unsigned char*>(src);
  auto* out = static_cast<unsigned char*>(dst);
  for (size_t i = 0; i < bytes; ++i) out[i] = in[i] ^ kStoredMask;
}

// Host RAM that claims to be device memory.
class OpaqueAllocator : public devices::Allocator {
 public:
  OpaqueAllocator(std::string name, int64_t capacity)
      : host_(name, capacity), name_(std::move(name)) {}
  const std::string& name() const override { return name_; }
  devices::MemorySpace memory_space() const override {
    return devices::MemorySpace::kDevice;
  }
  absl::StatusOr<void*> Allocate(size_t bytes) override {
    return host_.Allocate(bytes);
  }
  void Deallocate(void* ptr, size_t bytes) override {
    host_.Deallocate(ptr, bytes);
  }
  int64_t bytes_in_use() const override { return host_.bytes_in_use(); }
  int64_t peak_bytes_in_use() const override {
    return host_.peak_bytes_in_use();
  }
  int64_t capacity() const override { return host_.capacity(); }

 private:
  devices::HostAllocator host_;
  const std::string name_;
};

// The host kernels on staged host copies of one device's tensors.
class StagedKernels : public devices::KernelLibrary {
 public:
  explicit StagedKernels(std::string device) : device_(std::move(device)) {}

  absl::string_view name() const override { return "staged"; }
  devices::MemorySpace memory_space() const override {
    return devices::MemorySpace::kDevice;
  }

  absl::StatusOr<KernelCost> Binary(devices::BinaryOp op, const Tensor& a,
                                    const Tensor& b,
                                    Tensor& out) const override {
    return Stage({a, b}, {&out}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().Binary(op, h[0], h[1], h[2]);
    });
  }
  absl::StatusOr<KernelCost> Scale(const Tensor& in, double alpha,
                                   Tensor& out) const override {
    return Stage({in}, {&out}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().Scale(h[0], alpha, h[1]);
    });
  }
  absl::StatusOr<KernelCost> Relu(const Tensor& features,
                                  Tensor& out) const override {
    return Stage({features}, {&out}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().Relu(h[0], h[1]);
    });
  }
  absl::StatusOr<KernelCost> ReluGrad(const Tensor& gradients,
                                      const Tensor& features,
                                      Tensor& out) const override {
    return Stage({gradients, features}, {&out}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().ReluGrad(h[0], h[1], h[2]);
    });
  }
  absl::StatusOr<KernelCost> Fill(double value, Tensor& out) const override {
    return Stage({}, {&out}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().Fill(value, h[0]);
    });
  }
  absl::StatusOr<KernelCost> Iota(double start, double step,
                                  Tensor& out) const override {
    return Stage({}, {&out}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().Iota(start, step, h[0]);
    });
  }
  absl::StatusOr<KernelCost> RandomUniform(uint64_t seed, double low,
                                           double high,
                                           Tensor& out) const override {
    return Stage({}, {&out}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().RandomUniform(seed, low, high, h[0]);
    });
  }
  absl::StatusOr<KernelCost> RandomNormal(uint64_t seed, double mean,
                                          double stddev,
                                          Tensor& out) const override {
    return Stage({}, {&out}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().RandomNormal(seed, mean, stddev, h[0]);
    });
  }
  absl::StatusOr<KernelCost> MatMul(const Tensor& a, const Tensor& b,
                                    bool transpose_a, bool transpose_b,
                                    Tensor& out) const override {
    return Stage({a, b}, {&out}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().MatMul(h[0], h[1], transpose_a, transpose_b,
                                           h[2]);
    });
  }
  absl::StatusOr<KernelCost> SoftmaxCrossEntropy(
      const Tensor& logits, const Tensor& labels, Tensor& loss,
      Tensor& dlogits) const override {
    return Stage({logits, labels}, {&loss, &dlogits},
                 [&](std::vector<Tensor>& h) {
                   return devices::HostKernels().SoftmaxCrossEntropy(
                       h[0], h[1], h[2], h[3]);
                 });
  }
  absl::StatusOr<KernelCost> ReduceInto(devices::ReduceOp op,
                                        absl::Span<const Tensor> inputs,
                                        Tensor& out) const override {
    std::vector<Tensor> in(inputs.begin(), inputs.end());
    const size_t n = in.size();
    return Stage(std::move(in), {&out}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().ReduceInto(
          op, absl::MakeConstSpan(h.data(), n), h[n]);
    });
  }
  absl::StatusOr<KernelCost> Accumulate(devices::ReduceOp op, const Tensor& src,
                                        Tensor& dst) const override {
    return Stage({src}, {&dst}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().Accumulate(op, h[0], h[1]);
    });
  }
  absl::StatusOr<KernelCost> FinalizeMean(Tensor& data,
                                          int64_t divisor) const override {
    return Stage({}, {&data}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().FinalizeMean(h[0], divisor);
    });
  }
  absl::StatusOr<KernelCost> BiasAdd(const Tensor& bias,
                                     Tensor& x) const override {
    return Stage({bias}, {&x}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().BiasAdd(h[0], h[1]);
    });
  }
  absl::StatusOr<KernelCost> BiasAddGrad(const Tensor& dy,
                                         Tensor& db) const override {
    return Stage({dy}, {&db}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().BiasAddGrad(h[0], h[1]);
    });
  }
  absl::StatusOr<KernelCost> AverageLoss(const Tensor& loss,
                                         const Tensor* weight, double divisor,
                                         Tensor& out) const override {
    if (weight == nullptr) {
      return Stage({loss}, {&out}, [&](std::vector<Tensor>& h) {
        return devices::HostKernels().AverageLoss(h[0], nullptr, divisor, h[1]);
      });
    }
    return Stage({loss, *weight}, {&out}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().AverageLoss(h[0], &h[1], divisor, h[2]);
    });
  }
  absl::StatusOr<KernelCost> RowScale(const Tensor& in,
                                      const Tensor& row_weights, double alpha,
                                      Tensor& out) const override {
    return Stage({in, row_weights}, {&out}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().RowScale(h[0], h[1], alpha, h[2]);
    });
  }
  absl::StatusOr<KernelCost> SgdUpdate(Tensor& var, const Tensor& grad,
                                       Tensor* m, double learning_rate,
                                       double momentum,
                                       bool nesterov) const override {
    if (m == nullptr) {
      return Stage({grad}, {&var}, [&](std::vector<Tensor>& h) {
        return devices::HostKernels().SgdUpdate(
            h[1], h[0], nullptr, learning_rate, momentum, nesterov);
      });
    }
    return Stage({grad}, {&var, m}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().SgdUpdate(h[1], h[0], &h[2], learning_rate,
                                              momentum, nesterov);
    });
  }
  absl::StatusOr<KernelCost> AdamUpdate(Tensor& var, const Tensor& grad,
                                        Tensor& m, Tensor& v, double alpha,
                                        double beta_1, double beta_2,
                                        double epsilon) const override {
    return Stage({grad}, {&var, &m, &v}, [&](std::vector<Tensor>& h) {
      return devices::HostKernels().AdamUpdate(h[1], h[0], h[2], h[3], alpha,
                                               beta_1, beta_2, epsilon);
    });
  }

 private:
  // Copies `inputs` and then `outputs` (each on this device, else
  // INVALID_ARGUMENT as a real device's kernels would say) to host tensors,
  // runs `kernel` on them and copies the outputs back.
  absl::StatusOr<KernelCost> Stage(
      std::vector<Tensor> inputs, std::vector<Tensor*> outputs,
      const std::function<absl::StatusOr<KernelCost>(std::vector<Tensor>&)>&
          kernel) const {
    std::vector<Tensor> staged;
    for (const Tensor* t : outputs) inputs.push_back(*t);
    for (const Tensor& t : inputs) {
      if (t.device() != device_ || !t.has_data() || t.host_accessible()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "staged kernel on ", device_, " was given ", t.DebugString(),
            "; its tensors must be in this device's memory"));
      }
      ASSIGN_OR_RETURN(Tensor h, Tensor::Host(t.dtype(), t.shape()));
      MaskedCopy(t.raw_data(), h.raw_data(), t.bytes());
      staged.push_back(std::move(h));
    }
    absl::StatusOr<KernelCost> cost = kernel(staged);
    if (!cost.ok()) return cost;
    const size_t first_output = staged.size() - outputs.size();
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& h = staged[first_output + i];
      MaskedCopy(h.raw_data(), outputs[i]->raw_data(), h.bytes());
    }
    return cost;
  }

  const std::string device_;
};

}  // namespace

// A CPU device with opaque memory; work runs on a host device's queue.
class OpaqueMemoryDevice : public devices::Device {
 public:
  explicit OpaqueMemoryDevice(devices::Device& queue)
      : queue_(queue),
        allocator_(std::make_shared<OpaqueAllocator>(
            absl::StrCat(queue.name(), " (opaque)"), queue.memory_capacity())),
        kernels_(queue.name()) {}

  const std::string& name() const override { return queue_.name(); }
  int64_t copies() const { return copies_.load(); }
  devices::DeviceKind kind() const override {
    return devices::DeviceKind::kCPU;
  }
  int64_t memory_capacity() const override { return allocator_->capacity(); }
  int64_t memory_in_use() const override { return allocator_->bytes_in_use(); }
  devices::Allocator& allocator() override { return *allocator_; }
  bool functional() const override { return true; }
  const devices::KernelLibrary& kernels() const override { return kernels_; }

  absl::StatusOr<Tensor> Allocate(devices::DType dtype,
                                  const devices::Shape& shape) override {
    return Tensor::Allocate(allocator_, dtype, shape, name());
  }
  std::shared_ptr<devices::Event> Enqueue(
      KernelCost cost, absl::AnyInvocable<absl::Status()> fn) override {
    return queue_.Enqueue(std::move(cost), std::move(fn));
  }
  absl::Status Synchronize(absl::Duration timeout) override {
    return queue_.Synchronize(timeout);
  }
  absl::Status CopyFromHost(const void* src, Tensor& dst) override {
    RETURN_IF_ERROR(Own(dst, "CopyFromHost"));
    return Copy(src, dst.raw_data(), dst.bytes(), /*mask=*/true);
  }
  absl::Status CopyToHost(const Tensor& src, void* dst) override {
    RETURN_IF_ERROR(Own(src, "CopyToHost"));
    return Copy(src.raw_data(), dst, src.bytes(), /*mask=*/true);
  }
  absl::Status CopyToDevice(const Tensor& src, Tensor& dst) override {
    RETURN_IF_ERROR(Own(src, "CopyToDevice"));
    if (!src.SameShapeAndType(dst) || !dst.has_data()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CopyToDevice from ", src.DebugString(), " to ", dst.DebugString()));
    }
    // To host memory (another platform device's or a host tensor), as a
    // GPU's device-to-host copy: the stored form is unmasked.
    return Copy(src.raw_data(), dst.raw_data(), src.bytes(),
                /*mask=*/dst.host_accessible());
  }

 private:
  absl::Status Own(const Tensor& t, absl::string_view what) const {
    if (t.device() != name() || t.host_accessible()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " on ", name(), " was given ", t.DebugString(), " on '",
          t.device(), "', which is not in this device's memory"));
    }
    if (!t.has_data()) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, ": ", t.DebugString(), " has no data"));
    }
    return absl::OkStatus();
  }
  // A copy on the queue, after the work enqueued before it; `mask` for a
  // copy between the host and this device's stored form.
  absl::Status Copy(const void* src, void* dst, size_t bytes, bool mask) {
    copies_.fetch_add(1);
    return queue_
        .Enqueue(devices::MemcpyCost(static_cast<int64_t>(bytes)),
                 [src, dst, bytes, mask] {
                   if (mask) {
                     MaskedCopy(src, dst, bytes);
                   } else if (bytes > 0) {
                     std::memcpy(dst, src, bytes);
                   }
                   return absl::OkStatus();
                 })
        ->Wait(devices::kCopyTimeout);
  }

  devices::Device& queue_;
  std::atomic<int64_t> copies_{0};
  const std::shared_ptr<OpaqueAllocator> allocator_;
  const StagedKernels kernels_;
};

absl::StatusOr<std::unique_ptr<OpaqueMemoryPlatform>>
OpaqueMemoryPlatform::Create(int num_devices, int num_host_memory_devices,
                             std::optional<std::string> job_prefix) {
  if (num_host_memory_devices < 0 || num_host_memory_devices > num_devices) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_host_memory_devices ", num_host_memory_devices,
                     " is outside 0..", num_devices));
  }
  devices::HostPlatformOptions options;
  options.num_devices = num_devices;
  if (job_prefix.has_value()) options.job_prefix = *std::move(job_prefix);
  ASSIGN_OR_RETURN(std::unique_ptr<devices::HostPlatform> host,
                   devices::HostPlatform::Create(options));
  std::unique_ptr<OpaqueMemoryPlatform> platform(
      new OpaqueMemoryPlatform(std::move(host)));
  const std::vector<std::string> names = platform->host_->DeviceNames();
  for (size_t i = 0; i + num_host_memory_devices < names.size(); ++i) {
    ASSIGN_OR_RETURN(devices::Device * queue,
                     platform->host_->FindDevice(names[i]));
    platform->devices_.push_back(std::make_unique<OpaqueMemoryDevice>(*queue));
  }
  return platform;
}

OpaqueMemoryPlatform::OpaqueMemoryPlatform(
    std::unique_ptr<devices::HostPlatform> host)
    : host_(std::move(host)) {}

OpaqueMemoryPlatform::~OpaqueMemoryPlatform() = default;

int64_t OpaqueMemoryPlatform::copies() const {
  int64_t total = 0;
  for (const auto& d : devices_) total += d->copies();
  return total;
}

std::vector<std::string> OpaqueMemoryPlatform::DeviceNames() const {
  return host_->DeviceNames();
}

absl::StatusOr<devices::Device*> OpaqueMemoryPlatform::FindDevice(
    absl::string_view name) {
  ASSIGN_OR_RETURN(devices::Device * host, host_->FindDevice(name));
  for (const auto& d : devices_) {
    if (d->name() == host->name()) return d.get();
  }
  return host;  // one of the last num_host_memory_devices
}

absl::StatusOr<std::vector<std::unique_ptr<devices::Transport>>>
OpaqueMemoryPlatform::CreateTransportGroup(
    const std::vector<std::string>& device_names) {
  return host_->CreateTransportGroup(device_names);
}

absl::StatusOr<std::unique_ptr<devices::Communicator>>
OpaqueMemoryPlatform::CreateCommunicator(
    const std::vector<std::string>& /*device_names*/) {
  return absl::UnimplementedError(
      "the opaque-memory test platform has no Communicator");
}

}  // namespace distsim_testing
