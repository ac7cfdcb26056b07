#include "devices/kernel_library.h"

#include "absl/strings/str_cat.h"
#include "devices/kernel_util.h"
#include "devices/nn_kernels.h"
#include "devices/random_kernels.h"
#include "devices/reduce_kernels.h"
#include "devices/status_macros.h"
#include "devices/training_kernels.h"

namespace devices {
namespace {

class HostKernelLibrary final : public KernelLibrary {
 public:
  absl::string_view name() const override { return "host"; }
  MemorySpace memory_space() const override { return MemorySpace::kHost; }

  absl::StatusOr<KernelCost> Binary(BinaryOp op, const Tensor& a,
                                    const Tensor& b,
                                    Tensor& out) const override {
    switch (op) {
      case BinaryOp::kAdd:
        return devices::Add(a, b, out);
      case BinaryOp::kSub:
        return devices::Sub(a, b, out);
      case BinaryOp::kMul:
        return devices::Mul(a, b, out);
      case BinaryOp::kDiv:
        return devices::Div(a, b, out);
    }
    return absl::InvalidArgumentError("Binary: unknown operation");
  }
  absl::StatusOr<KernelCost> Scale(const Tensor& in, double alpha,
                                   Tensor& out) const override {
    return devices::Scale(in, alpha, out);
  }
  absl::StatusOr<KernelCost> Relu(const Tensor& features,
                                  Tensor& out) const override {
    return devices::Relu(features, out);
  }
  absl::StatusOr<KernelCost> ReluGrad(const Tensor& gradients,
                                      const Tensor& features,
                                      Tensor& out) const override {
    return devices::ReluGrad(gradients, features, out);
  }
  absl::StatusOr<KernelCost> Fill(double value, Tensor& out) const override {
    return devices::Fill(value, out);
  }
  absl::StatusOr<KernelCost> Iota(double start, double step,
                                  Tensor& out) const override {
    return devices::Iota(start, step, out);
  }
  absl::StatusOr<KernelCost> RandomUniform(uint64_t seed, double low,
                                           double high,
                                           Tensor& out) const override {
    return devices::RandomUniform(seed, low, high, out);
  }
  absl::StatusOr<KernelCost> RandomNormal(uint64_t seed, double mean,
                                          double stddev,
                                          Tensor& out) const override {
    return devices::RandomNormal(seed, mean, stddev, out);
  }
  absl::StatusOr<KernelCost> MatMul(const Tensor& a, const Tensor& b,
                                    bool transpose_a, bool transpose_b,
                                    Tensor& out) const override {
    return devices::MatMul(a, b, transpose_a, transpose_b, out);
  }
  absl::StatusOr<KernelCost> SoftmaxCrossEntropy(
      const Tensor& logits, const Tensor& labels, Tensor& loss,
      Tensor& dlogits) const override {
    return devices::SoftmaxCrossEntropy(logits, labels, loss, dlogits);
  }
  absl::StatusOr<KernelCost> ReduceInto(ReduceOp op,
                                        absl::Span<const Tensor> inputs,
                                        Tensor& out) const override {
    return devices::ReduceInto(op, inputs, out);
  }
  absl::StatusOr<KernelCost> Accumulate(ReduceOp op, const Tensor& src,
                                        Tensor& dst) const override {
    absl::Status valid = CheckAccumulateArgs("Accumulate", src, dst);
    RETURN_IF_ERROR(valid);
    valid = CheckHostTensor("Accumulate", "source", src);
    if (valid.ok()) valid = CheckHostTensor("Accumulate", "destination", dst);
    RETURN_IF_ERROR(valid);
    return devices::Accumulate(op, src.raw_data(), dst.raw_data(),
                               dst.num_elements(), dst.dtype());
  }
  absl::StatusOr<KernelCost> FinalizeMean(Tensor& data,
                                          int64_t divisor) const override {
    RETURN_IF_ERROR(CheckHostTensor("FinalizeMean", "data", data));
    return devices::FinalizeMean(data.raw_data(), data.num_elements(),
                                 data.dtype(), divisor);
  }
  absl::StatusOr<KernelCost> BiasAdd(const Tensor& bias,
                                     Tensor& x) const override {
    return devices::BiasAdd(bias, x);
  }
  absl::StatusOr<KernelCost> BiasAddGrad(const Tensor& dy,
                                         Tensor& db) const override {
    return devices::BiasAddGrad(dy, db);
  }
  absl::StatusOr<KernelCost> AverageLoss(const Tensor& loss,
                                         const Tensor* weight, double divisor,
                                         Tensor& out) const override {
    return devices::AverageLoss(loss, weight, divisor, out);
  }
  absl::StatusOr<KernelCost> RowScale(const Tensor& in,
                                      const Tensor& row_weights, double alpha,
                                      Tensor& out) const override {
    return devices::RowScale(in, row_weights, alpha, out);
  }
  absl::StatusOr<KernelCost> SgdUpdate(Tensor& var, const Tensor& grad,
                                       Tensor* m, double learning_rate,
                                       double momentum,
                                       bool nesterov) const override {
    return devices::SgdUpdate(var, grad, m, learning_rate, momentum, nesterov);
  }
  absl::StatusOr<KernelCost> AdamUpdate(Tensor& var, const Tensor& grad,
                                        Tensor& m, Tensor& v, double alpha,
                                        double beta_1, double beta_2,
                                        double epsilon) const override {
    return devices::AdamUpdate(var, grad, m, v, alpha, beta_1, beta_2, epsilon);
  }
};

}  // namespace

const KernelLibrary& HostKernels() {
  static const HostKernelLibrary* const kLibrary = new HostKernelLibrary();
  return *kLibrary;
}

absl::Status CheckAccumulateArgs(absl::string_view kernel, const Tensor& src,
                                 const Tensor& dst) {
  if (src.dtype() != dst.dtype() || src.num_elements() != dst.num_elements()) {
    return absl::InvalidArgumentError(absl::StrCat(
        kernel, ": source ", src.DebugString(), " and destination ",
        dst.DebugString(), " must have one dtype and element count"));
  }
  return absl::OkStatus();
}

}  // namespace devices
