#include "distribute/models/synthetic_data.h"

#include <cmath>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "devices/tensor.h"
#include "gtest/gtest.h"

namespace distribute {
namespace models {
namespace {

using devices::DType;
using devices::Shape;
using devices::Tensor;

TEST(MakeClassificationDataTest, ShapesDTypesAndLabelRange) {
  absl::StatusOr<ClassificationData> data =
      MakeClassificationData(500, 8, 4, 1);
  ASSERT_TRUE(data.ok()) << data.status();
  EXPECT_EQ(data->features.dtype(), DType::kFloat32);
  EXPECT_EQ(data->features.shape(), Shape({500, 8}));
  EXPECT_EQ(data->labels.dtype(), DType::kInt32);
  EXPECT_EQ(data->labels.shape(), Shape({500}));
  std::vector<int> counts(4, 0);
  for (int32_t label : data->labels.ToVector<int32_t>()) {
    ASSERT_GE(label, 0);
    ASSERT_LT(label, 4);
    ++counts[static_cast<size_t>(label)];
  }
  for (int count : counts) EXPECT_GT(count, 25);  // Every class occurs.
  // Standard normal features.
  double sum = 0, sum_sq = 0;
  for (float x : data->features.ToVector<float>()) {
    sum += x;
    sum_sq += static_cast<double>(x) * x;
  }
  EXPECT_NEAR(sum / 4000, 0, 0.1);
  EXPECT_NEAR(sum_sq / 4000, 1, 0.1);
}

TEST(MakeClassificationDataTest, DeterministicPerSeed) {
  ClassificationData a = *MakeClassificationData(64, 5, 3, 7);
  ClassificationData b = *MakeClassificationData(64, 5, 3, 7);
  ClassificationData c = *MakeClassificationData(64, 5, 3, 8);
  EXPECT_EQ(a.features.ToVector<float>(), b.features.ToVector<float>());
  EXPECT_EQ(a.labels.ToVector<int32_t>(), b.labels.ToVector<int32_t>());
  EXPECT_NE(a.features.ToVector<float>(), c.features.ToVector<float>());
  EXPECT_NE(a.labels.ToVector<int32_t>(), c.labels.ToVector<int32_t>());
}

TEST(MakeClassificationDataTest, RejectsBadSizes) {
  EXPECT_EQ(MakeClassificationData(0, 4, 2, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeClassificationData(4, 0, 2, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeClassificationData(4, 4, 1, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeClassificationData(4, 4, int64_t{1} << 32, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MakeClassificationData(int64_t{1} << 40, int64_t{1} << 40, 2, 1)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SliceExamplesTest, CopiesRows) {
  ClassificationData data = *MakeClassificationData(10, 3, 2, 1);
  absl::StatusOr<ClassificationData> slice = SliceExamples(data, 4, 7);
  ASSERT_TRUE(slice.ok()) << slice.status();
  EXPECT_EQ(slice->features.shape(), Shape({3, 3}));
  std::vector<float> all = data.features.ToVector<float>();
  EXPECT_EQ(slice->features.ToVector<float>(),
            std::vector<float>(all.begin() + 12, all.begin() + 21));
  std::vector<int32_t> labels = data.labels.ToVector<int32_t>();
  EXPECT_EQ(slice->labels.ToVector<int32_t>(),
            std::vector<int32_t>(labels.begin() + 4, labels.begin() + 7));
  absl::StatusOr<ClassificationData> empty = SliceExamples(data, 10, 10);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->labels.shape(), Shape({0}));
}

TEST(SliceExamplesTest, RejectsBadRangesAndData) {
  ClassificationData data = *MakeClassificationData(10, 3, 2, 1);
  EXPECT_EQ(SliceExamples(data, -1, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SliceExamples(data, 5, 4).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SliceExamples(data, 0, 11).status().code(),
            absl::StatusCode::kInvalidArgument);
  ClassificationData wrong = data;
  wrong.labels = *Tensor::Host(DType::kInt32, {9});
  EXPECT_EQ(SliceExamples(wrong, 0, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
  ClassificationData shape_only = data;
  shape_only.features = Tensor::ShapeOnly(DType::kFloat32, {10, 3}, "sim:0");
  EXPECT_EQ(SliceExamples(shape_only, 0, 2).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

// The source makes every example bit for bit as the whole set does, at
// odd and even offsets into the random streams, and past the set's end it
// goes on without failing.
TEST(ClassificationSourceTest, ExamplesAreTheRowsOfTheWholeSet) {
  for (const auto& [features, classes] :
       std::vector<std::pair<int64_t, int64_t>>{{64, 10}, {7, 3}, {1, 2}}) {
    const int64_t n = 101;
    auto whole = MakeClassificationData(n, features, classes, 9);
    auto source = ClassificationSource::Create(n, features, classes, 9);
    ASSERT_TRUE(whole.ok() && source.ok());
    std::vector<float> row(features);
    for (int64_t i = 0; i < n; ++i) {
      const int32_t label = source->Example(i, row.data());
      ASSERT_EQ(label, whole->labels.data<int32_t>()[i]) << i;
      for (int64_t f = 0; f < features; ++f) {
        ASSERT_EQ(row[f], whole->features.data<float>()[i * features + f])
            << i << " " << f;
      }
    }
    const int32_t beyond = source->Example(5 * n, row.data());
    EXPECT_GE(beyond, 0);
    EXPECT_LT(beyond, classes);
  }
  EXPECT_EQ(ClassificationSource::Create(0, 4, 3, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ClassificationSource::Create(8, 4, 1, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace models
}  // namespace distribute
