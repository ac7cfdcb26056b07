// GCC 12 with -march=native on AVX-512 machines (--config=opt) reports false
// -Wuninitialized / -Wmaybe-uninitialized inside its own intrinsics headers
// (the deliberately undefined `__m512 __Y = __Y;` of _mm512_undefined_ps)
// once Eigen's GEMM is inlined here. The pragmas must precede the first
// include of the intrinsics headers.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "devices/nn_kernels.h"

#include <Eigen/Core>
#include <cmath>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devices/kernel_util.h"
#include "devices/status_macros.h"

namespace devices {
namespace {

template <typename C>
using RowMajor =
    Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

template <typename C, typename A, typename B>
void Product(const A& a, const B& b, bool transpose_a, bool transpose_b,
             Eigen::Map<RowMajor<C>>& out) {
  if (transpose_a && transpose_b) {
    out.noalias() = a.transpose() * b.transpose();
  } else if (transpose_a) {
    out.noalias() = a.transpose() * b;
  } else if (transpose_b) {
    out.noalias() = a * b.transpose();
  } else {
    out.noalias() = a * b;
  }
}

// Widens a 16-bit float tensor into a float matrix.
template <typename T>
RowMajor<float> Widen(const Tensor& t) {
  RowMajor<float> m(t.shape().dim(0), t.shape().dim(1));
  const T* in = t.data<T>();
  for (int64_t i = 0; i < t.num_elements(); ++i) m.data()[i] = LoadValue(in[i]);
  return m;
}

template <typename T>
void MatMulTyped(const Tensor& a, const Tensor& b, bool transpose_a,
                 bool transpose_b, Tensor& out) {
  if constexpr (std::is_floating_point_v<T>) {
    Eigen::Map<RowMajor<T>> o(out.data<T>(), out.shape().dim(0),
                              out.shape().dim(1));
    Product<T>(a.matrix<T>(), b.matrix<T>(), transpose_a, transpose_b, o);
  } else if constexpr (kIsFloatStorage<T>) {
    RowMajor<float> result(out.shape().dim(0), out.shape().dim(1));
    Eigen::Map<RowMajor<float>> o(result.data(), result.rows(), result.cols());
    Product<float>(Widen<T>(a), Widen<T>(b), transpose_a, transpose_b, o);
    T* y = out.data<T>();
    for (int64_t i = 0; i < out.num_elements(); ++i) {
      y[i] = StoreValue<T>(result.data()[i]);
    }
  }
}

template <typename T, typename L>
absl::Status SoftmaxTyped(const Tensor& logits, const Tensor& labels,
                          Tensor& loss, Tensor& dlogits) {
  // float32 and the 16-bit types compute in float, float64 in double.
  using C = ComputeType<T>;
  const int64_t batch = logits.shape().dim(0);
  const int64_t classes = logits.shape().dim(1);
  const L* label = labels.data<L>();
  for (int64_t i = 0; i < batch; ++i) {
    if (label[i] < 0 || label[i] >= classes) {
      return absl::InvalidArgumentError(
          absl::StrCat("SoftmaxCrossEntropy: label ", label[i], " of row ", i,
                       " is outside the classes [0, ", classes, ")"));
    }
  }
  const T* x = logits.data<T>();
  T* l = loss.data<T>();
  T* d = dlogits.data<T>();
  std::vector<C> shifted(static_cast<size_t>(classes));
  for (int64_t i = 0; i < batch; ++i) {
    const T* row = x + i * classes;
    C max = LoadValue(row[0]);
    for (int64_t j = 1; j < classes; ++j)
      max = std::max(max, LoadValue(row[j]));
    C sum = 0;
    for (int64_t j = 0; j < classes; ++j) {
      shifted[j] = LoadValue(row[j]) - max;
      sum += std::exp(shifted[j]);
    }
    const C log_sum = std::log(sum);
    l[i] = StoreValue<T>(log_sum - shifted[label[i]]);
    for (int64_t j = 0; j < classes; ++j) {
      const C softmax = std::exp(shifted[j] - log_sum);
      d[i * classes + j] =
          StoreValue<T>(j == label[i] ? softmax - C{1} : softmax);
    }
  }
  return absl::OkStatus();
}

absl::Status CheckHost(
    absl::string_view kernel,
    std::initializer_list<std::pair<const char*, const Tensor*>> tensors) {
  for (const auto& [role, tensor] : tensors) {
    RETURN_IF_ERROR(CheckHostTensor(kernel, role, *tensor));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<KernelCost> MatMul(const Tensor& a, const Tensor& b,
                                  bool transpose_a, bool transpose_b,
                                  Tensor& out) {
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
  if (valid.ok())
    valid = CheckHost("MatMul", {{"a", &a}, {"b", &b}, {"output", &out}});
  RETURN_IF_ERROR(valid);
  if (out.num_elements() > 0 &&
      (out.raw_data() == a.raw_data() || out.raw_data() == b.raw_data())) {
    return absl::InvalidArgumentError(
        "MatMul output shares a buffer with an operand; use a separate "
        "output tensor");
  }
  VisitDType(a.dtype(), [&](auto zero) {
    MatMulTyped<decltype(zero)>(a, b, transpose_a, transpose_b, out);
  });
  return MatMulCost(a.dtype(), m, n, k);
}

absl::StatusOr<KernelCost> SoftmaxCrossEntropy(const Tensor& logits,
                                               const Tensor& labels,
                                               Tensor& loss, Tensor& dlogits) {
  if (logits.shape().rank() != 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("SoftmaxCrossEntropy needs [batch, classes] logits, got ",
                     logits.shape().DebugString()));
  }
  if (!IsFloating(logits.dtype())) {
    return UnsupportedDType("SoftmaxCrossEntropy", logits.dtype(),
                            "float32, float64, float16, bfloat16 logits");
  }
  if (labels.dtype() != DType::kInt32 && labels.dtype() != DType::kInt64) {
    return absl::InvalidArgumentError(
        absl::StrCat("SoftmaxCrossEntropy labels must be int32 or int64, not ",
                     DTypeName(labels.dtype())));
  }
  const int64_t batch = logits.shape().dim(0);
  absl::Status valid = CheckShapeAndType(
      "SoftmaxCrossEntropy", "labels", labels, labels.dtype(), Shape({batch}));
  if (valid.ok()) {
    valid = CheckShapeAndType("SoftmaxCrossEntropy", "loss", loss,
                              logits.dtype(), Shape({batch}));
  }
  if (valid.ok()) {
    valid = CheckShapeAndType("SoftmaxCrossEntropy", "dlogits", dlogits,
                              logits.dtype(), logits.shape());
  }
  if (valid.ok()) {
    valid = CheckHost("SoftmaxCrossEntropy", {{"logits", &logits},
                                              {"labels", &labels},
                                              {"loss", &loss},
                                              {"dlogits", &dlogits}});
  }
  RETURN_IF_ERROR(valid);
  RETURN_IF_ERROR(VisitDType(logits.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (kIsFloatStorage<T>) {
      return labels.dtype() == DType::kInt32
                 ? SoftmaxTyped<T, int32_t>(logits, labels, loss, dlogits)
                 : SoftmaxTyped<T, int64_t>(logits, labels, loss, dlogits);
    } else {
      return absl::InternalError("non-floating logits rejected above");
    }
  }));
  return SoftmaxCrossEntropyCost(logits.dtype(), labels.dtype(), batch,
                                 logits.shape().dim(1));
}

}  // namespace devices
