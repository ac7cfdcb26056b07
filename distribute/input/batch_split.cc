#include "distribute/input/batch_split.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/status_macros.h"

namespace distribute {

absl::StatusOr<std::vector<int64_t>> BatchSizesForWorker(
    int64_t global_batch_size, int64_t num_workers,
    int64_t num_replicas_per_worker, int64_t worker_index) {
  if (global_batch_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "global_batch_size must be >= 0, got ", global_batch_size));
  }
  if (num_workers < 1 || num_replicas_per_worker < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_workers and num_replicas_per_worker must be >= 1, got ",
        num_workers, " and ", num_replicas_per_worker));
  }
  if (worker_index < 0 || worker_index >= num_workers) {
    return absl::InvalidArgumentError(absl::StrCat(
        "worker_index must be in [0, ", num_workers, "), got ", worker_index));
  }
  // (A): one size per replica of the cluster.
  const int64_t num_subbatches = num_workers * num_replicas_per_worker;
  // (B) and (D) together force every size to be floor(G/N) or ceil(G/N):
  // G - N * floor(G/N) of them are the larger one.
  const int64_t floor = global_batch_size / num_subbatches;
  const int64_t num_ceil = global_batch_size - num_subbatches * floor;
  std::vector<int64_t> worker_0(static_cast<size_t>(num_subbatches), floor);
  for (int64_t i = 0; i < num_ceil; ++i) ++worker_0[static_cast<size_t>(i)];
  // (C): worker w's replicas take the sizes at positions w*R .. w*R + R - 1
  // of worker 0's list in each step, so its list is worker 0's rotated left
  // by w * R; across the W workers each step then covers the whole list.
  std::rotate(worker_0.begin(),
              worker_0.begin() + worker_index * num_replicas_per_worker,
              worker_0.end());
  return worker_0;
}

absl::StatusOr<std::vector<int64_t>> LegacyRebatchSizes(int64_t batch_dim,
                                                        int64_t num_replicas) {
  if (batch_dim < 0 || num_replicas < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_dim must be >= 0 and num_replicas >= 1, got ",
                     batch_dim, " and ", num_replicas));
  }
  // TF's RebatchDataset: piece k is rows [k * c, (k + 1) * c) cut at
  // batch_dim, c = ceil(batch_dim / num_replicas). The pieces only depend
  // on the batch at hand, which is why this rule works without knowing the
  // dataset's batch size, at the price of uneven (even empty) pieces.
  const int64_t interval = (batch_dim + num_replicas - 1) / num_replicas;
  std::vector<int64_t> sizes;
  sizes.reserve(static_cast<size_t>(num_replicas));
  for (int64_t k = 0; k < num_replicas; ++k) {
    const int64_t end = std::min(interval * (k + 1), batch_dim);
    const int64_t start = std::min(interval * k, end);
    sizes.push_back(end - start);
  }
  return sizes;
}

absl::StatusOr<std::vector<int64_t>> PerReplicaBatchSizes(
    int64_t batch_dim, int64_t num_replicas, int64_t global_batch_size) {
  if (num_replicas < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_replicas must be >= 1, got ", num_replicas));
  }
  if (batch_dim < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch_dim must be >= 0, got ", batch_dim));
  }
  if (global_batch_size == kUnknownBatchSize) {
    return LegacyRebatchSizes(batch_dim, num_replicas);
  }
  if (global_batch_size < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "global_batch_size must be >= 0 or kUnknownBatchSize, got ",
        global_batch_size));
  }
  if (batch_dim > global_batch_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("a batch of ", batch_dim,
                     " rows is larger than the global batch "
                     "size ",
                     global_batch_size, "; pass the dataset's batch size"));
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
                   BatchSizesForWorker(global_batch_size, 1, num_replicas, 0));
  // RebatchDatasetV2 takes the rows in order: each replica gets its size or
  // what is left; once the rows run out the remaining replicas get nothing.
  int64_t left = batch_dim;
  for (int64_t& size : sizes) {
    size = std::min(size, left);
    left -= size;
  }
  return sizes;
}

absl::StatusOr<std::vector<data::Element>> SplitBatchBySizes(
    const data::Element& batch, absl::Span<const int64_t> sizes) {
  ASSIGN_OR_RETURN(int64_t rows, data::BatchDim(batch));
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "split sizes must be >= 0, got [", absl::StrJoin(sizes, ", "), "]"));
    }
    total += size;
  }
  if (total != rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("split sizes [", absl::StrJoin(sizes, ", "), "] sum to ",
                     total, " but the batch has ", rows, " rows"));
  }
  std::vector<data::Element> parts;
  parts.reserve(sizes.size());
  int64_t begin = 0;
  for (int64_t size : sizes) {
    ASSIGN_OR_RETURN(data::Element part,
                     data::SliceElement(batch, begin, begin + size));
    parts.push_back(std::move(part));
    begin += size;
  }
  return parts;
}

absl::StatusOr<std::vector<data::Element>> SplitBatch(
    const data::Element& global_batch, int64_t num_replicas,
    int64_t global_batch_size) {
  ASSIGN_OR_RETURN(int64_t rows, data::BatchDim(global_batch));
  ASSIGN_OR_RETURN(std::vector<int64_t> sizes,
                   PerReplicaBatchSizes(rows, num_replicas, global_batch_size));
  return SplitBatchBySizes(global_batch, sizes);
}

absl::StatusOr<std::vector<data::Element>> SplitBatch(
    const data::Element& global_batch, int64_t num_replicas) {
  ASSIGN_OR_RETURN(int64_t rows, data::BatchDim(global_batch));
  return SplitBatch(global_batch, num_replicas, rows);
}

}  // namespace distribute
