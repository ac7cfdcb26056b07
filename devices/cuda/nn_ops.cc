#include "devices/cuda/nn_ops.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/cuda/cuda_blas.h"
#include "devices/cuda/cuda_kernels.h"
#include "devices/cuda/cuda_ops_util.h"
#include "devices/cuda/cuda_status.h"
#include "devices/status_macros.h"

namespace devices {
namespace cuda {
namespace {

// Row-major [m, n] = op(A) [m, k] x op(B) [k, n] is, read column-major,
// C^T [n, m] = op(B)^T x op(A)^T: one GEMM on the stored buffers with the
// operands swapped, no copies. ld_a and ld_b are the stored row lengths.
absl::Status Gemm(CudaDevice& device, DType dtype, bool transpose_a,
                  bool transpose_b, int m, int n, int k, const void* a,
                  int ld_a, const void* b, int ld_b, void* c) {
  return CublasStatus(BlasGemm(device.cublas(), DTypeCode(dtype), transpose_b,
                               transpose_a, n, m, k, b, ld_b, a, ld_a, c, n),
                      "cuBLAS GEMM");
}

}  // namespace

absl::StatusOr<KernelCost> MatMul(CudaDevice& device, const Tensor& a,
                                  const Tensor& b, bool transpose_a,
                                  bool transpose_b, Tensor& out) {
  if (a.shape().rank() != 2 || b.shape().rank() != 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "MatMul needs rank-2 operands, got ", a.shape().DebugString(), " and ",
        b.shape().DebugString()));
  }
  if (!IsFloating(a.dtype())) {
    return UnsupportedDType("MatMul", a.dtype(),
                            "float32, float64, float16, bfloat16");
  }
  if (b.dtype() != a.dtype()) {
    return absl::InvalidArgumentError(
        absl::StrCat("MatMul operands have different dtypes ",
                     DTypeName(a.dtype()), " and ", DTypeName(b.dtype())));
  }
  const int64_t m = a.shape().dim(transpose_a ? 1 : 0);
  const int64_t k = a.shape().dim(transpose_a ? 0 : 1);
  const int64_t kb = b.shape().dim(transpose_b ? 1 : 0);
  const int64_t n = b.shape().dim(transpose_b ? 0 : 1);
  if (k != kb) {
    return absl::InvalidArgumentError(
        absl::StrCat("MatMul inner dimensions differ: op(a) is [", m, ",", k,
                     "] and op(b) "
                     "is [",
                     kb, ",", n, "] (transpose_a=", transpose_a,
                     ", transpose_b=", transpose_b, ")"));
  }
  absl::Status valid =
      CheckShapeAndType("MatMul", "output", out, a.dtype(), Shape({m, n}));
  if (valid.ok()) valid = CheckOnDevice(device, "MatMul", "a", a);
  if (valid.ok()) valid = CheckOnDevice(device, "MatMul", "b", b);
  if (valid.ok()) valid = CheckOnDevice(device, "MatMul", "output", out);
  RETURN_IF_ERROR(valid);
  if (out.num_elements() > 0 &&
      (out.raw_data() == a.raw_data() || out.raw_data() == b.raw_data())) {
    return absl::InvalidArgumentError(
        "MatMul output shares a buffer with an operand; use a separate "
        "output tensor");
  }
  constexpr int64_t kIntMax = std::numeric_limits<int>::max();
  for (int64_t dim : {a.shape().dim(0), a.shape().dim(1), b.shape().dim(0),
                      b.shape().dim(1)}) {
    if (dim > kIntMax) {
      return absl::InvalidArgumentError(
          absl::StrCat("MatMul on the GPU takes dimensions up to ", kIntMax,
                       ", not ", dim, "; split the product"));
    }
  }
  ScopedCudaDevice on_device(device.ordinal());
  RETURN_IF_ERROR(on_device.status());
  if (m > 0 && n > 0) {
    absl::Status s;
    if (k == 0) {
      s = CudaStatus(
          cudaMemsetAsync(out.raw_data(), 0, out.bytes(), device.stream()),
          "cudaMemsetAsync of an empty product");
    } else {
      const int ld_a = static_cast<int>(std::max<int64_t>(1, a.shape().dim(1)));
      const int ld_b = static_cast<int>(std::max<int64_t>(1, b.shape().dim(1)));
      s = Gemm(device, a.dtype(), transpose_a, transpose_b, static_cast<int>(m),
               static_cast<int>(n), static_cast<int>(k), a.raw_data(), ld_a,
               b.raw_data(), ld_b, out.raw_data());
    }
    if (!s.ok()) {
      return absl::Status(s.code(), absl::StrCat("MatMul on ", device.name(),
                                                 ": ", s.message()));
    }
  }
  return MatMulCost(a.dtype(), m, n, k);
}

absl::StatusOr<KernelCost> SoftmaxCrossEntropy(CudaDevice& device,
                                               const Tensor& logits,
                                               const Tensor& labels,
                                               Tensor& loss, Tensor& dlogits) {
  constexpr absl::string_view kName = "SoftmaxCrossEntropy";
  if (logits.shape().rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("SoftmaxCrossEntropy needs [batch, classes] logits, got ",
                     logits.shape().DebugString()));
  }
  if (!IsFloating(logits.dtype())) {
    return UnsupportedDType(kName, logits.dtype(),
                            "float32, float64, float16, bfloat16 logits");
  }
  if (labels.dtype() != DType::kInt32 && labels.dtype() != DType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat("SoftmaxCrossEntropy labels must be int32 or int64, not ",
                     DTypeName(labels.dtype())));
  }
  const int64_t batch = logits.shape().dim(0);
  const int64_t classes = logits.shape().dim(1);
  absl::Status valid = CheckShapeAndType(kName, "labels", labels,
                                         labels.dtype(), Shape({batch}));
  if (valid.ok()) {
    valid =
        CheckShapeAndType(kName, "loss", loss, logits.dtype(), Shape({batch}));
  }
  if (valid.ok()) {
    valid = CheckShapeAndType(kName, "dlogits", dlogits, logits.dtype(),
                              logits.shape());
  }
  for (const auto& [role, tensor] :
       {std::pair<const char*, const Tensor*>{"logits", &logits},
        {"labels", &labels},
        {"loss", &loss},
        {"dlogits", &dlogits}}) {
    if (valid.ok()) valid = CheckOnDevice(device, kName, role, *tensor);
  }
  RETURN_IF_ERROR(valid);
  ScopedCudaDevice on_device(device.ordinal());
  RETURN_IF_ERROR(on_device.status());
  if (batch > 0) {
    ASSIGN_OR_RETURN(
        uint64_t bad_row,
        RunWithMinFlag(device, kName, [&](unsigned long long* flag) {
          return LaunchSoftmaxCrossEntropy(
              DTypeCode(logits.dtype()), DTypeCode(labels.dtype()),
              logits.raw_data(), labels.raw_data(), loss.raw_data(),
              dlogits.raw_data(), batch, classes, flag, device.stream());
        }));
    if (bad_row != ~uint64_t{0}) {
      // Fetch the offending label for the message.
      int64_t label = 0;
      const size_t label_size = DTypeSize(labels.dtype());
      const char* label_ptr =
          static_cast<const char*>(labels.raw_data()) + bad_row * label_size;
      if (labels.dtype() == DType::kInt32) {
        int32_t value = 0;
        cudaMemcpy(&value, label_ptr, sizeof(value), cudaMemcpyDeviceToHost);
        label = value;
      } else {
        cudaMemcpy(&label, label_ptr, sizeof(label), cudaMemcpyDeviceToHost);
      }
      return absl::InvalidArgumentError(
          absl::StrCat("SoftmaxCrossEntropy: label ", label, " of row ",
                       bad_row, " is outside the classes [0, ", classes, ")"));
    }
  }
  return SoftmaxCrossEntropyCost(logits.dtype(), labels.dtype(), batch,
                                 classes);
}

}  // namespace cuda
}  // namespace devices
