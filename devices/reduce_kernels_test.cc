#include "devices/reduce_kernels.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace devices {
namespace {

// Converts doubles to the storage type T (16-bit floats by rounding).
template <typename T>
std::vector<T> Values(const std::vector<double>& values) {
  std::vector<T> out;
  for (double v : values) {
    if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
      out.push_back(T::FromFloat(static_cast<float>(v)));
    } else {
      out.push_back(static_cast<T>(v));
    }
  }
  return out;
}

template <typename T>
double AsDouble(T v) {
  if constexpr (std::is_same_v<T, Float16> || std::is_same_v<T, BFloat16>) {
    return v.ToFloat();
  } else {
    return static_cast<double>(v);
  }
}

template <typename T>
std::vector<double> Accumulated(ReduceOp op, const std::vector<T>& dst_in,
                                const std::vector<T>& src) {
  std::vector<T> dst = dst_in;
  absl::StatusOr<KernelCost> cost =
      Accumulate(op, src.data(), dst.data(), static_cast<int64_t>(dst.size()),
                 kDTypeOf<T>);
  EXPECT_TRUE(cost.ok()) << cost.status();
  if (cost.ok()) {
    const KernelCost expected =
        AccumulateCost(kDTypeOf<T>, static_cast<int64_t>(dst.size()));
    EXPECT_EQ(cost->name, expected.name);
    EXPECT_EQ(cost->flops, expected.flops);
    EXPECT_EQ(cost->bytes, expected.bytes);
  }
  std::vector<double> out;
  for (T v : dst) out.push_back(AsDouble(v));
  return out;
}

template <typename T>
class FloatReduceTest : public ::testing::Test {};
using FloatTypes = ::testing::Types<float, double, Float16, BFloat16>;
TYPED_TEST_SUITE(FloatReduceTest, FloatTypes);

TYPED_TEST(FloatReduceTest, EveryOp) {
  using T = TypeParam;
  const std::vector<T> dst = Values<T>({1, -2, 3.5, 0});
  const std::vector<T> src = Values<T>({2, 4, -1, 0});
  using V = std::vector<double>;
  EXPECT_EQ(Accumulated(ReduceOp::kSum, dst, src), (V{3, 2, 2.5, 0}));
  EXPECT_EQ(Accumulated(ReduceOp::kMean, dst, src), (V{3, 2, 2.5, 0}));
  EXPECT_EQ(Accumulated(ReduceOp::kProd, dst, src), (V{2, -8, -3.5, 0}));
  EXPECT_EQ(Accumulated(ReduceOp::kMin, dst, src), (V{1, -2, -1, 0}));
  EXPECT_EQ(Accumulated(ReduceOp::kMax, dst, src), (V{2, 4, 3.5, 0}));
  std::vector<T> mean = Values<T>({3, 2, 2.5, 0});
  ASSERT_TRUE(FinalizeMean(mean.data(), 4, kDTypeOf<T>, 2).ok());
  std::vector<double> got;
  for (T v : mean) got.push_back(AsDouble(v));
  EXPECT_EQ(got, (V{1.5, 1, 1.25, 0}));
}

TYPED_TEST(FloatReduceTest, MinMaxPropagateNaN) {
  using T = TypeParam;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<T> dst = Values<T>({nan, 1});
  const std::vector<T> src = Values<T>({1, nan});
  for (ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
    std::vector<double> out = Accumulated(op, dst, src);
    EXPECT_TRUE(std::isnan(out[0])) << ReduceOpName(op);
    EXPECT_TRUE(std::isnan(out[1])) << ReduceOpName(op);
  }
}

TEST(ReduceKernelsTest, SixteenBitFloatsRoundOncePerStep) {
  // 2048 + 1 = 2049 is a tie between the halves 2048 and 2050: even (2048)
  // wins at every step, so adding 1 twice still gives 2048 (in float32 it
  // would be 2050).
  std::vector<Float16> half = {Float16::FromFloat(2048)};
  const std::vector<Float16> one = {Float16::FromFloat(1)};
  ASSERT_TRUE(
      Accumulate(ReduceOp::kSum, one.data(), half.data(), 1, DType::kFloat16)
          .ok());
  ASSERT_TRUE(
      Accumulate(ReduceOp::kSum, one.data(), half.data(), 1, DType::kFloat16)
          .ok());
  EXPECT_EQ(half[0].ToFloat(), 2048.0f);
  std::vector<BFloat16> bf = {BFloat16::FromFloat(256)};
  const std::vector<BFloat16> bf_one = {BFloat16::FromFloat(1)};
  ASSERT_TRUE(
      Accumulate(ReduceOp::kSum, bf_one.data(), bf.data(), 1, DType::kBFloat16)
          .ok());
  EXPECT_EQ(bf[0].ToFloat(), 256.0f);
  // 3 + 3 = 6 is exact; the mean divides in float and rounds once.
  std::vector<Float16> third = {Float16::FromFloat(1)};
  ASSERT_TRUE(FinalizeMean(third.data(), 1, DType::kFloat16, 3).ok());
  EXPECT_EQ(third[0], Float16::FromFloat(1.0f / 3.0f));
}

TEST(ReduceKernelsTest, Int32) {
  const int32_t max = std::numeric_limits<int32_t>::max();
  const int32_t min = std::numeric_limits<int32_t>::min();
  const std::vector<int32_t> dst = {1, -2, max, 7};
  const std::vector<int32_t> src = {2, 4, 1, -3};
  using V = std::vector<double>;
  EXPECT_EQ(Accumulated(ReduceOp::kSum, dst, src), (V{3, 2, double(min), 4}));
  EXPECT_EQ(Accumulated(ReduceOp::kMean, dst, src), (V{3, 2, double(min), 4}));
  EXPECT_EQ(Accumulated(ReduceOp::kProd, dst, src),
            (V{2, -8, double(max), -21}));
  EXPECT_EQ(Accumulated(ReduceOp::kMin, dst, src), (V{1, -2, 1, -3}));
  EXPECT_EQ(Accumulated(ReduceOp::kMax, dst, src), (V{2, 4, double(max), 7}));
  std::vector<int32_t> mean = {3, 2, min, 4, -3};
  ASSERT_TRUE(FinalizeMean(mean.data(), 5, DType::kInt32, 2).ok());
  EXPECT_EQ(mean, (std::vector<int32_t>{1, 1, min / 2, 2, -1}));  // Truncates.
  std::vector<int32_t> big = {-max};
  ASSERT_TRUE(
      FinalizeMean(big.data(), 1, DType::kInt32, int64_t{1} << 40).ok());
  EXPECT_EQ(big[0], 0);
  // Products wrap.
  std::vector<int32_t> wrap = {65536};
  const std::vector<int32_t> factor = {65536};
  ASSERT_TRUE(
      Accumulate(ReduceOp::kProd, factor.data(), wrap.data(), 1, DType::kInt32)
          .ok());
  EXPECT_EQ(wrap[0], 0);
}

TEST(ReduceKernelsTest, Int64) {
  const int64_t max = std::numeric_limits<int64_t>::max();
  const int64_t min = std::numeric_limits<int64_t>::min();
  std::vector<int64_t> sum = {max, int64_t{1} << 40};
  const std::vector<int64_t> one = {1, int64_t{1} << 40};
  ASSERT_TRUE(
      Accumulate(ReduceOp::kSum, one.data(), sum.data(), 2, DType::kInt64)
          .ok());
  EXPECT_EQ(sum, (std::vector<int64_t>{min, int64_t{1} << 41}));
  std::vector<int64_t> prod = {-3, int64_t{1} << 32};
  const std::vector<int64_t> factor = {5, int64_t{1} << 32};
  ASSERT_TRUE(
      Accumulate(ReduceOp::kProd, factor.data(), prod.data(), 2, DType::kInt64)
          .ok());
  EXPECT_EQ(prod, (std::vector<int64_t>{-15, 0}));  // 2^64 wraps to 0.
  std::vector<int64_t> lo = {5, -5};
  const std::vector<int64_t> other = {-6, 6};
  ASSERT_TRUE(
      Accumulate(ReduceOp::kMin, other.data(), lo.data(), 2, DType::kInt64)
          .ok());
  EXPECT_EQ(lo, (std::vector<int64_t>{-6, -5}));
  std::vector<int64_t> hi = {5, -5};
  ASSERT_TRUE(
      Accumulate(ReduceOp::kMax, other.data(), hi.data(), 2, DType::kInt64)
          .ok());
  EXPECT_EQ(hi, (std::vector<int64_t>{5, 6}));
  std::vector<int64_t> mean = {7, -7};
  ASSERT_TRUE(FinalizeMean(mean.data(), 2, DType::kInt64, 2).ok());
  EXPECT_EQ(mean, (std::vector<int64_t>{3, -3}));
}

TEST(ReduceKernelsTest, UInt8) {
  const std::vector<uint8_t> dst = {1, 200, 255, 7};
  const std::vector<uint8_t> src = {2, 100, 1, 3};
  using V = std::vector<double>;
  EXPECT_EQ(Accumulated(ReduceOp::kSum, dst, src), (V{3, 44, 0, 10}));
  EXPECT_EQ(Accumulated(ReduceOp::kMean, dst, src), (V{3, 44, 0, 10}));
  EXPECT_EQ(Accumulated(ReduceOp::kProd, dst, src), (V{2, 32, 255, 21}));
  EXPECT_EQ(Accumulated(ReduceOp::kMin, dst, src), (V{1, 100, 1, 3}));
  EXPECT_EQ(Accumulated(ReduceOp::kMax, dst, src), (V{2, 200, 255, 7}));
  std::vector<uint8_t> mean = {3, 44, 0, 11};
  ASSERT_TRUE(FinalizeMean(mean.data(), 4, DType::kUInt8, 2).ok());
  EXPECT_EQ(mean, (std::vector<uint8_t>{1, 22, 0, 5}));
}

TEST(ReduceKernelsTest, Bool) {
  const bool dst_in[] = {false, false, true, true};
  const bool src[] = {false, true, false, true};
  struct Case {
    ReduceOp op;
    std::vector<bool> expected;
  };
  const Case cases[] = {
      {ReduceOp::kSum, {false, true, true, true}},
      {ReduceOp::kMax, {false, true, true, true}},
      {ReduceOp::kProd, {false, false, false, true}},
      {ReduceOp::kMin, {false, false, false, true}},
  };
  for (const Case& c : cases) {
    bool dst[4];
    std::copy(std::begin(dst_in), std::end(dst_in), dst);
    ASSERT_TRUE(Accumulate(c.op, src, dst, 4, DType::kBool).ok());
    EXPECT_EQ(std::vector<bool>(dst, dst + 4), c.expected)
        << ReduceOpName(c.op);
  }
  bool dst[4] = {};
  EXPECT_EQ(
      Accumulate(ReduceOp::kMean, src, dst, 4, DType::kBool).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FinalizeMean(dst, 4, DType::kBool, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ReduceKernelsTest, LongBuffersUseTheVectorPath) {
  std::vector<float> dst(1001), src(1001);
  for (int i = 0; i < 1001; ++i) {
    dst[i] = static_cast<float>(i);
    src[i] = static_cast<float>(2 * i);
  }
  ASSERT_TRUE(
      Accumulate(ReduceOp::kSum, src.data(), dst.data(), 1001, DType::kFloat32)
          .ok());
  for (int i = 0; i < 1001; ++i) ASSERT_EQ(dst[i], 3.0f * i);
  ASSERT_TRUE(FinalizeMean(dst.data(), 1001, DType::kFloat32, 3).ok());
  for (int i = 0; i < 1001; ++i) ASSERT_EQ(dst[i], static_cast<float>(i));
}

// Raw collective buffers may sit at any byte offset: the kernels give the
// same results there as on aligned buffers, across several blocks of their
// aligned copies, with src equal to dst too.
TEST(ReduceKernelsTest, BuffersAtAnyByteOffset) {
  constexpr int kCount = 2500;
  for (int offset = 0; offset < 8; ++offset) {
    SCOPED_TRACE(offset);
    std::vector<double> src(kCount), dst(kCount);
    for (int i = 0; i < kCount; ++i) {
      src[i] = 0.5 * i;
      dst[i] = static_cast<double>(kCount - i);
    }
    std::vector<char> src_bytes(kCount * sizeof(double) + 8);
    std::vector<char> dst_bytes(kCount * sizeof(double) + 8);
    char* s = src_bytes.data() + offset;
    char* d = dst_bytes.data() + (offset * 3) % 8;
    std::memcpy(s, src.data(), kCount * sizeof(double));
    std::memcpy(d, dst.data(), kCount * sizeof(double));
    ASSERT_TRUE(Accumulate(ReduceOp::kSum, s, d, kCount, DType::kFloat64).ok());
    ASSERT_TRUE(Accumulate(ReduceOp::kMax, d, d, kCount, DType::kFloat64).ok());
    ASSERT_TRUE(FinalizeMean(d, kCount, DType::kFloat64, 4).ok());
    std::vector<double> got(kCount);
    std::memcpy(got.data(), d, kCount * sizeof(double));
    for (int i = 0; i < kCount; ++i) {
      ASSERT_EQ(got[i], (src[i] + dst[i]) / 4) << i;
    }
  }
}

TEST(ReduceKernelsTest, AccumulateErrors) {
  float x = 1;
  EXPECT_EQ(
      Accumulate(ReduceOp::kSum, &x, &x, -1, DType::kFloat32).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(Accumulate(ReduceOp::kSum, nullptr, &x, 1, DType::kFloat32)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(
      Accumulate(ReduceOp::kSum, nullptr, nullptr, 0, DType::kFloat32).ok());
  EXPECT_EQ(FinalizeMean(&x, 1, DType::kFloat32, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FinalizeMean(nullptr, 1, DType::kFloat32, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  // src may be dst.
  ASSERT_TRUE(Accumulate(ReduceOp::kSum, &x, &x, 1, DType::kFloat32).ok());
  EXPECT_EQ(x, 2);
}

TEST(ReduceIntoTest, EveryOpOverThreeInputs) {
  const Tensor a = Tensor::FromVector<float>({1, -4, 6});
  const Tensor b = Tensor::FromVector<float>({2, 5, 6});
  const Tensor c = Tensor::FromVector<float>({3, -1, -6});
  struct Case {
    ReduceOp op;
    std::vector<float> expected;
  };
  const Case cases[] = {
      {ReduceOp::kSum, {6, 0, 6}},      {ReduceOp::kMean, {2, 0, 2}},
      {ReduceOp::kMin, {1, -4, -6}},    {ReduceOp::kMax, {3, 5, 6}},
      {ReduceOp::kProd, {6, 20, -216}},
  };
  for (const Case& k : cases) {
    Tensor out = *Tensor::Host(DType::kFloat32, Shape({3}));
    absl::StatusOr<KernelCost> cost = ReduceInto(k.op, {a, b, c}, out);
    ASSERT_TRUE(cost.ok()) << cost.status();
    EXPECT_EQ(out.ToVector<float>(), k.expected) << ReduceOpName(k.op);
    const KernelCost expected = ReduceIntoCost(k.op, DType::kFloat32, 3, 3);
    EXPECT_EQ(cost->flops, expected.flops);
    EXPECT_EQ(cost->bytes, expected.bytes);
  }
}

TEST(ReduceIntoTest, IntegerMeanAndSingleInput) {
  const Tensor a = Tensor::FromVector<int32_t>({1, 10});
  const Tensor b = Tensor::FromVector<int32_t>({2, 11});
  Tensor out = *Tensor::Host(DType::kInt32, Shape({2}));
  ASSERT_TRUE(ReduceInto(ReduceOp::kMean, {a, b}, out).ok());
  EXPECT_EQ(out.ToVector<int32_t>(), (std::vector<int32_t>{1, 10}));
  ASSERT_TRUE(ReduceInto(ReduceOp::kProd, {a}, out).ok());
  EXPECT_EQ(out.ToVector<int32_t>(), (std::vector<int32_t>{1, 10}));
}

TEST(ReduceIntoTest, OutputMayAliasAnInput) {
  const Tensor a = Tensor::FromVector<double>({1, 2});
  Tensor b = Tensor::FromVector<double>({10, 20});
  const Tensor c = Tensor::FromVector<double>({100, 200});
  ASSERT_TRUE(ReduceInto(ReduceOp::kSum, {a, b, c}, b).ok());
  EXPECT_EQ(b.ToVector<double>(), (std::vector<double>{111, 222}));
  Tensor d = Tensor::FromVector<double>({4, 8});
  ASSERT_TRUE(ReduceInto(ReduceOp::kMean, {d, a}, d).ok());
  EXPECT_EQ(d.ToVector<double>(), (std::vector<double>{2.5, 5}));
}

TEST(ReduceIntoTest, Errors) {
  const Tensor a = Tensor::FromVector<float>({1, 2});
  Tensor out = *Tensor::Host(DType::kFloat32, Shape({2}));
  EXPECT_EQ(ReduceInto(ReduceOp::kSum, {}, out).status().code(),
            absl::StatusCode::kInvalidArgument);
  const Tensor wrong_shape = Tensor::FromVector<float>({1, 2, 3});
  EXPECT_EQ(ReduceInto(ReduceOp::kSum, {a, wrong_shape}, out).status().code(),
            absl::StatusCode::kInvalidArgument);
  const Tensor wrong_type = Tensor::FromVector<int32_t>({1, 2});
  absl::StatusOr<KernelCost> mixed =
      ReduceInto(ReduceOp::kSum, {a, wrong_type}, out);
  EXPECT_EQ(mixed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(mixed.status().message().find("input 1"), absl::string_view::npos);
  const Tensor shape_only = Tensor::ShapeOnly(DType::kFloat32, Shape({2}), "d");
  EXPECT_EQ(ReduceInto(ReduceOp::kSum, {a, shape_only}, out).status().code(),
            absl::StatusCode::kFailedPrecondition);
  Tensor shape_only_out = Tensor::ShapeOnly(DType::kFloat32, Shape({2}), "d");
  EXPECT_EQ(ReduceInto(ReduceOp::kSum, {a}, shape_only_out).status().code(),
            absl::StatusCode::kFailedPrecondition);
  const Tensor flag = Tensor::FromVector<bool>({true});
  Tensor flag_out = *Tensor::Host(DType::kBool, Shape({1}));
  EXPECT_EQ(ReduceInto(ReduceOp::kMean, {flag}, flag_out).status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(ReduceInto(ReduceOp::kSum, {flag, flag}, flag_out).ok());
  EXPECT_EQ(flag_out.ToVector<bool>(), std::vector<bool>{true});
}

}  // namespace
}  // namespace devices
