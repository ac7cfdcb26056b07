#include "distribute/partitioners.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"

namespace distribute {
namespace {

// The counts with `n` on `axis`, after checking that `axis` is one of
// `shape`'s.
absl::StatusOr<std::vector<int64_t>> Along(const devices::Shape& shape,
                                           int axis, int64_t n) {
  if (axis < 0 || axis >= shape.rank()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot partition a variable of shape ", shape.DebugString(),
        " along axis ", axis, ": it has ", shape.rank(),
        " axes (a partitioned variable has rank at least 1)"));
  }
  std::vector<int64_t> partitions(static_cast<size_t>(shape.rank()), 1);
  partitions[static_cast<size_t>(axis)] = std::max<int64_t>(1, n);
  return partitions;
}

int64_t CeilDiv(int64_t a, int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

}  // namespace

absl::StatusOr<FixedShardsPartitioner> FixedShardsPartitioner::Create(
    int64_t num_shards) {
  if (num_shards < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Argument `num_shards` must be positive. Received: ", num_shards));
  }
  return FixedShardsPartitioner(num_shards);
}

absl::StatusOr<std::vector<int64_t>> FixedShardsPartitioner::operator()(
    const devices::Shape& shape, devices::DType, int axis) const {
  if (axis < 0 || axis >= shape.rank()) return Along(shape, axis, 1);
  return Along(shape, axis, std::min(num_shards_, shape.dim(axis)));
}

absl::StatusOr<MinSizePartitioner> MinSizePartitioner::Create(
    int64_t min_shard_bytes, int64_t max_shards) {
  if (min_shard_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Argument `min_shard_bytes` must be positive. Received: ",
                     min_shard_bytes));
  }
  if (max_shards < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Argument `max_shards` must be positive. Received: ", max_shards));
  }
  return MinSizePartitioner(min_shard_bytes, max_shards);
}

absl::StatusOr<std::vector<int64_t>> MinSizePartitioner::operator()(
    const devices::Shape& shape, devices::DType dtype, int axis) const {
  if (axis < 0 || axis >= shape.rank()) return Along(shape, axis, 1);
  // TF: ceil(num_elements * element_size / min_shard_bytes), bounded by
  // the rows and max_shards; in 128-bit integers, where no size overflows.
  const unsigned __int128 bytes =
      static_cast<unsigned __int128>(shape.num_elements()) *
      devices::DTypeSize(dtype);
  const unsigned __int128 m = static_cast<unsigned __int128>(min_shard_bytes_);
  const unsigned __int128 wanted = bytes / m + (bytes % m != 0 ? 1 : 0);
  const int64_t bound = std::min(shape.dim(axis), max_shards_);
  return Along(shape, axis,
               wanted < static_cast<unsigned __int128>(bound)
                   ? static_cast<int64_t>(wanted)
                   : bound);
}

absl::StatusOr<MaxSizePartitioner> MaxSizePartitioner::Create(
    int64_t max_shard_bytes, std::optional<int64_t> max_shards) {
  if (max_shard_bytes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Argument `max_shard_bytes` must be positive. Received: ",
                     max_shard_bytes));
  }
  if (max_shards.has_value() && *max_shards < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Argument `max_shards` must be positive. Received: ", *max_shards));
  }
  return MaxSizePartitioner(max_shard_bytes, max_shards);
}

absl::StatusOr<std::vector<int64_t>> MaxSizePartitioner::operator()(
    const devices::Shape& shape, devices::DType dtype, int axis) const {
  if (axis < 0 || axis >= shape.rank()) return Along(shape, axis, 1);
  const int64_t rows = shape.dim(axis);
  if (rows == 0) return Along(shape, axis, 1);
  // The bytes of one row (a slice across `axis`); rows that hold nothing
  // all fit in one shard.
  const int64_t size = static_cast<int64_t>(devices::DTypeSize(dtype));
  const int64_t row_elements = shape.num_elements() / rows;
  int64_t slices_per_shard = rows;
  if (row_elements > 0) {
    if (row_elements > INT64_MAX / size) {
      slices_per_shard = 1;
    } else {
      slices_per_shard =
          std::max<int64_t>(1, max_shard_bytes_ / (row_elements * size));
    }
  }
  int64_t shards = CeilDiv(rows, slices_per_shard);
  if (max_shards_.has_value()) shards = std::min(shards, *max_shards_);
  return Along(shape, axis, shards);
}

absl::StatusOr<std::vector<VariableShard>> ShardVariableShape(
    const devices::Shape& shape, const std::vector<int64_t>& partitions) {
  if (static_cast<int>(partitions.size()) != shape.rank()) {
    return absl::InvalidArgumentError(
        absl::StrCat("partitions have ", partitions.size(),
                     " counts but the variable's shape ", shape.DebugString(),
                     " has ", shape.rank(), " axes: give one count per axis"));
  }
  int axis = -1;
  for (int i = 0; i < shape.rank(); ++i) {
    const int64_t n = partitions[static_cast<size_t>(i)];
    if (n < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("partition count ", n, " on axis ", i, " is below 1"));
    }
    if (n == 1) continue;
    if (axis >= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a variable can be partitioned along one axis only, but axes ", axis,
          " and ", i, " have counts above 1"));
    }
    axis = i;
  }
  if (axis < 0) return std::vector<VariableShard>{VariableShard{shape, 0}};
  const int64_t n = partitions[static_cast<size_t>(axis)];
  const int64_t rows = shape.dim(axis);
  if (n > rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        n, " shards along axis ", axis, " of shape ", shape.DebugString(),
        " would leave some empty: at most ", rows, " shards"));
  }
  std::vector<VariableShard> shards;
  shards.reserve(static_cast<size_t>(n));
  std::vector<int64_t> dims(shape.dims().begin(), shape.dims().end());
  int64_t offset = 0;
  for (int64_t k = 0; k < n; ++k) {
    dims[static_cast<size_t>(axis)] = rows / n + (k < rows % n ? 1 : 0);
    ASSIGN_OR_RETURN(devices::Shape piece, devices::Shape::Make(dims));
    shards.push_back(VariableShard{std::move(piece), offset});
    offset += dims[static_cast<size_t>(axis)];
  }
  return shards;
}

}  // namespace distribute
