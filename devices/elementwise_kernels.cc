#include "devices/elementwise_kernels.h"

#include <Eigen/Core>
#include <cmath>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "devices/kernel_util.h"
#include "devices/status_macros.h"

namespace devices {
namespace {

// Checks that every tensor in `tensors` has host data and the dtype and
// shape of the first.
absl::Status CheckOperands(
    absl::string_view kernel,
    std::initializer_list<std::pair<const char*, const Tensor*>> tensors) {
  const Tensor& first = *tensors.begin()->second;
  for (const auto& [role, tensor] : tensors) {
    absl::Status s =
        CheckShapeAndType(kernel, role, *tensor, first.dtype(), first.shape());
    if (s.ok()) s = CheckHostTensor(kernel, role, *tensor);
    RETURN_IF_ERROR(s);
  }
  return absl::OkStatus();
}

template <typename T>
absl::Status BinaryInts(BinaryOp kind, const T* a, const T* b, T* out,
                        int64_t n) {
  using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned,
                               std::make_unsigned_t<T>>;
  if (kind == BinaryOp::kDiv) {
    for (int64_t i = 0; i < n; ++i) {
      if (b[i] == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("Div: integer division by zero at element ", i));
      }
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    const U x = static_cast<U>(a[i]);
    const U y = static_cast<U>(b[i]);
    switch (kind) {
      case BinaryOp::kAdd:
        out[i] = static_cast<T>(x + y);
        break;
      case BinaryOp::kSub:
        out[i] = static_cast<T>(x - y);
        break;
      case BinaryOp::kMul:
        out[i] = static_cast<T>(x * y);
        break;
      case BinaryOp::kDiv:
        if constexpr (std::is_signed_v<T>) {
          // The one overflowing quotient, min / -1, wraps to min.
          out[i] = (b[i] == -1) ? static_cast<T>(U{0} - x) : a[i] / b[i];
        } else {
          out[i] = static_cast<T>(a[i] / b[i]);
        }
        break;
    }
  }
  return absl::OkStatus();
}

template <typename T>
void BinaryFloats(BinaryOp kind, const T* a, const T* b, T* out, int64_t n) {
  if constexpr (std::is_floating_point_v<T>) {
    ConstFlatMap<T> x(a, n);
    ConstFlatMap<T> y(b, n);
    FlatMap<T> z(out, n);
    switch (kind) {
      case BinaryOp::kAdd:
        z = x + y;
        break;
      case BinaryOp::kSub:
        z = x - y;
        break;
      case BinaryOp::kMul:
        z = x * y;
        break;
      case BinaryOp::kDiv:
        z = x / y;
        break;
    }
  } else {
    for (int64_t i = 0; i < n; ++i) {
      const float x = LoadValue(a[i]);
      const float y = LoadValue(b[i]);
      float z = 0;
      switch (kind) {
        case BinaryOp::kAdd:
          z = x + y;
          break;
        case BinaryOp::kSub:
          z = x - y;
          break;
        case BinaryOp::kMul:
          z = x * y;
          break;
        case BinaryOp::kDiv:
          z = x / y;
          break;
      }
      out[i] = StoreValue<T>(z);
    }
  }
}

absl::StatusOr<KernelCost> Binary(BinaryOp op, const Tensor& a, const Tensor& b,
                                  Tensor& out) {
  const absl::string_view name = BinaryOpName(op);
  RETURN_IF_ERROR(
      CheckOperands(name, {{"a", &a}, {"b", &b}, {"output", &out}}));
  return BinaryRaw(op, a.raw_data(), b.raw_data(), out.raw_data(),
                   a.num_elements(), a.dtype());
}

// True if `value` is an integer representable in T.
template <typename T>
bool FitsInteger(double value) {
  const double low = static_cast<double>(std::numeric_limits<T>::min());
  // max() + 1 is a power of two, exact in double.
  const double high = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
  return std::floor(value) == value && value >= low && value < high;
}

}  // namespace

absl::string_view BinaryOpName(BinaryOp op) {
  switch (op) {
    case BinaryOp::kAdd:
      return "Add";
    case BinaryOp::kSub:
      return "Sub";
    case BinaryOp::kMul:
      return "Mul";
    case BinaryOp::kDiv:
      return "Div";
  }
  return "InvalidBinaryOp";
}

absl::StatusOr<KernelCost> BinaryRaw(BinaryOp op, const void* a, const void* b,
                                     void* out, int64_t count, DType dtype) {
  const absl::string_view name = BinaryOpName(op);
  if (dtype == DType::kBool) {
    return UnsupportedDType(name, dtype, "every dtype but bool");
  }
  if (count < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": count must be >= 0, not ", count));
  }
  if (count > 0 && (a == nullptr || b == nullptr || out == nullptr)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": null buffer for ", count, " elements"));
  }
  RETURN_IF_ERROR(VisitDType(dtype, [&](auto zero) -> absl::Status {
    using T = decltype(zero);
    const T* x = static_cast<const T*>(a);
    const T* y = static_cast<const T*>(b);
    T* z = static_cast<T*>(out);
    if constexpr (kIsFloatStorage<T>) {
      BinaryFloats(op, x, y, z, count);
      return absl::OkStatus();
    } else if constexpr (std::is_same_v<T, bool>) {
      return absl::InternalError("bool rejected above");
    } else {
      return BinaryInts(op, x, y, z, count);
    }
  }));
  return BinaryOpCost(name, dtype, count);
}

absl::StatusOr<KernelCost> Add(const Tensor& a, const Tensor& b, Tensor& out) {
  return Binary(BinaryOp::kAdd, a, b, out);
}
absl::StatusOr<KernelCost> Sub(const Tensor& a, const Tensor& b, Tensor& out) {
  return Binary(BinaryOp::kSub, a, b, out);
}
absl::StatusOr<KernelCost> Mul(const Tensor& a, const Tensor& b, Tensor& out) {
  return Binary(BinaryOp::kMul, a, b, out);
}
absl::StatusOr<KernelCost> Div(const Tensor& a, const Tensor& b, Tensor& out) {
  return Binary(BinaryOp::kDiv, a, b, out);
}

absl::StatusOr<KernelCost> Scale(const Tensor& in, double alpha, Tensor& out) {
  RETURN_IF_ERROR(CheckOperands("Scale", {{"input", &in}, {"output", &out}}));
  if (!IsFloating(in.dtype())) {
    return UnsupportedDType("Scale", in.dtype(),
                            "float32, float64, float16, bfloat16");
  }
  const int64_t n = in.num_elements();
  VisitDType(in.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<T>) {
      out.flat<T>() = in.flat<T>() * static_cast<T>(alpha);
    } else if constexpr (kIsFloatStorage<T>) {
      // alpha rounded to the dtype, product rounded once.
      const float a = LoadValue(StoreValue<T>(static_cast<float>(alpha)));
      const T* x = in.data<T>();
      T* y = out.data<T>();
      for (int64_t i = 0; i < n; ++i) y[i] = StoreValue<T>(a * LoadValue(x[i]));
    }
  });
  return ScaleCost(in.dtype(), n);
}

absl::StatusOr<KernelCost> Relu(const Tensor& features, Tensor& out) {
  RETURN_IF_ERROR(
      CheckOperands("Relu", {{"features", &features}, {"output", &out}}));
  if (features.dtype() == DType::kBool) {
    return UnsupportedDType("Relu", features.dtype(), "every dtype but bool");
  }
  const int64_t n = features.num_elements();
  VisitDType(features.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (!std::is_same_v<T, bool>) {
      using C = ComputeType<T>;
      const T* x = features.data<T>();
      T* y = out.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        const C v = LoadValue(x[i]);
        y[i] = v < C{0} ? StoreValue<T>(C{0}) : x[i];
      }
    }
  });
  return ReluCost(features.dtype(), n);
}

absl::StatusOr<KernelCost> ReluGrad(const Tensor& gradients,
                                    const Tensor& features, Tensor& out) {
  RETURN_IF_ERROR(CheckOperands(
      "ReluGrad",
      {{"gradients", &gradients}, {"features", &features}, {"output", &out}}));
  if (features.dtype() == DType::kBool) {
    return UnsupportedDType("ReluGrad", features.dtype(),
                            "every dtype but bool");
  }
  const int64_t n = features.num_elements();
  VisitDType(features.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (!std::is_same_v<T, bool>) {
      using C = ComputeType<T>;
      const T* g = gradients.data<T>();
      const T* x = features.data<T>();
      T* y = out.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        y[i] = LoadValue(x[i]) > C{0} ? g[i] : StoreValue<T>(C{0});
      }
    }
  });
  return ReluGradCost(features.dtype(), n);
}

absl::StatusOr<KernelCost> Fill(double value, Tensor& out) {
  RETURN_IF_ERROR(CheckHostTensor("Fill", "output", out));
  RETURN_IF_ERROR(VisitDType(out.dtype(), [&](auto zero) -> absl::Status {
    using T = decltype(zero);
    T fill{};
    if constexpr (std::is_same_v<T, bool>) {
      if (value != 0 && value != 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("Fill: a bool tensor takes 0 or 1, not ", value));
      }
      fill = value == 1;
    } else if constexpr (kIsFloatStorage<T>) {
      fill = StoreValue<T>(static_cast<ComputeType<T>>(value));
    } else {
      if (!FitsInteger<T>(value)) {
        return absl::InvalidArgumentError(
            absl::StrCat("Fill: ", value, " is not an integer that fits in ",
                         DTypeName(out.dtype())));
      }
      fill = static_cast<T>(value);
    }
    T* y = out.data<T>();
    for (int64_t i = 0; i < out.num_elements(); ++i) y[i] = fill;
    return absl::OkStatus();
  }));
  return FillCost(out.dtype(), out.num_elements());
}

absl::StatusOr<KernelCost> Iota(double start, double step, Tensor& out) {
  RETURN_IF_ERROR(CheckHostTensor("Iota", "output", out));
  const int64_t n = out.num_elements();
  RETURN_IF_ERROR(VisitDType(out.dtype(), [&](auto zero) -> absl::Status {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bool>) {
      return UnsupportedDType("Iota", out.dtype(), "every dtype but bool");
    } else if constexpr (kIsFloatStorage<T>) {
      using C = ComputeType<T>;
      T* y = out.data<T>();
      for (int64_t i = 0; i < n; ++i) {
        y[i] = StoreValue<T>(
            static_cast<C>(start + static_cast<double>(i) * step));
      }
      return absl::OkStatus();
    } else {
      // The values are linear in i, so the ends bound them all.
      const double last = start + static_cast<double>(n > 0 ? n - 1 : 0) * step;
      if (!FitsInteger<T>(start) || !FitsInteger<T>(step) ||
          !FitsInteger<T>(last)) {
        return absl::InvalidArgumentError(
            absl::StrCat("Iota: start ", start, " and step ", step, " over ", n,
                         " elements must be integers whose values fit in ",
                         DTypeName(out.dtype())));
      }
      T* y = out.data<T>();
      const int64_t first = static_cast<int64_t>(start);
      const int64_t delta = static_cast<int64_t>(step);
      // Unsigned arithmetic: the bounds were checked in double, which may
      // round, so overflow must not be undefined.
      for (int64_t i = 0; i < n; ++i) {
        y[i] = static_cast<T>(static_cast<uint64_t>(first) +
                              static_cast<uint64_t>(i) *
                                  static_cast<uint64_t>(delta));
      }
      return absl::OkStatus();
    }
  }));
  return IotaCost(out.dtype(), n);
}

}  // namespace devices
