// Partitioners, as tf.distribute.experimental.partitioners: how many shards
// a variable is split into along one axis, the rule a parameter-server
// strategy applies when it places a large variable over several tasks.
// Their numbers follow TF's (FixedShardsPartitioner, MinSizePartitioner,
// MaxSizePartitioner) wherever TF gives one; where TF fails or gives no
// usable count, these give 1 shard (an axis of length 0; MaxSize on rows of
// no bytes, where TF divides by zero), and a negative axis is an error
// rather than counted from the end. There is no string dtype, hence no
// bytes_per_string. ShardVariableShape gives the shards' shapes and
// offsets, with the first (dim % n) shards one row larger (TF's rule for
// uneven splits).
//
// Example:
//   absl::StatusOr<distribute::MinSizePartitioner> p =
//       distribute::MinSizePartitioner::Create(/*min_shard_bytes=*/4,
//                                              /*max_shards=*/2);
//   absl::StatusOr<std::vector<int64_t>> parts =
//       (*p)(devices::Shape({6, 1}), devices::DType::kFloat32);   // {2, 1}
//   absl::StatusOr<std::vector<distribute::VariableShard>> shards =
//       distribute::ShardVariableShape(devices::Shape({5, 3}), {2, 1});
//   // shapes [3,3] at row 0 and [2,3] at row 3
#ifndef DISTRIBUTE_PARTITIONERS_H_
#define DISTRIBUTE_PARTITIONERS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/dtype.h"
#include "devices/shape.h"

namespace distribute {

class Partitioner {
 public:
  virtual ~Partitioner() = default;

  // The number of partitions along each axis of a variable of `shape` and
  // `dtype`: 1 on every axis but `axis`, which gets at least 1 (even when
  // that dimension is 0; TF would give 0 there, which no variable can be
  // split into). INVALID_ARGUMENT when `axis` is not an axis of `shape` (a
  // scalar has none).
  virtual absl::StatusOr<std::vector<int64_t>> operator()(
      const devices::Shape& shape, devices::DType dtype,
      int axis = 0) const = 0;
};

// Exactly `num_shards` shards along the axis, or one per row when the axis
// is shorter.
class FixedShardsPartitioner : public Partitioner {
 public:
  // INVALID_ARGUMENT unless num_shards >= 1.
  static absl::StatusOr<FixedShardsPartitioner> Create(int64_t num_shards);

  absl::StatusOr<std::vector<int64_t>> operator()(const devices::Shape& shape,
                                                  devices::DType dtype,
                                                  int axis = 0) const override;

 private:
  explicit FixedShardsPartitioner(int64_t num_shards)
      : num_shards_(num_shards) {}
  int64_t num_shards_;
};

// As many shards as keep each at least `min_shard_bytes` (rounded up), at
// most `max_shards` and at most one per row.
class MinSizePartitioner : public Partitioner {
 public:
  // INVALID_ARGUMENT unless both are >= 1.
  static absl::StatusOr<MinSizePartitioner> Create(
      int64_t min_shard_bytes = int64_t{256} << 10, int64_t max_shards = 1);

  absl::StatusOr<std::vector<int64_t>> operator()(const devices::Shape& shape,
                                                  devices::DType dtype,
                                                  int axis = 0) const override;

 private:
  MinSizePartitioner(int64_t min_shard_bytes, int64_t max_shards)
      : min_shard_bytes_(min_shard_bytes), max_shards_(max_shards) {}
  int64_t min_shard_bytes_;
  int64_t max_shards_;
};

// As few shards as keep each at most `max_shard_bytes`, whole rows only (a
// row larger than that is a shard of its own), and at most `max_shards`
// when given (which then takes precedence over the size).
class MaxSizePartitioner : public Partitioner {
 public:
  // INVALID_ARGUMENT unless max_shard_bytes >= 1 and max_shards, when
  // given, >= 1.
  static absl::StatusOr<MaxSizePartitioner> Create(
      int64_t max_shard_bytes,
      std::optional<int64_t> max_shards = std::nullopt);

  absl::StatusOr<std::vector<int64_t>> operator()(const devices::Shape& shape,
                                                  devices::DType dtype,
                                                  int axis = 0) const override;

 private:
  MaxSizePartitioner(int64_t max_shard_bytes, std::optional<int64_t> max_shards)
      : max_shard_bytes_(max_shard_bytes), max_shards_(max_shards) {}
  int64_t max_shard_bytes_;
  std::optional<int64_t> max_shards_;
};

// One shard of a partitioned variable: its shape, and where it starts along
// the partitioned axis.
struct VariableShard {
  devices::Shape shape;
  int64_t offset = 0;
};

// The shards of a variable of `shape` split as `partitions` (one count per
// axis, as a Partitioner returns): along the one axis whose count is above
// 1, the first (dim % n) shards get one row more than the others.
// INVALID_ARGUMENT when `partitions` has another length than the rank, a
// count below 1, more than one axis above 1, or more shards than rows.
absl::StatusOr<std::vector<VariableShard>> ShardVariableShape(
    const devices::Shape& shape, const std::vector<int64_t>& partitions);

}  // namespace distribute

#endif  // DISTRIBUTE_PARTITIONERS_H_
