#include "devices/cuda/random_ops.h"

#include <cmath>
#include <cstring>
#include <limits>
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

template <typename T>
uint64_t BitsOf(T value) {
  uint64_t bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  return bits;
}

// Checks an integer range as the host kernel does and returns the launch.
template <typename T>
absl::Status LaunchUniformInt(CudaDevice& device, uint64_t seed, double low,
                              double high, Tensor& out) {
  // high is exclusive, so it may be one past the dtype's maximum.
  const double max_high =
      static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
  if (!FitsInteger<T>(low) || std::floor(high) != high || !(low < high) ||
      high > max_high) {
    return absl::InvalidArgumentError(
        absl::StrCat("RandomUniform of ", DTypeName(out.dtype()),
                     " needs integers low < high with low >= ",
                     std::numeric_limits<T>::min(), " and high <= ", max_high,
                     ", got [", low, ", ", high, ")"));
  }
  const int64_t lo = static_cast<int64_t>(low);
  // high <= 2^63; 2^63 itself (int64's exclusive bound) is not an int64.
  const uint64_t high_bits =
      high >= 0x1.0p63 ? uint64_t{1} << 63
                       : static_cast<uint64_t>(static_cast<int64_t>(high));
  // Modulo 2^64; 0 stands for the full range 2^64 (all of int64).
  const uint64_t range = high_bits - static_cast<uint64_t>(lo);
  return LaunchStatus(LaunchRandomUniformInt(
                          DTypeCode(out.dtype()), seed, lo, range,
                          out.raw_data(), out.num_elements(), device.stream()),
                      "RandomUniform", device);
}

}  // namespace

uint64_t BelowHighBits(DType dtype, double high) {
  switch (dtype) {
    case DType::kFloat32:
      return BitsOf(math::BelowHigh<float>(high));
    case DType::kFloat64:
      return BitsOf(math::BelowHigh<double>(high));
    case DType::kFloat16:
      return BitsOf(math::BelowHigh<math::HalfBits>(high));
    case DType::kBFloat16:
      return BitsOf(math::BelowHigh<math::BFloatBits>(high));
    default:
      return 0;
  }
}

absl::StatusOr<KernelCost> RandomUniform(CudaDevice& device, uint64_t seed,
                                         double low, double high, Tensor& out) {
  if (out.dtype() == DType::kBool) {
    return UnsupportedDType("RandomUniform", out.dtype(),
                            "every dtype but bool");
  }
  RETURN_IF_ERROR(CheckOnDevice(device, "RandomUniform", "output", out));
  ScopedCudaDevice on_device(device.ordinal());
  RETURN_IF_ERROR(on_device.status());
  absl::Status launched;
  switch (out.dtype()) {
    case DType::kInt32:
      launched = LaunchUniformInt<int32_t>(device, seed, low, high, out);
      break;
    case DType::kInt64:
      launched = LaunchUniformInt<int64_t>(device, seed, low, high, out);
      break;
    case DType::kUInt8:
      launched = LaunchUniformInt<uint8_t>(device, seed, low, high, out);
      break;
    default:
      if (!std::isfinite(low) || !std::isfinite(high) || !(low < high)) {
        return absl::InvalidArgumentError(
            absl::StrCat("RandomUniform needs finite low < high, got [", low,
                         ", ", high, ")"));
      }
      launched =
          LaunchStatus(LaunchRandomUniformFloat(
                           DTypeCode(out.dtype()), seed, low, high,
                           BelowHighBits(out.dtype(), high), out.raw_data(),
                           out.num_elements(), device.stream()),
                       "RandomUniform", device);
      break;
  }
  RETURN_IF_ERROR(launched);
  return RandomUniformCost(out.dtype(), out.num_elements());
}

absl::StatusOr<KernelCost> RandomNormal(CudaDevice& device, uint64_t seed,
                                        double mean, double stddev,
                                        Tensor& out) {
  if (!IsFloating(out.dtype())) {
    return UnsupportedDType("RandomNormal", out.dtype(),
                            "float32, float64, float16, bfloat16");
  }
  if (!std::isfinite(mean) || !std::isfinite(stddev) || stddev < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("RandomNormal needs a finite mean and a finite stddev "
                     ">= 0, got mean ",
                     mean, " and stddev ", stddev));
  }
  RETURN_IF_ERROR(CheckOnDevice(device, "RandomNormal", "output", out));
  ScopedCudaDevice on_device(device.ordinal());
  RETURN_IF_ERROR(on_device.status());
  RETURN_IF_ERROR(LaunchStatus(
      LaunchRandomNormal(DTypeCode(out.dtype()), seed, mean, stddev,
                         out.raw_data(), out.num_elements(), device.stream()),
      "RandomNormal", device));
  return RandomNormalCost(out.dtype(), out.num_elements());
}

}  // namespace cuda
}  // namespace devices
