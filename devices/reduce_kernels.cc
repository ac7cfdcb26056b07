#include "devices/reduce_kernels.h"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "devices/kernel_util.h"
#include "devices/status_macros.h"

namespace devices {
namespace {

// Wrapping integer arithmetic (signed overflow would be undefined).
template <typename C>
C AddValues(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    using U = std::make_unsigned_t<C>;
    return static_cast<C>(static_cast<U>(a) + static_cast<U>(b));
  } else {
    return a + b;
  }
}

template <typename C>
C MulValues(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    // uint8 promotes to int, whose product of two bytes cannot overflow.
    using U = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned,
                                 std::make_unsigned_t<C>>;
    return static_cast<C>(static_cast<U>(a) * static_cast<U>(b));
  } else {
    return a * b;
  }
}

template <typename C>
C MinValues(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return b < a ? b : a;
}

template <typename C>
C MaxValues(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return a < b ? b : a;
}

template <typename T, typename Fn>
void Combine(const T* src, T* dst, int64_t n, Fn fn) {
  for (int64_t i = 0; i < n; ++i) {
    dst[i] = StoreValue<T>(fn(LoadValue(dst[i]), LoadValue(src[i])));
  }
}

template <typename T>
void AccumulateTyped(ReduceOp op, const T* src, T* dst, int64_t n) {
  using C = ComputeType<T>;
  if constexpr (std::is_floating_point_v<T>) {
    // Vectorized by Eigen.
    Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> s(src, n);
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> d(dst, n);
    if (op == ReduceOp::kSum || op == ReduceOp::kMean) {
      d += s;
      return;
    }
    if (op == ReduceOp::kProd) {
      d *= s;
      return;
    }
  }
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kMean:
      Combine(src, dst, n, AddValues<C>);
      break;
    case ReduceOp::kProd:
      Combine(src, dst, n, MulValues<C>);
      break;
    case ReduceOp::kMin:
      Combine(src, dst, n, MinValues<C>);
      break;
    case ReduceOp::kMax:
      Combine(src, dst, n, MaxValues<C>);
      break;
  }
}

template <typename T>
void FinalizeMeanTyped(T* values, int64_t count, int64_t divisor) {
  using C = ComputeType<T>;
  if constexpr (std::is_floating_point_v<T>) {
    Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(values, count) /=
        static_cast<T>(divisor);
  } else if constexpr (std::is_floating_point_v<C>) {
    const C d = static_cast<C>(divisor);
    for (int64_t i = 0; i < count; ++i) {
      values[i] = StoreValue<T>(LoadValue(values[i]) / d);
    }
  } else {
    // Integers: the divisor may exceed the type's range (then every
    // quotient is 0 or, for the most negative value, -1 rounded to 0).
    for (int64_t i = 0; i < count; ++i) {
      values[i] = static_cast<T>(static_cast<int64_t>(values[i]) / divisor);
    }
  }
}

// Runs fn(src, dst, n) over `count` elements of T: on the buffers
// themselves where they are aligned for T, else block by block on aligned
// copies (dst's copied back), since the kernels read and write T directly
// and raw collective buffers may sit at any byte offset. `src` may be null
// (fn gets null) or equal to dst.
template <typename T, typename Fn>
void InAlignedBlocks(const void* src, void* dst, int64_t count, Fn fn) {
  auto aligned = [](const void* p) {
    return reinterpret_cast<uintptr_t>(p) % alignof(T) == 0;
  };
  if (aligned(src) && aligned(dst)) {
    fn(static_cast<const T*>(src), static_cast<T*>(dst), count);
    return;
  }
  constexpr int64_t kBlock = 1024;
  T s[kBlock];
  T d[kBlock];
  for (int64_t b = 0; b < count; b += kBlock) {
    const int64_t n = std::min(kBlock, count - b);
    const size_t offset = static_cast<size_t>(b) * sizeof(T);
    const size_t bytes = static_cast<size_t>(n) * sizeof(T);
    if (src != nullptr) {
      std::memcpy(s, static_cast<const char*>(src) + offset, bytes);
    }
    std::memcpy(d, static_cast<char*>(dst) + offset, bytes);
    fn(src != nullptr ? s : nullptr, d, n);
    std::memcpy(static_cast<char*>(dst) + offset, d, bytes);
  }
}

// bool: read as bytes so that any non-zero byte counts as true.
void AccumulateBool(ReduceOp op, const uint8_t* src, uint8_t* dst, int64_t n) {
  const bool logical_or = op == ReduceOp::kSum || op == ReduceOp::kMax;
  for (int64_t i = 0; i < n; ++i) {
    const bool a = dst[i] != 0;
    const bool b = src[i] != 0;
    dst[i] = static_cast<uint8_t>(logical_or ? (a || b) : (a && b));
  }
}

absl::Status CheckBuffers(absl::string_view kernel, const void* a,
                          const void* b, int64_t count) {
  if (count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(kernel, ": count must be >= 0, not ", count));
  }
  if (count > 0 && (a == nullptr || b == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat(kernel, ": null buffer for ", count, " elements"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<KernelCost> Accumulate(ReduceOp op, const void* src, void* dst,
                                      int64_t count, DType dtype) {
  RETURN_IF_ERROR(CheckBuffers("Accumulate", src, dst, count));
  if (dtype == DType::kBool) {
    if (op == ReduceOp::kMean) {
      return absl::InvalidArgumentError(
          "Accumulate: MEAN is not defined for bool; use SUM (logical or) or "
          "PROD (logical and)");
    }
    AccumulateBool(op, static_cast<const uint8_t*>(src),
                   static_cast<uint8_t*>(dst), count);
  } else {
    VisitDType(dtype, [&](auto zero) {
      using T = decltype(zero);
      if constexpr (!std::is_same_v<T, bool>) {
        InAlignedBlocks<T>(src, dst, count, [&](const T* s, T* d, int64_t n) {
          AccumulateTyped(op, s, d, n);
        });
      }
    });
  }
  return AccumulateCost(dtype, count);
}

absl::StatusOr<KernelCost> FinalizeMean(void* data, int64_t count, DType dtype,
                                        int64_t divisor) {
  RETURN_IF_ERROR(CheckBuffers("FinalizeMean", data, data, count));
  if (divisor < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FinalizeMean: divisor must be >= 1 (the number of contributions), "
        "not ",
        divisor));
  }
  if (dtype == DType::kBool) {
    return absl::InvalidArgumentError(
        "FinalizeMean: MEAN is not defined for bool");
  }
  VisitDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (!std::is_same_v<T, bool>) {  // bool: rejected above
      InAlignedBlocks<T>(nullptr, data, count,
                         [&](const T*, T* values, int64_t n) {
                           FinalizeMeanTyped(values, n, divisor);
                         });
    }
  });
  return FinalizeMeanCost(dtype, count);
}

absl::StatusOr<KernelCost> ReduceInto(ReduceOp op,
                                      absl::Span<const Tensor> inputs,
                                      Tensor& out) {
  if (inputs.empty()) {
    return absl::InvalidArgumentError("ReduceInto needs at least one input");
  }
  absl::Status valid = CheckHostTensor("ReduceInto", "output", out);
  RETURN_IF_ERROR(valid);
  if (op == ReduceOp::kMean && out.dtype() == DType::kBool) {
    return absl::InvalidArgumentError(
        "ReduceInto: MEAN is not defined for bool");
  }
  // If out aliases an input, start from that input so it is read before it
  // is overwritten (every ReduceOp is commutative).
  size_t first = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string role = absl::StrCat("input ", i);
    valid = CheckShapeAndType("ReduceInto", role, inputs[i], out.dtype(),
                              out.shape());
    if (valid.ok()) valid = CheckHostTensor("ReduceInto", role, inputs[i]);
    RETURN_IF_ERROR(valid);
    if (inputs[i].raw_data() == out.raw_data()) first = i;
  }
  const int64_t count = out.num_elements();
  if (inputs[first].raw_data() != out.raw_data() && out.bytes() > 0) {
    std::memcpy(out.raw_data(), inputs[first].raw_data(), out.bytes());
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i == first) continue;
    ASSIGN_OR_RETURN(KernelCost step,
                     Accumulate(op, inputs[i].raw_data(), out.raw_data(), count,
                                out.dtype()));
  }
  if (op == ReduceOp::kMean) {
    ASSIGN_OR_RETURN(KernelCost mean,
                     FinalizeMean(out.raw_data(), count, out.dtype(),
                                  static_cast<int64_t>(inputs.size())));
  }
  return ReduceIntoCost(op, out.dtype(), count,
                        static_cast<int64_t>(inputs.size()));
}

}  // namespace devices
