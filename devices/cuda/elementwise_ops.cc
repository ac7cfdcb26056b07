#include "devices/cuda/elementwise_ops.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "devices/cuda/cuda_kernels.h"
#include "devices/cuda/cuda_ops_util.h"
#include "devices/cuda/cuda_status.h"
#include "devices/cuda/kernel_math.h"
#include "devices/status_macros.h"

namespace devices {
namespace cuda {
namespace {

absl::string_view BinaryName(int op) {
  switch (op) {
    case math::kAdd:
      return "Add";
    case math::kSub:
      return "Sub";
    case math::kMul:
      return "Mul";
    default:
      return "Div";
  }
}

absl::StatusOr<KernelCost> Binary(CudaDevice& device, int op, const Tensor& a,
                                  const Tensor& b, Tensor& out) {
  const absl::string_view name = BinaryName(op);
  RETURN_IF_ERROR(
      CheckOperands(device, name, {{"a", &a}, {"b", &b}, {"output", &out}}));
  if (a.dtype() == DType::kBool) {
    return UnsupportedDType(name, a.dtype(), "every dtype but bool");
  }
  const int64_t n = a.num_elements();
  ScopedCudaDevice on_device(device.ordinal());
  RETURN_IF_ERROR(on_device.status());
  if (op == math::kDiv && !IsFloating(a.dtype()) && n > 0) {
    ASSIGN_OR_RETURN(
        uint64_t first_zero,
        RunWithMinFlag(device, name, [&](unsigned long long* flag) {
          return LaunchBinary(op, DTypeCode(a.dtype()), a.raw_data(),
                              b.raw_data(), out.raw_data(), n, flag,
                              device.stream());
        }));
    if (first_zero != ~uint64_t{0}) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Div: integer division by zero at element ", first_zero));
    }
  } else {
    RETURN_IF_ERROR(LaunchStatus(
        LaunchBinary(op, DTypeCode(a.dtype()), a.raw_data(), b.raw_data(),
                     out.raw_data(), n, nullptr, device.stream()),
        name, device));
  }
  return BinaryOpCost(name, a.dtype(), n);
}

// The bits of `value` stored as dtype T (the host Fill's conversion).
template <typename T>
uint64_t StoredBits(T value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

}  // namespace

absl::StatusOr<KernelCost> Add(CudaDevice& device, const Tensor& a,
                               const Tensor& b, Tensor& out) {
  return Binary(device, math::kAdd, a, b, out);
}
absl::StatusOr<KernelCost> Sub(CudaDevice& device, const Tensor& a,
                               const Tensor& b, Tensor& out) {
  return Binary(device, math::kSub, a, b, out);
}
absl::StatusOr<KernelCost> Mul(CudaDevice& device, const Tensor& a,
                               const Tensor& b, Tensor& out) {
  return Binary(device, math::kMul, a, b, out);
}
absl::StatusOr<KernelCost> Div(CudaDevice& device, const Tensor& a,
                               const Tensor& b, Tensor& out) {
  return Binary(device, math::kDiv, a, b, out);
}

absl::StatusOr<KernelCost> Scale(CudaDevice& device, const Tensor& in,
                                 double alpha, Tensor& out) {
  RETURN_IF_ERROR(
      CheckOperands(device, "Scale", {{"input", &in}, {"output", &out}}));
  if (!IsFloating(in.dtype())) {
    return UnsupportedDType("Scale", in.dtype(),
                            "float32, float64, float16, bfloat16");
  }
  ScopedCudaDevice on_device(device.ordinal());
  RETURN_IF_ERROR(on_device.status());
  const int64_t n = in.num_elements();
  RETURN_IF_ERROR(
      LaunchStatus(LaunchScale(DTypeCode(in.dtype()), in.raw_data(), alpha,
                               out.raw_data(), n, device.stream()),
                   "Scale", device));
  return ScaleCost(in.dtype(), n);
}

absl::StatusOr<KernelCost> Relu(CudaDevice& device, const Tensor& features,
                                Tensor& out) {
  RETURN_IF_ERROR(CheckOperands(device, "Relu",
                                {{"features", &features}, {"output", &out}}));
  if (features.dtype() == DType::kBool) {
    return UnsupportedDType("Relu", features.dtype(), "every dtype but bool");
  }
  ScopedCudaDevice on_device(device.ordinal());
  RETURN_IF_ERROR(on_device.status());
  const int64_t n = features.num_elements();
  RETURN_IF_ERROR(
      LaunchStatus(LaunchRelu(DTypeCode(features.dtype()), features.raw_data(),
                              out.raw_data(), n, device.stream()),
                   "Relu", device));
  return ReluCost(features.dtype(), n);
}

absl::StatusOr<KernelCost> ReluGrad(CudaDevice& device, const Tensor& gradients,
                                    const Tensor& features, Tensor& out) {
  RETURN_IF_ERROR(CheckOperands(
      device, "ReluGrad",
      {{"gradients", &gradients}, {"features", &features}, {"output", &out}}));
  if (features.dtype() == DType::kBool) {
    return UnsupportedDType("ReluGrad", features.dtype(),
                            "every dtype but bool");
  }
  ScopedCudaDevice on_device(device.ordinal());
  RETURN_IF_ERROR(on_device.status());
  const int64_t n = features.num_elements();
  RETURN_IF_ERROR(LaunchStatus(
      LaunchReluGrad(DTypeCode(features.dtype()), gradients.raw_data(),
                     features.raw_data(), out.raw_data(), n, device.stream()),
      "ReluGrad", device));
  return ReluGradCost(features.dtype(), n);
}

absl::StatusOr<KernelCost> Fill(CudaDevice& device, double value, Tensor& out) {
  RETURN_IF_ERROR(CheckOnDevice(device, "Fill", "output", out));
  ASSIGN_OR_RETURN(
      uint64_t pattern,
      VisitDType(out.dtype(), [&](auto zero) -> absl::StatusOr<uint64_t> {
        using T = decltype(zero);
        if constexpr (std::is_same_v<T, bool>) {
          if (value != 0 && value != 1) {
            return absl::InvalidArgumentError(
                absl::StrCat("Fill: a bool tensor takes 0 or 1, not ", value));
          }
          return uint64_t{value == 1 ? 1u : 0u};
        } else if constexpr (std::is_same_v<T, Float16> ||
                             std::is_same_v<T, BFloat16>) {
          return uint64_t{T::FromFloat(static_cast<float>(value)).bits};
        } else if constexpr (std::is_floating_point_v<T>) {
          return StoredBits(static_cast<T>(value));
        } else {
          if (!FitsInteger<T>(value)) {
            return absl::InvalidArgumentError(
                absl::StrCat("Fill: ", value,
                             " is not an integer that fits "
                             "in ",
                             DTypeName(out.dtype())));
          }
          return StoredBits(static_cast<T>(value));
        }
      }));
  ScopedCudaDevice on_device(device.ordinal());
  RETURN_IF_ERROR(on_device.status());
  RETURN_IF_ERROR(LaunchStatus(
      LaunchFillPattern(pattern, static_cast<int>(DTypeSize(out.dtype())),
                        out.raw_data(), out.num_elements(), device.stream()),
      "Fill", device));
  return FillCost(out.dtype(), out.num_elements());
}

absl::StatusOr<KernelCost> Iota(CudaDevice& device, double start, double step,
                                Tensor& out) {
  RETURN_IF_ERROR(CheckOnDevice(device, "Iota", "output", out));
  const int64_t n = out.num_elements();
  const DType dtype = out.dtype();
  if (dtype == DType::kBool) {
    return UnsupportedDType("Iota", dtype, "every dtype but bool");
  }
  if (!IsFloating(dtype)) {
    // The values are linear in i, so the ends bound them all.
    const double last = start + static_cast<double>(n > 0 ? n - 1 : 0) * step;
    const bool fits = VisitDType(dtype, [&](auto zero) {
      using T = decltype(zero);
      if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        return FitsInteger<T>(start) && FitsInteger<T>(step) &&
               FitsInteger<T>(last);
      } else {
        return false;
      }
    });
    if (!fits) {
      return absl::InvalidArgumentError(absl::StrCat(
          "Iota: start ", start, " and step ", step, " over ", n,
          " elements must be integers whose values fit in ", DTypeName(dtype)));
    }
  }
  ScopedCudaDevice on_device(device.ordinal());
  RETURN_IF_ERROR(on_device.status());
  const cudaError_t error =
      IsFloating(dtype)
          ? LaunchIotaFloat(DTypeCode(dtype), start, step, out.raw_data(), n,
                            device.stream())
          : LaunchIotaInt(DTypeCode(dtype), static_cast<int64_t>(start),
                          static_cast<int64_t>(step), out.raw_data(), n,
                          device.stream());
  RETURN_IF_ERROR(LaunchStatus(error, "Iota", device));
  return IotaCost(dtype, n);
}

}  // namespace cuda
}  // namespace devices
