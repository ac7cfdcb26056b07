#include "devices/random_kernels.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "devices/kernel_util.h"
#include "devices/status_macros.h"

namespace devices {
namespace {

constexpr uint32_t kPhiloxM0 = 0xD2511F53u;
constexpr uint32_t kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u;
constexpr uint32_t kPhiloxW1 = 0xBB67AE85u;
constexpr double kTwoPi = 6.283185307179586476925286766559;

std::array<uint32_t, 4> Block(uint64_t seed, uint64_t index) {
  return Philox4x32(
      {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0, 0},
      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

uint64_t Bits(const std::array<uint32_t, 4>& w, int j) {
  return (static_cast<uint64_t>(w[2 * j + 1]) << 32) | w[2 * j];
}

// [0, 1) with 53 random bits.
double Unit(uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// Standard normal elements 2k and 2k + 1 (Box-Muller on block k).
std::array<double, 2> NormalPair(uint64_t seed, uint64_t k) {
  const std::array<uint32_t, 4> w = Block(seed, k);
  const double u1 = static_cast<double>((Bits(w, 0) >> 11) + 1) * 0x1.0p-53;
  const double u2 = Unit(Bits(w, 1));
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double theta = kTwoPi * u2;
  return {r * std::cos(theta), r * std::sin(theta)};
}

// The largest T below `high`, given that `value` rounded to `high` or above.
template <typename T>
T BelowHigh(double high) {
  if constexpr (std::is_floating_point_v<T>) {
    const T h = static_cast<T>(high);
    return static_cast<double>(h) < high
               ? h
               : std::nextafter(h, -std::numeric_limits<T>::infinity());
  } else {
    // 16-bit floats are sign-magnitude: one ulp down is bits - 1 for
    // positive values, bits + 1 for negative ones, and -min_subnormal
    // below zero.
    T h = T::FromFloat(static_cast<float>(high));
    if (static_cast<double>(h.ToFloat()) < high) return h;
    const uint16_t magnitude = h.bits & 0x7fffu;
    if (magnitude == 0) return T::FromBits(0x8001u);
    return T::FromBits(static_cast<uint16_t>(
        (h.bits & 0x8000u) != 0 ? h.bits + 1 : h.bits - 1));
  }
}

template <typename T>
bool FitsInteger(double value) {
  const double low = static_cast<double>(std::numeric_limits<T>::min());
  const double high = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
  return std::floor(value) == value && value >= low && value < high;
}

template <typename T>
absl::Status UniformTyped(uint64_t seed, double low, double high, T* out,
                          int64_t n) {
  if constexpr (kIsFloatStorage<T>) {
    if (!std::isfinite(low) || !std::isfinite(high) || !(low < high)) {
      return absl::InvalidArgumentError(
          absl::StrCat("RandomUniform needs finite low < high, got [", low,
                       ", ", high, ")"));
    }
    for (int64_t i = 0; i < n; ++i) {
      const double u = Unit(Bits(Block(seed, static_cast<uint64_t>(i) / 2),
                                 static_cast<int>(i % 2)));
      const double x = low + (high - low) * u;
      T value;
      if constexpr (std::is_floating_point_v<T>) {
        value = static_cast<T>(x);
      } else {
        value = T::FromFloat(static_cast<float>(x));
      }
      out[i] = static_cast<double>(LoadValue(value)) >= high
                   ? BelowHigh<T>(high)
                   : value;
    }
    return absl::OkStatus();
  } else {
    // high is exclusive, so it may be one past the dtype's maximum.
    const double max_high =
        static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
    if (!FitsInteger<T>(low) || std::floor(high) != high || !(low < high) ||
        high > max_high) {
      return absl::InvalidArgumentError(
          absl::StrCat("RandomUniform of ", DTypeName(kDTypeOf<T>),
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
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t bits = Bits(Block(seed, static_cast<uint64_t>(i) / 2),
                                 static_cast<int>(i % 2));
      const uint64_t offset =
          range == 0
              ? bits
              : static_cast<uint64_t>(
                    (static_cast<unsigned __int128>(bits) * range) >> 64);
      out[i] = static_cast<T>(static_cast<uint64_t>(lo) + offset);
    }
    return absl::OkStatus();
  }
}

}  // namespace

std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> counter,
                                   std::array<uint32_t, 2> key) {
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      key[0] += kPhiloxW0;
      key[1] += kPhiloxW1;
    }
    const uint64_t p0 = static_cast<uint64_t>(kPhiloxM0) * counter[0];
    const uint64_t p1 = static_cast<uint64_t>(kPhiloxM1) * counter[2];
    counter = {static_cast<uint32_t>(p1 >> 32) ^ counter[1] ^ key[0],
               static_cast<uint32_t>(p1),
               static_cast<uint32_t>(p0 >> 32) ^ counter[3] ^ key[1],
               static_cast<uint32_t>(p0)};
  }
  return counter;
}

absl::StatusOr<KernelCost> RandomUniform(uint64_t seed, double low, double high,
                                         Tensor& out) {
  if (out.dtype() == DType::kBool) {
    return UnsupportedDType("RandomUniform", out.dtype(),
                            "every dtype but bool");
  }
  RETURN_IF_ERROR(CheckHostTensor("RandomUniform", "output", out));
  RETURN_IF_ERROR(VisitDType(out.dtype(), [&](auto zero) -> absl::Status {
    using T = decltype(zero);
    if constexpr (std::is_same_v<T, bool>) {
      return absl::InternalError("bool rejected above");
    } else {
      return UniformTyped<T>(seed, low, high, out.data<T>(),
                             out.num_elements());
    }
  }));
  return RandomUniformCost(out.dtype(), out.num_elements());
}

absl::StatusOr<KernelCost> RandomNormal(uint64_t seed, double mean,
                                        double stddev, Tensor& out) {
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
  RETURN_IF_ERROR(CheckHostTensor("RandomNormal", "output", out));
  const int64_t n = out.num_elements();
  VisitDType(out.dtype(), [&](auto zero) {
    using T = decltype(zero);
    if constexpr (kIsFloatStorage<T>) {
      T* y = out.data<T>();
      for (int64_t k = 0; 2 * k < n; ++k) {
        const std::array<double, 2> z =
            NormalPair(seed, static_cast<uint64_t>(k));
        for (int64_t j = 0; j < 2 && 2 * k + j < n; ++j) {
          const double value = mean + stddev * z[j];
          if constexpr (std::is_floating_point_v<T>) {
            y[2 * k + j] = static_cast<T>(value);
          } else {
            y[2 * k + j] = T::FromFloat(static_cast<float>(value));
          }
        }
      }
    }
  });
  return RandomNormalCost(out.dtype(), n);
}

void StandardNormalsAt(uint64_t seed, int64_t first, int64_t count, double* z) {
  for (int64_t i = 0; i < count;) {
    const int64_t element = first + i;
    const std::array<double, 2> pair =
        NormalPair(seed, static_cast<uint64_t>(element) / 2);
    for (int j = element % 2; j < 2 && i < count; ++j) z[i++] = pair[j];
  }
}

}  // namespace devices
