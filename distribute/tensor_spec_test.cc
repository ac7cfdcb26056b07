#include "distribute/tensor_spec.h"

#include <vector>

#include "absl/status/status.h"
#include "devices/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace {

using devices::DType;
using devices::Shape;
using devices::Tensor;
using ::testing::HasSubstr;

Tensor Floats(Shape shape) {
  std::vector<float> values(static_cast<size_t>(shape.num_elements()), 1.0f);
  return *Tensor::FromVector<float>(values, shape);
}

TEST(TensorSpecTest, KnownDimsMustMatchAndUnknownOnesTakeAnySize) {
  const TensorSpec batch(DType::kFloat32, {kUnknownDim, 3});
  EXPECT_TRUE(batch.IsCompatibleWith(Floats({2, 3})));
  EXPECT_TRUE(batch.IsCompatibleWith(Floats({0, 3})));
  EXPECT_FALSE(batch.IsCompatibleWith(Floats({2, 4})));
  EXPECT_FALSE(batch.IsCompatibleWith(Floats({6})));
  EXPECT_FALSE(batch.IsCompatibleWith(Floats({1, 2, 3})));
  EXPECT_FALSE(batch.IsCompatibleWith(
      *Tensor::FromVector<int32_t>({1, 2, 3}, Shape({1, 3}))));
}

TEST(TensorSpecTest, ScalarsAndUnknownRanks) {
  const TensorSpec scalar(DType::kInt32, {});
  EXPECT_TRUE(
      scalar.IsCompatibleWith(*Tensor::FromVector<int32_t>({7}, Shape())));
  EXPECT_FALSE(scalar.IsCompatibleWith(Tensor::FromVector<int32_t>({7})));

  const TensorSpec any = TensorSpec::UnknownRank(DType::kFloat32);
  EXPECT_FALSE(any.has_known_rank());
  EXPECT_TRUE(any.IsCompatibleWith(Floats({})));
  EXPECT_TRUE(any.IsCompatibleWith(Floats({2, 3, 4})));
  EXPECT_FALSE(any.IsCompatibleWith(Tensor::FromVector<int32_t>({7})));
  EXPECT_NE(any, TensorSpec(DType::kFloat32, {}));
}

TEST(TensorSpecTest, OfTakesTheTensorsExactShape) {
  const TensorSpec spec = TensorSpec::Of(Floats({2, 5}));
  EXPECT_EQ(spec, TensorSpec(DType::kFloat32, {2, 5}));
  EXPECT_FALSE(spec.IsCompatibleWith(Floats({5, 2})));
}

TEST(TensorSpecTest, MakeRefusesDimensionsBelowUnknown) {
  absl::StatusOr<TensorSpec> bad = TensorSpec::Make(DType::kFloat32, {3, -2});
  ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("dimension 1"));
  EXPECT_THAT(bad.status().message(), HasSubstr("-2"));
  absl::StatusOr<TensorSpec> good =
      TensorSpec::Make(DType::kFloat32, {kUnknownDim, 0});
  ASSERT_TRUE(good.ok()) << good.status();
  EXPECT_EQ(*good, TensorSpec(DType::kFloat32, {kUnknownDim, 0}));
}

TEST(TensorSpecTest, DebugStringIsTensorFlowsRepr) {
  EXPECT_EQ(TensorSpec(DType::kFloat32, {kUnknownDim, 3}).DebugString(),
            "TensorSpec(shape=(None, 3), dtype=float32)");
  EXPECT_EQ(TensorSpec(DType::kInt64, {4}).DebugString(),
            "TensorSpec(shape=(4,), dtype=int64)");
  EXPECT_EQ(TensorSpec(DType::kInt32, {}).DebugString(),
            "TensorSpec(shape=(), dtype=int32)");
  EXPECT_EQ(TensorSpec::UnknownRank(DType::kBool).DebugString(),
            "TensorSpec(shape=<unknown>, dtype=bool)");
}

TEST(TensorSpecTest, CheckCompatibleNamesTheCountOrTheTensor) {
  const std::vector<TensorSpec> specs = {TensorSpec(DType::kFloat32, {2}),
                                         TensorSpec(DType::kFloat32, {})};
  EXPECT_TRUE(
      CheckCompatible(specs, {Floats({2}), Floats({})}, "the arguments").ok());

  absl::Status count = CheckCompatible(specs, {Floats({2})}, "the arguments");
  EXPECT_EQ(count.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(count.message(),
              HasSubstr("the arguments are 1 tensors, but 2 are declared"));

  absl::Status mismatch =
      CheckCompatible(specs, {Floats({2}), Floats({3})}, "the arguments");
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(mismatch.message(),
              HasSubstr("tensor 1 is float32[3], which does not match "
                        "TensorSpec(shape=(), dtype=float32)"));
}

}  // namespace
}  // namespace distribute
