#include "distribute/partitioners.h"

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "devices/dtype.h"
#include "devices/shape.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace {

using devices::DType;
using devices::Shape;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<int64_t> Parts(const Partitioner& p, const Shape& shape,
                           DType dtype, int axis = 0) {
  absl::StatusOr<std::vector<int64_t>> parts = p(shape, dtype, axis);
  EXPECT_TRUE(parts.ok()) << parts.status();
  return parts.ok() ? *parts : std::vector<int64_t>{};
}

// The examples of TF's partitioners' documentation.
TEST(PartitionersTest, TensorFlowsDocumentedExamples) {
  EXPECT_THAT(Parts(*FixedShardsPartitioner::Create(2), Shape({10, 3}),
                    DType::kFloat32),
              ElementsAre(2, 1));
  EXPECT_THAT(
      Parts(*MinSizePartitioner::Create(4, 2), Shape({6, 1}), DType::kFloat32),
      ElementsAre(2, 1));
  EXPECT_THAT(
      Parts(*MaxSizePartitioner::Create(4), Shape({6, 1}), DType::kFloat32),
      ElementsAre(6, 1));
  EXPECT_THAT(
      Parts(*MaxSizePartitioner::Create(4, 2), Shape({6, 1}), DType::kFloat32),
      ElementsAre(2, 1));
  EXPECT_THAT(
      Parts(*MaxSizePartitioner::Create(1024), Shape({6, 1}), DType::kFloat32),
      ElementsAre(1, 1));
  // min_max_variable_partitioner's: [1024, 1024] float32 in 256 KiB slices.
  EXPECT_THAT(Parts(*MinSizePartitioner::Create(256 << 10, 100),
                    Shape({1024, 1024}), DType::kFloat32),
              ElementsAre(16, 1));
  EXPECT_THAT(Parts(*MinSizePartitioner::Create(256 << 10, 5),
                    Shape({1024, 1024}), DType::kFloat32),
              ElementsAre(5, 1));
}

TEST(PartitionersTest, BoundsAndRounding) {
  // Never more shards than rows.
  EXPECT_THAT(
      Parts(*FixedShardsPartitioner::Create(8), Shape({3, 4}), DType::kFloat32),
      ElementsAre(3, 1));
  EXPECT_THAT(
      Parts(*MinSizePartitioner::Create(1, 1000), Shape({3}), DType::kInt64),
      ElementsAre(3));
  // MinSize rounds up: 40 bytes in pieces of at least 16 -> 3.
  EXPECT_THAT(
      Parts(*MinSizePartitioner::Create(16, 10), Shape({10}), DType::kFloat32),
      ElementsAre(3));
  // The default keeps one shard.
  EXPECT_THAT(
      Parts(*MinSizePartitioner::Create(), Shape({1 << 20}), DType::kFloat64),
      ElementsAre(1));
  // MaxSize: rows of 3 float64 (24 bytes) in shards of at most 50 bytes hold
  // 2 rows each: 7 rows -> 4 shards; a row above the bound is a shard.
  EXPECT_THAT(
      Parts(*MaxSizePartitioner::Create(50), Shape({7, 3}), DType::kFloat64),
      ElementsAre(4, 1));
  EXPECT_THAT(
      Parts(*MaxSizePartitioner::Create(10), Shape({7, 3}), DType::kFloat64),
      ElementsAre(7, 1));
  // Along another axis: 4 columns of 5 float16 (10 bytes), 25-byte shards.
  EXPECT_THAT(
      Parts(*MaxSizePartitioner::Create(25), Shape({5, 4}), DType::kFloat16, 1),
      ElementsAre(1, 2));
  // Empty axes and rows give one shard, not none (or a division by zero).
  for (const Shape& empty : {Shape({0, 3}), Shape({4, 0})}) {
    EXPECT_THAT(
        Parts(*FixedShardsPartitioner::Create(2), empty, DType::kFloat32),
        ElementsAre(empty.dim(0) == 0 ? 1 : 2, 1));
    EXPECT_THAT(Parts(*MaxSizePartitioner::Create(1), empty, DType::kFloat32),
                ElementsAre(1, 1));
    EXPECT_THAT(
        Parts(*MinSizePartitioner::Create(1, 4), empty, DType::kFloat32),
        ElementsAre(1, 1));
  }
  // Sizes whose bytes overflow int64_t still give sane counts.
  const Shape huge({int64_t{1} << 40, int64_t{1} << 21});
  EXPECT_THAT(Parts(*MinSizePartitioner::Create(1, 64), huge, DType::kFloat64),
              ElementsAre(64, 1));
  EXPECT_THAT(Parts(*MaxSizePartitioner::Create(1, 64), huge, DType::kFloat64),
              ElementsAre(64, 1));
  // Bytes beyond int64_t divided by a huge minimum: ceil(2^64 / (2^63 - 1)).
  EXPECT_THAT(
      Parts(*MinSizePartitioner::Create(INT64_MAX, 64), huge, DType::kFloat64),
      ElementsAre(3, 1));
}

TEST(PartitionersTest, BadArgumentsAreInvalidArgument) {
  EXPECT_EQ(FixedShardsPartitioner::Create(0).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status min = MinSizePartitioner::Create(0).status();
  EXPECT_EQ(min.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(min.message(), HasSubstr("`min_shard_bytes` must be positive"));
  EXPECT_EQ(MinSizePartitioner::Create(4, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MaxSizePartitioner::Create(0).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status max = MaxSizePartitioner::Create(4, 0).status();
  EXPECT_EQ(max.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(max.message(), HasSubstr("`max_shards` must be positive"));

  const FixedShardsPartitioner p = *FixedShardsPartitioner::Create(2);
  for (int axis : {2, -1}) {
    absl::Status bad = p(Shape({4, 4}), DType::kFloat32, axis).status();
    EXPECT_EQ(bad.code(), absl::StatusCode::kInvalidArgument) << axis;
    EXPECT_THAT(bad.message(), HasSubstr("along axis"));
  }
  EXPECT_EQ(p(Shape(), DType::kFloat32).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ShardVariableShapeTest, TheFirstShardsTakeTheRemainder) {
  absl::StatusOr<std::vector<VariableShard>> shards =
      ShardVariableShape(Shape({10, 2}), {3, 1});
  ASSERT_TRUE(shards.ok()) << shards.status();
  ASSERT_EQ(shards->size(), 3u);
  EXPECT_EQ((*shards)[0].shape, Shape({4, 2}));
  EXPECT_EQ((*shards)[1].shape, Shape({3, 2}));
  EXPECT_EQ((*shards)[2].shape, Shape({3, 2}));
  EXPECT_EQ((*shards)[0].offset, 0);
  EXPECT_EQ((*shards)[1].offset, 4);
  EXPECT_EQ((*shards)[2].offset, 7);

  absl::StatusOr<std::vector<VariableShard>> columns =
      ShardVariableShape(Shape({2, 5}), {1, 2});
  ASSERT_TRUE(columns.ok()) << columns.status();
  ASSERT_EQ(columns->size(), 2u);
  EXPECT_EQ((*columns)[0].shape, Shape({2, 3}));
  EXPECT_EQ((*columns)[1].shape, Shape({2, 2}));
  EXPECT_EQ((*columns)[1].offset, 3);

  absl::StatusOr<std::vector<VariableShard>> whole =
      ShardVariableShape(Shape({4}), {1});
  ASSERT_TRUE(whole.ok());
  ASSERT_EQ(whole->size(), 1u);
  EXPECT_EQ((*whole)[0].shape, Shape({4}));
}

TEST(ShardVariableShapeTest, PartitionerOutputAlwaysShards) {
  const MaxSizePartitioner p = *MaxSizePartitioner::Create(100);
  for (int64_t rows : {1, 2, 7, 33, 100}) {
    const Shape shape({rows, 3});
    absl::StatusOr<std::vector<VariableShard>> shards =
        ShardVariableShape(shape, Parts(p, shape, DType::kFloat32));
    ASSERT_TRUE(shards.ok()) << shards.status();
    int64_t total = 0;
    for (const VariableShard& s : *shards) {
      EXPECT_EQ(s.offset, total);
      EXPECT_LE(s.shape.num_elements() * 4, 100);
      total += s.shape.dim(0);
    }
    EXPECT_EQ(total, rows);
  }
}

TEST(ShardVariableShapeTest, BadPartitionsAreInvalidArgument) {
  EXPECT_EQ(ShardVariableShape(Shape({4, 4}), {2}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ShardVariableShape(Shape({4, 4}), {0, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status two = ShardVariableShape(Shape({4, 4}), {2, 2}).status();
  EXPECT_EQ(two.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(two.message(), HasSubstr("one axis only"));
  absl::Status empty = ShardVariableShape(Shape({3}), {4}).status();
  EXPECT_EQ(empty.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(empty.message(), HasSubstr("at most 3 shards"));
}

}  // namespace
}  // namespace distribute
