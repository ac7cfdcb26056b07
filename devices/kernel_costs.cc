#include "devices/kernel_costs.h"

namespace devices {
namespace {

double Bytes(DType dtype, int64_t count) {
  return static_cast<double>(count) * static_cast<double>(DTypeSize(dtype));
}

}  // namespace

KernelCost ElementwiseCost(absl::string_view name, DType dtype, int64_t count,
                           int num_inputs, double flops_per_element) {
  return KernelCost{std::string(name),
                    static_cast<double>(count) * flops_per_element,
                    (num_inputs + 1) * Bytes(dtype, count)};
}

KernelCost BinaryOpCost(absl::string_view name, DType dtype, int64_t count) {
  return ElementwiseCost(name, dtype, count, 2, 1.0);
}

KernelCost ScaleCost(DType dtype, int64_t count) {
  return ElementwiseCost("Scale", dtype, count, 1, 1.0);
}

KernelCost ReduceIntoCost(ReduceOp op, DType dtype, int64_t count,
                          int64_t num_inputs) {
  const double n = static_cast<double>(count);
  double flops = num_inputs > 1 ? static_cast<double>(num_inputs - 1) * n : 0;
  if (op == ReduceOp::kMean) flops += n;
  return KernelCost{"ReduceInto", flops,
                    static_cast<double>(num_inputs + 1) * Bytes(dtype, count)};
}

KernelCost AccumulateCost(DType dtype, int64_t count) {
  return KernelCost{"Accumulate", static_cast<double>(count),
                    3 * Bytes(dtype, count)};
}

KernelCost FinalizeMeanCost(DType dtype, int64_t count) {
  return KernelCost{"FinalizeMean", static_cast<double>(count),
                    2 * Bytes(dtype, count)};
}

KernelCost MatMulCost(DType dtype, int64_t m, int64_t n, int64_t k) {
  const double dm = static_cast<double>(m);
  const double dn = static_cast<double>(n);
  const double dk = static_cast<double>(k);
  return KernelCost{
      "MatMul", 2 * dm * dn * dk,
      static_cast<double>(DTypeSize(dtype)) * (dm * dk + dk * dn + dm * dn)};
}

KernelCost ReluCost(DType dtype, int64_t count) {
  return ElementwiseCost("Relu", dtype, count, 1, 1.0);
}

KernelCost ReluGradCost(DType dtype, int64_t count) {
  return ElementwiseCost("ReluGrad", dtype, count, 2, 1.0);
}

KernelCost SoftmaxCrossEntropyCost(DType dtype, DType label_dtype,
                                   int64_t batch, int64_t classes) {
  const double b = static_cast<double>(batch);
  const double logits = b * static_cast<double>(classes);
  return KernelCost{"SoftmaxCrossEntropy", 6 * logits + 2 * b,
                    static_cast<double>(DTypeSize(dtype)) * (2 * logits + b) +
                        static_cast<double>(DTypeSize(label_dtype)) * b};
}

KernelCost FillCost(DType dtype, int64_t count) {
  return KernelCost{"Fill", 0, Bytes(dtype, count)};
}

KernelCost IotaCost(DType dtype, int64_t count) {
  return KernelCost{"Iota", static_cast<double>(count), Bytes(dtype, count)};
}

KernelCost RandomUniformCost(DType dtype, int64_t count) {
  return KernelCost{"RandomUniform", 42.0 * static_cast<double>(count),
                    Bytes(dtype, count)};
}

KernelCost RandomNormalCost(DType dtype, int64_t count) {
  return KernelCost{"RandomNormal", 60.0 * static_cast<double>(count),
                    Bytes(dtype, count)};
}

KernelCost MemcpyCost(int64_t bytes) {
  return KernelCost{"Memcpy", 0, 2 * static_cast<double>(bytes)};
}

KernelCost BiasAddCost(DType dtype, int64_t batch, int64_t features) {
  const double n = static_cast<double>(batch) * static_cast<double>(features);
  return KernelCost{"BiasAdd", n,
                    static_cast<double>(DTypeSize(dtype)) *
                        (2 * n + static_cast<double>(features))};
}

KernelCost BiasAddGradCost(DType dtype, int64_t batch, int64_t features) {
  const double n = static_cast<double>(batch) * static_cast<double>(features);
  return KernelCost{"BiasAddGrad", n,
                    static_cast<double>(DTypeSize(dtype)) *
                        (n + static_cast<double>(features))};
}

KernelCost AverageLossCost(DType dtype, int64_t count, int64_t weight_count) {
  const double n = static_cast<double>(count);
  const double flops = n + (weight_count > 0 ? n : 0) + 1;
  return KernelCost{"AverageLoss", flops,
                    static_cast<double>(DTypeSize(dtype)) *
                        (n + static_cast<double>(weight_count) + 1)};
}

KernelCost RowScaleCost(DType dtype, int64_t rows, int64_t cols) {
  const double r = static_cast<double>(rows);
  const double n = r * static_cast<double>(cols);
  return KernelCost{"RowScale", n + r,
                    static_cast<double>(DTypeSize(dtype)) * (2 * n + r)};
}

KernelCost SgdUpdateCost(DType dtype, int64_t count, bool momentum,
                         bool nesterov) {
  const double n = static_cast<double>(count);
  if (!momentum)
    return KernelCost{"SGDUpdate", 2 * n,
                      static_cast<double>(DTypeSize(dtype)) * 3 * n};
  return KernelCost{"SGDUpdate", (nesterov ? 7 : 4) * n,
                    static_cast<double>(DTypeSize(dtype)) * 5 * n};
}

KernelCost AdamUpdateCost(DType dtype, int64_t count) {
  const double n = static_cast<double>(count);
  return KernelCost{"AdamUpdate", 12 * n,
                    static_cast<double>(DTypeSize(dtype)) * 7 * n};
}

}  // namespace devices
