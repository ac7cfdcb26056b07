// What a kernel costs: floating-point (or integer) operations and bytes of
// memory traffic. Every kernel declares a KernelCost so that a simulated
// device can charge its time from a roofline (max(flops / peak_flops,
// bytes / bandwidth)); the host kernels, the simulator and the CUDA device all
// take their costs from the formulas below, so they agree.
//
// Example:
//   devices::KernelCost cost = devices::MatMulCost(DType::kFloat32, 128, 64,
//   32);
//   // cost.name == "MatMul", cost.flops == 2*128*64*32,
//   // cost.bytes == 4 * (128*32 + 32*64 + 128*64)
#ifndef DEVICES_KERNEL_COSTS_H_
#define DEVICES_KERNEL_COSTS_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "devices/dtype.h"
#include "devices/reduce_op.h"

namespace devices {

struct KernelCost {
  std::string name;  // The kernel, e.g. "Add", "MatMul", "Memcpy".
  double flops = 0;  // Arithmetic operations (integer ops count too).
  double bytes = 0;  // Bytes read plus bytes written in device memory.
};

// An elementwise kernel over `count` elements with `num_inputs` inputs and
// one output, each of `dtype`: flops = count * flops_per_element, bytes =
// (num_inputs + 1) * count * size.
KernelCost ElementwiseCost(absl::string_view name, DType dtype, int64_t count,
                           int num_inputs, double flops_per_element);

// Add/Sub/Mul/Div of two tensors: 1 flop and 3 element accesses per element.
KernelCost BinaryOpCost(absl::string_view name, DType dtype, int64_t count);
// out = alpha * in: 1 flop, 2 accesses per element.
KernelCost ScaleCost(DType dtype, int64_t count);
// Reducing `num_inputs` tensors of `count` elements into one:
// (num_inputs - 1) * count flops (plus count for the mean's division),
// (num_inputs + 1) * count accesses.
KernelCost ReduceIntoCost(ReduceOp op, DType dtype, int64_t count,
                          int64_t num_inputs);
// dst = dst op src: count flops, 3 * count accesses.
KernelCost AccumulateCost(DType dtype, int64_t count);
// data /= divisor: count flops, 2 * count accesses.
KernelCost FinalizeMeanCost(DType dtype, int64_t count);
// [m,k] x [k,n]: 2*m*n*k flops; reads both operands and writes the result
// once.
KernelCost MatMulCost(DType dtype, int64_t m, int64_t n, int64_t k);
// Relu: 1 flop, 2 accesses per element. ReluGrad: 1 flop, 3 accesses.
KernelCost ReluCost(DType dtype, int64_t count);
KernelCost ReluGradCost(DType dtype, int64_t count);
// Sparse softmax cross-entropy over [batch, classes] logits: per logit a max,
// a subtraction, an exp, a sum and two operations for the gradient (6 flops),
// per row a log and a subtraction (2 flops); reads logits and labels, writes
// loss and dlogits.
KernelCost SoftmaxCrossEntropyCost(DType dtype, DType label_dtype,
                                   int64_t batch, int64_t classes);
// Fill: writes count elements, no flops. Iota: 1 flop per element.
KernelCost FillCost(DType dtype, int64_t count);
KernelCost IotaCost(DType dtype, int64_t count);
// Counter-based random numbers: a Philox4x32-10 block (about 80 integer
// operations) makes 2 values; uniform adds 2 flops per value and normal adds
// a Box-Muller transform (about 20 flops per value). Writes count elements.
KernelCost RandomUniformCost(DType dtype, int64_t count);
KernelCost RandomNormalCost(DType dtype, int64_t count);
// The model kernels of training_kernels.h.
// "BiasAdd" over [batch, features]: 1 flop per element; reads x and the bias,
// writes x.
KernelCost BiasAddCost(DType dtype, int64_t batch, int64_t features);
// "BiasAddGrad": column sums of dy [batch, features]: 1 flop per element of
// dy; reads dy, writes [features].
KernelCost BiasAddGradCost(DType dtype, int64_t batch, int64_t features);
// "AverageLoss": sum(loss * weight) / divisor over `count` losses with
// `weight_count` (0, 1 or count) weights: count adds, count multiplies when
// weighted, one division; reads losses and weights, writes a scalar.
KernelCost AverageLossCost(DType dtype, int64_t count, int64_t weight_count);
// "RowScale": out[i, j] = in[i, j] * (alpha * w[i]) over [rows, cols]: one
// flop per element plus one per row; reads in and w, writes out.
KernelCost RowScaleCost(DType dtype, int64_t rows, int64_t cols);
// "SGDUpdate" over `count` elements: 2 flops per element without momentum
// (reads var and grad, writes var), 4 with momentum and 7 with Nesterov
// momentum (also reads and writes the momentum).
KernelCost SgdUpdateCost(DType dtype, int64_t count, bool momentum,
                         bool nesterov);
// "AdamUpdate" over `count` elements: 12 flops per element; reads var, grad,
// m and v, writes var, m and v.
KernelCost AdamUpdateCost(DType dtype, int64_t count);

// A copy of `bytes` bytes within one memory: reads and writes each byte.
KernelCost MemcpyCost(int64_t bytes);

}  // namespace devices

#endif  // DEVICES_KERNEL_COSTS_H_
