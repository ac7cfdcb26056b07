// KernelLibrary: the Tensor-level kernels a program runs on one device,
// behind one interface, so that the model library, variables and
// cross-device ops compute with whatever device holds their tensors. A
// Device hands out its library (Device::kernels()): host and simulated
// devices the host kernels (devices/kernels.h, training_kernels.h; simulated
// devices compute in host memory in functional mode), a CUDA device its
// CUDA kernels (devices/cuda/cuda_kernel_library.h). Every method has the
// semantics, errors and KernelCost of the host kernel of the same name; the
// tensors must be in the library's memory (memory_space()).
//
// Each call does its work in order with the device's other work. The host
// library computes on the calling thread and has finished when it returns;
// a device library queues the kernel on the device's stream and returns
// once it is launched, and the device's later work (kernels, collectives,
// the copies out, which wait for it) sees its results. A library does not
// charge time to a simulated device: callers charge the returned cost
// (ReplicaContext::Execute).
//
// Example:
//   const devices::KernelLibrary& k = device.kernels();
//   absl::StatusOr<devices::KernelCost> cost =
//       k.MatMul(x, w, /*transpose_a=*/false, /*transpose_b=*/false, y);
//   if (cost.ok()) cost = k.BiasAdd(bias, y);
#ifndef DEVICES_KERNEL_LIBRARY_H_
#define DEVICES_KERNEL_LIBRARY_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "devices/allocator.h"
#include "devices/elementwise_kernels.h"
#include "devices/kernel_costs.h"
#include "devices/reduce_op.h"
#include "devices/tensor.h"

namespace devices {

class KernelLibrary {
 public:
  KernelLibrary() = default;
  virtual ~KernelLibrary() = default;
  KernelLibrary(const KernelLibrary&) = delete;
  KernelLibrary& operator=(const KernelLibrary&) = delete;

  // "host", or "cuda" and the device's name.
  virtual absl::string_view name() const = 0;
  // Where the tensors it computes on must be: kHost for the host library,
  // kDevice for an accelerator's.
  virtual MemorySpace memory_space() const = 0;

  // Elementwise (elementwise_kernels.h).
  virtual absl::StatusOr<KernelCost> Binary(BinaryOp op, const Tensor& a,
                                            const Tensor& b,
                                            Tensor& out) const = 0;
  virtual absl::StatusOr<KernelCost> Scale(const Tensor& in, double alpha,
                                           Tensor& out) const = 0;
  virtual absl::StatusOr<KernelCost> Relu(const Tensor& features,
                                          Tensor& out) const = 0;
  virtual absl::StatusOr<KernelCost> ReluGrad(const Tensor& gradients,
                                              const Tensor& features,
                                              Tensor& out) const = 0;
  virtual absl::StatusOr<KernelCost> Fill(double value, Tensor& out) const = 0;
  virtual absl::StatusOr<KernelCost> Iota(double start, double step,
                                          Tensor& out) const = 0;

  // Seeded random values (random_kernels.h).
  virtual absl::StatusOr<KernelCost> RandomUniform(uint64_t seed, double low,
                                                   double high,
                                                   Tensor& out) const = 0;
  virtual absl::StatusOr<KernelCost> RandomNormal(uint64_t seed, double mean,
                                                  double stddev,
                                                  Tensor& out) const = 0;

  // Matrix product and softmax cross-entropy (nn_kernels.h).
  virtual absl::StatusOr<KernelCost> MatMul(const Tensor& a, const Tensor& b,
                                            bool transpose_a, bool transpose_b,
                                            Tensor& out) const = 0;
  virtual absl::StatusOr<KernelCost> SoftmaxCrossEntropy(
      const Tensor& logits, const Tensor& labels, Tensor& loss,
      Tensor& dlogits) const = 0;

  // Reductions (reduce_kernels.h). Accumulate and FinalizeMean take whole
  // tensors: dst = dst op src (same dtype and element count, else
  // INVALID_ARGUMENT), data /= divisor.
  virtual absl::StatusOr<KernelCost> ReduceInto(ReduceOp op,
                                                absl::Span<const Tensor> inputs,
                                                Tensor& out) const = 0;
  virtual absl::StatusOr<KernelCost> Accumulate(ReduceOp op, const Tensor& src,
                                                Tensor& dst) const = 0;
  virtual absl::StatusOr<KernelCost> FinalizeMean(Tensor& data,
                                                  int64_t divisor) const = 0;

  // Training kernels (training_kernels.h).
  virtual absl::StatusOr<KernelCost> BiasAdd(const Tensor& bias,
                                             Tensor& x) const = 0;
  virtual absl::StatusOr<KernelCost> BiasAddGrad(const Tensor& dy,
                                                 Tensor& db) const = 0;
  virtual absl::StatusOr<KernelCost> AverageLoss(const Tensor& loss,
                                                 const Tensor* weight,
                                                 double divisor,
                                                 Tensor& out) const = 0;
  virtual absl::StatusOr<KernelCost> RowScale(const Tensor& in,
                                              const Tensor& row_weights,
                                              double alpha,
                                              Tensor& out) const = 0;
  virtual absl::StatusOr<KernelCost> SgdUpdate(Tensor& var, const Tensor& grad,
                                               Tensor* m, double learning_rate,
                                               double momentum,
                                               bool nesterov) const = 0;
  virtual absl::StatusOr<KernelCost> AdamUpdate(Tensor& var, const Tensor& grad,
                                                Tensor& m, Tensor& v,
                                                double alpha, double beta_1,
                                                double beta_2,
                                                double epsilon) const = 0;
};

// The host kernels behind the seam: one process-wide instance, stateless
// and thread-safe.
const KernelLibrary& HostKernels();

// INVALID_ARGUMENT unless `src` and `dst` have one dtype and element count
// (the tensor-level Accumulate's precondition), naming `kernel`.
absl::Status CheckAccumulateArgs(absl::string_view kernel, const Tensor& src,
                                 const Tensor& dst);

}  // namespace devices

#endif  // DEVICES_KERNEL_LIBRARY_H_
