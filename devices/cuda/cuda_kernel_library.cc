#include "devices/cuda/cuda_kernel_library.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "devices/cuda/cuda_ops_util.h"
#include "devices/cuda/ops.h"
#include "devices/cuda/training_ops.h"
#include "devices/status_macros.h"

namespace devices {
namespace cuda {
namespace {

using Op = absl::AnyInvocable<absl::StatusOr<KernelCost>()>;

class CudaKernelLibrary final : public KernelLibrary {
 public:
  explicit CudaKernelLibrary(CudaDevice& device)
      : device_(device), name_(absl::StrCat("cuda ", device.name())) {}

  absl::string_view name() const override { return name_; }
  MemorySpace memory_space() const override { return MemorySpace::kDevice; }

  absl::StatusOr<KernelCost> Binary(BinaryOp op, const Tensor& a,
                                    const Tensor& b,
                                    Tensor& out) const override {
    return Run(BinaryOpName(op), [this, op, a, b, out]() mutable {
      switch (op) {
        case BinaryOp::kAdd:
          return Add(device_, a, b, out);
        case BinaryOp::kSub:
          return Sub(device_, a, b, out);
        case BinaryOp::kMul:
          return Mul(device_, a, b, out);
        case BinaryOp::kDiv:
          return Div(device_, a, b, out);
      }
      return absl::StatusOr<KernelCost>(
          absl::InvalidArgumentError("Binary: unknown operation"));
    });
  }
  absl::StatusOr<KernelCost> Scale(const Tensor& in, double alpha,
                                   Tensor& out) const override {
    return Run("Scale", [this, in, alpha, out]() mutable {
      return cuda::Scale(device_, in, alpha, out);
    });
  }
  absl::StatusOr<KernelCost> Relu(const Tensor& features,
                                  Tensor& out) const override {
    return Run("Relu", [this, features, out]() mutable {
      return cuda::Relu(device_, features, out);
    });
  }
  absl::StatusOr<KernelCost> ReluGrad(const Tensor& gradients,
                                      const Tensor& features,
                                      Tensor& out) const override {
    return Run("ReluGrad", [this, gradients, features, out]() mutable {
      return cuda::ReluGrad(device_, gradients, features, out);
    });
  }
  absl::StatusOr<KernelCost> Fill(double value, Tensor& out) const override {
    return Run("Fill", [this, value, out]() mutable {
      return cuda::Fill(device_, value, out);
    });
  }
  absl::StatusOr<KernelCost> Iota(double start, double step,
                                  Tensor& out) const override {
    return Run("Iota", [this, start, step, out]() mutable {
      return cuda::Iota(device_, start, step, out);
    });
  }
  absl::StatusOr<KernelCost> RandomUniform(uint64_t seed, double low,
                                           double high,
                                           Tensor& out) const override {
    return Run("RandomUniform", [this, seed, low, high, out]() mutable {
      return cuda::RandomUniform(device_, seed, low, high, out);
    });
  }
  absl::StatusOr<KernelCost> RandomNormal(uint64_t seed, double mean,
                                          double stddev,
                                          Tensor& out) const override {
    return Run("RandomNormal", [this, seed, mean, stddev, out]() mutable {
      return cuda::RandomNormal(device_, seed, mean, stddev, out);
    });
  }
  absl::StatusOr<KernelCost> MatMul(const Tensor& a, const Tensor& b,
                                    bool transpose_a, bool transpose_b,
                                    Tensor& out) const override {
    return Run("MatMul", [this, a, b, transpose_a, transpose_b, out]() mutable {
      return cuda::MatMul(device_, a, b, transpose_a, transpose_b, out);
    });
  }
  absl::StatusOr<KernelCost> SoftmaxCrossEntropy(
      const Tensor& logits, const Tensor& labels, Tensor& loss,
      Tensor& dlogits) const override {
    return Run("SoftmaxCrossEntropy", [this, logits, labels, loss,
                                       dlogits]() mutable {
      return cuda::SoftmaxCrossEntropy(device_, logits, labels, loss, dlogits);
    });
  }
  absl::StatusOr<KernelCost> ReduceInto(ReduceOp op,
                                        absl::Span<const Tensor> inputs,
                                        Tensor& out) const override {
    std::vector<Tensor> in(inputs.begin(), inputs.end());
    return Run("ReduceInto", [this, op, in = std::move(in), out]() mutable {
      return cuda::ReduceInto(device_, op, in, out);
    });
  }
  absl::StatusOr<KernelCost> Accumulate(ReduceOp op, const Tensor& src,
                                        Tensor& dst) const override {
    absl::Status valid = CheckAccumulateArgs("Accumulate", src, dst);
    if (valid.ok()) valid = CheckOnDevice(device_, "Accumulate", "source", src);
    if (valid.ok()) {
      valid = CheckOnDevice(device_, "Accumulate", "destination", dst);
    }
    RETURN_IF_ERROR(valid);
    return Run("Accumulate", [this, op, src, dst]() mutable {
      return cuda::Accumulate(device_, op, src.raw_data(), dst.raw_data(),
                              dst.num_elements(), dst.dtype());
    });
  }
  absl::StatusOr<KernelCost> FinalizeMean(Tensor& data,
                                          int64_t divisor) const override {
    RETURN_IF_ERROR(CheckOnDevice(device_, "FinalizeMean", "data", data));
    return Run("FinalizeMean", [this, data, divisor]() mutable {
      return cuda::FinalizeMean(device_, data.raw_data(), data.num_elements(),
                                data.dtype(), divisor);
    });
  }
  absl::StatusOr<KernelCost> BiasAdd(const Tensor& bias,
                                     Tensor& x) const override {
    return Run("BiasAdd", [this, bias, x]() mutable {
      return cuda::BiasAdd(device_, bias, x);
    });
  }
  absl::StatusOr<KernelCost> BiasAddGrad(const Tensor& dy,
                                         Tensor& db) const override {
    return Run("BiasAddGrad", [this, dy, db]() mutable {
      return cuda::BiasAddGrad(device_, dy, db);
    });
  }
  absl::StatusOr<KernelCost> AverageLoss(const Tensor& loss,
                                         const Tensor* weight, double divisor,
                                         Tensor& out) const override {
    const bool weighted = weight != nullptr;
    Tensor w = weighted ? *weight : Tensor();
    return Run("AverageLoss",
               [this, loss, weighted, w, divisor, out]() mutable {
                 return cuda::AverageLoss(
                     device_, loss, weighted ? &w : nullptr, divisor, out);
               });
  }
  absl::StatusOr<KernelCost> RowScale(const Tensor& in,
                                      const Tensor& row_weights, double alpha,
                                      Tensor& out) const override {
    return Run("RowScale", [this, in, row_weights, alpha, out]() mutable {
      return cuda::RowScale(device_, in, row_weights, alpha, out);
    });
  }
  absl::StatusOr<KernelCost> SgdUpdate(Tensor& var, const Tensor& grad,
                                       Tensor* m, double learning_rate,
                                       double momentum,
                                       bool nesterov) const override {
    const bool has_m = m != nullptr;
    Tensor slot = has_m ? *m : Tensor();
    return Run("SGDUpdate", [this, var, grad, has_m, slot, learning_rate,
                             momentum, nesterov]() mutable {
      return cuda::SgdUpdate(device_, var, grad, has_m ? &slot : nullptr,
                             learning_rate, momentum, nesterov);
    });
  }
  absl::StatusOr<KernelCost> AdamUpdate(Tensor& var, const Tensor& grad,
                                        Tensor& m, Tensor& v, double alpha,
                                        double beta_1, double beta_2,
                                        double epsilon) const override {
    return Run("AdamUpdate", [this, var, grad, m, v, alpha, beta_1, beta_2,
                              epsilon]() mutable {
      return cuda::AdamUpdate(device_, var, grad, m, v, alpha, beta_1, beta_2,
                              epsilon);
    });
  }

 private:
  // What a queued kernel leaves for its caller; shared so that a caller
  // that gave up waiting leaves nothing dangling.
  struct Outcome {
    absl::Mutex mu;
    bool ran ABSL_GUARDED_BY(mu) = false;
    absl::StatusOr<KernelCost> cost ABSL_GUARDED_BY(mu) =
        absl::UnknownError("the kernel did not run");
  };

  // Runs `op` on the device's queue and waits until it has launched its
  // kernels on the stream (not until the GPU has run them): the stream
  // orders them before the device's later kernels, copies and collectives,
  // and the copies out wait, so callers see finished results without a
  // round trip per kernel. A fault of the GPU while running them shows at
  // the device's next wait (a copy out, Synchronize), as CUDA reports it.
  absl::StatusOr<KernelCost> Run(absl::string_view kernel, Op op) const {
    auto outcome = std::make_shared<Outcome>();
    std::shared_ptr<CudaEvent> done =
        device_.EnqueueCuda(KernelCost{std::string(kernel), 0, 0},
                            [outcome, op = std::move(op)]() mutable {
                              absl::StatusOr<KernelCost> cost = op();
                              absl::Status status = cost.status();
                              absl::MutexLock lock(&outcome->mu);
                              outcome->ran = true;
                              outcome->cost = std::move(cost);
                              return status;
                            });
    if (!done->WaitLaunched(absl::Now() + kCopyTimeout)) {
      return absl::DeadlineExceededError(absl::StrCat(
          kernel, " on ", device_.name(), " did not start within ",
          absl::FormatDuration(kCopyTimeout),
          "; the device's queue is stuck behind earlier work (a collective "
          "waiting for a peer?)"));
    }
    absl::MutexLock lock(&outcome->mu);
    if (!outcome->ran) {
      // Dequeued without running: the queue could not make the device
      // current, and the event carries why.
      absl::Status why = done->Wait(kCopyTimeout);
      return why.ok() ? absl::InternalError(
                            absl::StrCat(kernel, " on ", device_.name(),
                                         " was dequeued without running"))
                      : why;
    }
    return outcome->cost;
  }

  CudaDevice& device_;
  const std::string name_;
};

}  // namespace

std::unique_ptr<KernelLibrary> MakeCudaKernelLibrary(CudaDevice& device) {
  return std::make_unique<CudaKernelLibrary>(device);
}

}  // namespace cuda
}  // namespace devices
