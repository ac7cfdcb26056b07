// Deterministic random tensors from a seed: the same seed gives the same
// values on every machine and standard library. The generator is the
// counter-based Philox4x32-10 (Salmon et al., "Parallel random numbers: as
// easy as 1, 2, 3", SC'11), specified exactly so that anyone can recompute
// the values:
//   key     = {seed & 0xffffffff, seed >> 32}
//   block b = Philox4x32_10(counter = {b & 0xffffffff, b >> 32, 0, 0}, key)
//             = words w0..w3
//   bits(b, j) = (uint64(w[2j+1]) << 32) | w[2j]  for j in {0, 1}
// Uniform element i uses u = (bits(i / 2, i % 2) >> 11) * 2^-53 in [0, 1):
// floating value low + (high - low) * u computed in double and rounded to
// the dtype (16-bit floats via float32; stepped down one ulp if rounding
// reached high); integer value low + ((bits * (high - low)) >> 64) (128-bit
// product).
// Normal elements 2k and 2k+1 use block k: u1 = ((bits(k, 0) >> 11) + 1) *
// 2^-53 in (0, 1], u2 = (bits(k, 1) >> 11) * 2^-53, r = sqrt(-2 ln u1),
// z = (r cos 2 pi u2, r sin 2 pi u2); value = mean + stddev * z, computed in
// double and rounded to the dtype (16-bit floats via float32).
// Transcendentals come from the C library: results rounded to float32 and
// below are identical wherever libm is accurate to a few ulps in double.
//
// Example:
//   devices::Tensor w = *devices::Tensor::Host(DType::kFloat32, {256, 10});
//   devices::RandomNormal(/*seed=*/42, /*mean=*/0, /*stddev=*/0.1, w);
//   // w.flat<float>()(0) == float(0.1 * -0.6653748678073486)
#ifndef DEVICES_RANDOM_KERNELS_H_
#define DEVICES_RANDOM_KERNELS_H_

#include <array>
#include <cstdint>

#include "absl/status/statusor.h"
#include "devices/kernel_costs.h"
#include "devices/tensor.h"

namespace devices {

// One Philox4x32-10 block.
std::array<uint32_t, 4> Philox4x32(std::array<uint32_t, 4> counter,
                                   std::array<uint32_t, 2> key);

// Uniform values in [low, high). Floating dtypes need finite low < high;
// integer dtypes (int32, int64, uint8) need integers low < high with low
// in the dtype's range and high at most its maximum + 1. INVALID_ARGUMENT
// otherwise and for bool; FAILED_PRECONDITION without host data.
absl::StatusOr<KernelCost> RandomUniform(uint64_t seed, double low, double high,
                                         Tensor& out);

// Normal values with `mean` and `stddev` (finite, stddev >= 0), for floating
// dtypes. INVALID_ARGUMENT otherwise; FAILED_PRECONDITION without host data.
absl::StatusOr<KernelCost> RandomNormal(uint64_t seed, double mean,
                                        double stddev, Tensor& out);

// Elements [first, first + count) of RandomNormal(seed, 0, 1, ...) in
// double, before the rounding to a dtype: float32(mean + stddev * z[i]) is
// element first + i of a float32 RandomNormal(seed, mean, stddev) tensor.
// For slices of a large random tensor, without making it.
void StandardNormalsAt(uint64_t seed, int64_t first, int64_t count, double* z);

}  // namespace devices

#endif  // DEVICES_RANDOM_KERNELS_H_
