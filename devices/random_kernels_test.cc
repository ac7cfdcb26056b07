#include "devices/random_kernels.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace devices {
namespace {

// Known-answer vectors of Philox4x32-10 published with Random123.
TEST(PhiloxTest, KnownAnswers) {
  EXPECT_EQ(Philox4x32({0, 0, 0, 0}, {0, 0}),
            (std::array<uint32_t, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c,
                                     0x9b00dbd8}));
  EXPECT_EQ(Philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff},
                       {0xffffffff, 0xffffffff}),
            (std::array<uint32_t, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6,
                                     0x6d5451fd}));
  EXPECT_EQ(Philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344},
                       {0xa4093822, 0x299f31d0}),
            (std::array<uint32_t, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420,
                                     0x24126ea1}));
}

// Golden values computed from the specification in random_kernels.h (by an
// independent implementation): seed 42, block 0 is {0x9ceaf053, 0x77f5493b,
// 0x12bf50ad, 0x5742b3d7}.
TEST(RandomUniformTest, GoldenValues) {
  EXPECT_EQ(Philox4x32({0, 0, 0, 0}, {42, 0}),
            (std::array<uint32_t, 4>{0x9ceaf053, 0x77f5493b, 0x12bf50ad,
                                     0x5742b3d7}));
  Tensor f64 = *Tensor::Host(DType::kFloat64, Shape({4}));
  ASSERT_TRUE(RandomUniform(42, 0, 1, f64).ok());
  EXPECT_EQ(f64.ToVector<double>(),
            (std::vector<double>{0.4685865183391049, 0.34086154938517876,
                                 0.32706338120338474, 0.4543156017348883}));
  Tensor f32 = *Tensor::Host(DType::kFloat32, Shape({2, 2}));
  ASSERT_TRUE(RandomUniform(42, 0, 1, f32).ok());
  EXPECT_EQ(f32.ToVector<float>(),
            (std::vector<float>{0.4685865044593811f, 0.34086155891418457f,
                                0.3270633816719055f, 0.4543156027793884f}));
  Tensor i32 = *Tensor::Host(DType::kInt32, Shape({8}));
  ASSERT_TRUE(RandomUniform(42, -5, 5, i32).ok());
  EXPECT_EQ(i32.ToVector<int32_t>(),
            (std::vector<int32_t>{-1, -2, -2, -1, 1, 2, 1, -2}));
}

TEST(RandomNormalTest, GoldenValues) {
  Tensor f32 = *Tensor::Host(DType::kFloat32, Shape({4}));
  ASSERT_TRUE(RandomNormal(42, 0, 1, f32).ok());
  EXPECT_EQ(f32.ToVector<float>(),
            (std::vector<float>{-0.6653748750686646f, 1.0360238552093506f,
                                -1.4338891506195068f, 0.42327818274497986f}));
  Tensor f64 = *Tensor::Host(DType::kFloat64, Shape({4}));
  ASSERT_TRUE(RandomNormal(42, 0, 1, f64).ok());
  const std::vector<double> want = {-0.6653748678073486, 1.036023808655465,
                                    -1.4338891806537384, 0.4232781812444527};
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(f64.ToVector<double>()[i], want[i], 1e-14) << i;
  }
  Tensor scaled = *Tensor::Host(DType::kFloat32, Shape({1}));
  ASSERT_TRUE(RandomNormal(42, 3, 0.5, scaled).ok());
  EXPECT_EQ(scaled.ToVector<float>()[0],
            static_cast<float>(3 + 0.5 * -0.6653748678073486));
}

TEST(RandomTest, DeterministicAndPrefixStable) {
  for (DType dtype :
       {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16}) {
    Tensor a = *Tensor::Host(dtype, Shape({101}));
    Tensor b = *Tensor::Host(dtype, Shape({101}));
    Tensor prefix = *Tensor::Host(dtype, Shape({7}));
    Tensor other = *Tensor::Host(dtype, Shape({101}));
    for (bool normal : {false, true}) {
      auto run = [&](uint64_t seed, Tensor& t) {
        return normal ? RandomNormal(seed, 0, 1, t)
                      : RandomUniform(seed, -1, 1, t);
      };
      ASSERT_TRUE(run(7, a).ok());
      ASSERT_TRUE(run(7, b).ok());
      ASSERT_TRUE(run(7, prefix).ok());
      ASSERT_TRUE(run(8, other).ok());
      EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.bytes()), 0);
      EXPECT_EQ(std::memcmp(a.raw_data(), prefix.raw_data(), prefix.bytes()),
                0);
      EXPECT_NE(std::memcmp(a.raw_data(), other.raw_data(), a.bytes()), 0);
    }
  }
}

// Any slice of the stream, starting at an even or an odd element, holds the
// values of the whole tensor.
TEST(RandomNormalTest, SlicesOfTheStreamAreTheTensorsElements) {
  Tensor whole = *Tensor::Host(DType::kFloat64, Shape({41}));
  ASSERT_TRUE(RandomNormal(17, 0, 1, whole).ok());
  for (int64_t first : {0, 1, 6, 13}) {
    for (int64_t count : {1, 2, 5, 41 - 13}) {
      std::vector<double> z(count);
      StandardNormalsAt(17, first, count, z.data());
      for (int64_t i = 0; i < count; ++i) {
        EXPECT_EQ(z[i], whole.data<double>()[first + i]) << first << " + " << i;
      }
    }
  }
}

TEST(RandomUniformTest, StaysInRange) {
  Tensor f = *Tensor::Host(DType::kFloat32, Shape({10000}));
  ASSERT_TRUE(RandomUniform(1, -2, 3, f).ok());
  double sum = 0;
  for (float v : f.ToVector<float>()) {
    ASSERT_GE(v, -2.0f);
    ASSERT_LT(v, 3.0f);
    sum += v;
  }
  EXPECT_NEAR(sum / 10000, 0.5, 0.05);
  // Rounding that would reach `high` is stepped down.
  Tensor narrow = *Tensor::Host(DType::kFloat32, Shape({1000}));
  const float one_up = std::nextafter(1.0f, 2.0f);
  ASSERT_TRUE(RandomUniform(2, 1.0, one_up, narrow).ok());
  for (float v : narrow.ToVector<float>()) ASSERT_EQ(v, 1.0f);
  Tensor tiny = *Tensor::Host(DType::kFloat16, Shape({1000}));
  const double min_subnormal = std::ldexp(1.0, -24);
  ASSERT_TRUE(RandomUniform(3, -min_subnormal, min_subnormal, tiny).ok());
  for (Float16 v : tiny.ToVector<Float16>()) {
    ASSERT_GE(v.ToFloat(), -min_subnormal);
    ASSERT_LT(v.ToFloat(), min_subnormal);
  }
  Tensor bf = *Tensor::Host(DType::kBFloat16, Shape({1000}));
  ASSERT_TRUE(RandomUniform(4, 0, 1, bf).ok());
  for (BFloat16 v : bf.ToVector<BFloat16>()) {
    ASSERT_GE(v.ToFloat(), 0.0f);
    ASSERT_LT(v.ToFloat(), 1.0f);
  }
}

TEST(RandomUniformTest, IntegerRanges) {
  Tensor bytes = *Tensor::Host(DType::kUInt8, Shape({4096}));
  ASSERT_TRUE(RandomUniform(5, 0, 256, bytes).ok());
  std::vector<int> seen(256, 0);
  for (uint8_t v : bytes.ToVector<uint8_t>()) ++seen[v];
  int hit = 0;
  for (int count : seen) hit += count > 0;
  EXPECT_GT(hit, 240);  // Nearly every byte value appears.
  Tensor full = *Tensor::Host(DType::kInt64, Shape({64}));
  ASSERT_TRUE(
      RandomUniform(6, -9223372036854775808.0, 9223372036854775808.0, full)
          .ok());
  int negative = 0;
  for (int64_t v : full.ToVector<int64_t>()) negative += v < 0;
  EXPECT_GT(negative, 10);
  EXPECT_LT(negative, 54);
  Tensor one_value = *Tensor::Host(DType::kInt32, Shape({16}));
  ASSERT_TRUE(RandomUniform(7, 9, 10, one_value).ok());
  EXPECT_EQ(one_value.ToVector<int32_t>(), std::vector<int32_t>(16, 9));
}

TEST(RandomNormalTest, Moments) {
  Tensor t = *Tensor::Host(DType::kFloat64, Shape({20001}));  // Odd count.
  ASSERT_TRUE(RandomNormal(9, 2, 3, t).ok());
  double sum = 0, sq = 0;
  for (double v : t.ToVector<double>()) {
    ASSERT_TRUE(std::isfinite(v));
    sum += v;
    sq += v * v;
  }
  const double mean = sum / 20001;
  EXPECT_NEAR(mean, 2, 0.1);
  EXPECT_NEAR(std::sqrt(sq / 20001 - mean * mean), 3, 0.1);
}

TEST(RandomTest, Errors) {
  Tensor f = *Tensor::Host(DType::kFloat32, Shape({4}));
  EXPECT_EQ(RandomUniform(1, 1, 1, f).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RandomUniform(1, 2, 1, f).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RandomUniform(1, 0, std::numeric_limits<double>::infinity(), f)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  Tensor i = *Tensor::Host(DType::kInt32, Shape({4}));
  EXPECT_EQ(RandomUniform(1, 0, 2.5, i).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RandomUniform(1, 0, 3e9, i).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tensor u = *Tensor::Host(DType::kUInt8, Shape({4}));
  EXPECT_EQ(RandomUniform(1, -1, 10, u).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RandomUniform(1, 0, 257, u).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tensor b = *Tensor::Host(DType::kBool, Shape({4}));
  EXPECT_EQ(RandomUniform(1, 0, 1, b).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RandomNormal(1, 0, 1, i).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RandomNormal(1, 0, -1, f).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RandomNormal(1, std::nan(""), 1, f).status().code(),
            absl::StatusCode::kInvalidArgument);
  Tensor shape_only = Tensor::ShapeOnly(DType::kFloat32, Shape({4}), "sim");
  EXPECT_EQ(RandomUniform(1, 0, 1, shape_only).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(RandomNormal(1, 0, 1, shape_only).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(RandomTest, Costs) {
  Tensor f = *Tensor::Host(DType::kFloat32, Shape({10}));
  absl::StatusOr<KernelCost> uniform = RandomUniform(1, 0, 1, f);
  ASSERT_TRUE(uniform.ok());
  EXPECT_EQ(uniform->name, "RandomUniform");
  EXPECT_EQ(uniform->flops, RandomUniformCost(DType::kFloat32, 10).flops);
  absl::StatusOr<KernelCost> normal = RandomNormal(1, 0, 1, f);
  ASSERT_TRUE(normal.ok());
  EXPECT_EQ(normal->bytes, RandomNormalCost(DType::kFloat32, 10).bytes);
}

}  // namespace
}  // namespace devices
