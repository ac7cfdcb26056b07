#include "distribute/collective/shared_memory_all_reduce.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "devices/reduce_kernels.h"
#include "devices/status_macros.h"

namespace distribute {
namespace collective {
namespace {

// Slices of the two-shot variant start on cache-line boundaries (for
// buffers that do), so that vector loads stay aligned.
constexpr int64_t kSliceAlignBytes = 64;

// Rank r's slice [begin, end) of `count` elements of `elem` bytes.
std::pair<int64_t, int64_t> SliceOf(int64_t count, int n, int r, int64_t elem) {
  const int64_t align = std::max<int64_t>(1, kSliceAlignBytes / elem);
  int64_t per = (count + n - 1) / n;
  per = (per + align - 1) / align * align;
  const int64_t begin = std::min(count, per * r);
  const int64_t end = std::min(count, begin + per);
  return {begin, end};
}

bool Overlaps(const std::byte* a, size_t a_bytes, const std::byte* b,
              size_t b_bytes) {
  return a < b + b_bytes && b < a + a_bytes;
}

}  // namespace

SharedMemoryAllReduce::SharedMemoryAllReduce(
    devices::DirectAccessGroup& group, SharedMemoryAllReduceOptions options)
    : group_(group),
      size_(group.size()),
      one_shot_max_bytes_(options.one_shot_max_bytes < 0
                              ? kDefaultOneShotBytes
                              : options.one_shot_max_bytes),
      block_bytes_(std::max<int64_t>(options.block_bytes, 64)) {
  ranks_.reserve(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    ranks_.push_back(std::make_unique<RankState>());
  }
}

bool SharedMemoryAllReduce::OneShot(int64_t bytes) const {
  return bytes <= one_shot_max_bytes_;
}

absl::Status SharedMemoryAllReduce::Disagreement(int rank, int q, int64_t count,
                                                 devices::DType dtype,
                                                 devices::ReduceOp op,
                                                 const Published& mine) {
  return absl::InvalidArgumentError(absl::StrCat(
      "shared-memory all-reduce: rank ", q, " passed ", count, " elements of ",
      devices::DTypeName(dtype), " with op ", devices::ReduceOpName(op),
      " but rank ", rank, " passed ", mine.count, " of ",
      devices::DTypeName(mine.dtype), " with op ",
      devices::ReduceOpName(mine.op),
      "; every replica must all-reduce the same shape, dtype and op"));
}

absl::Status SharedMemoryAllReduce::CheckAgreement(int rank, int parity) const {
  const Published& mine = ranks_[rank]->published[parity];
  for (int q = 0; q < size_; ++q) {
    const Published& theirs = ranks_[q]->published[parity];
    if (theirs.count != mine.count || theirs.dtype != mine.dtype ||
        theirs.op != mine.op) {
      return Disagreement(rank, q, theirs.count, theirs.dtype, theirs.op, mine);
    }
  }
  return absl::OkStatus();
}

absl::Status SharedMemoryAllReduce::ReduceRange(
    int rank, absl::Span<const std::byte* const> src, std::byte* out,
    int64_t begin, int64_t end, const Published& p) {
  if (end <= begin) return absl::OkStatus();
  const int64_t elem = static_cast<int64_t>(devices::DTypeSize(p.dtype));
  const devices::ReduceOp accumulate_op =
      p.op == devices::ReduceOp::kMean ? devices::ReduceOp::kSum : p.op;
  // Accumulate in the output itself unless a source overlaps it (an
  // in-place rank's own input): then in a block buffer copied out after.
  const size_t range_bytes = static_cast<size_t>((end - begin) * elem);
  bool via_block = false;
  for (const std::byte* s : src) {
    via_block |= Overlaps(s + begin * elem, range_bytes, out + begin * elem,
                          range_bytes);
  }
  RankState& state = *ranks_[rank];
  if (via_block && state.block == nullptr) {
    state.block.reset(new std::byte[static_cast<size_t>(block_bytes_)]);
  }
  const int64_t block_elems = std::max<int64_t>(1, block_bytes_ / elem);
  for (int64_t b = begin; b < end; b += block_elems) {
    const int64_t n = std::min(block_elems, end - b);
    const size_t bytes = static_cast<size_t>(n * elem);
    std::byte* acc = via_block ? state.block.get() : out + b * elem;
    size_t q = 1;
    auto float_aligned = [](const void* ptr) {
      return reinterpret_cast<uintptr_t>(ptr) % alignof(float) == 0;
    };
    if (p.dtype == devices::DType::kFloat32 &&
        accumulate_op == devices::ReduceOp::kSum && src.size() >= 2 &&
        float_aligned(src[0] + b * elem) && float_aligned(src[1] + b * elem) &&
        float_aligned(acc)) {
      // The first two sources in one pass: acc = s0 + s1, the same bits as
      // copying s0 and accumulating s1 (IEEE addition commutes exactly),
      // with one pass over acc instead of two. acc overlaps no source.
      // Only where all three are aligned as floats (a caller's buffers may
      // not be); else the general path, which reads any alignment.
      const float* s0 = reinterpret_cast<const float*>(src[0] + b * elem);
      const float* s1 = reinterpret_cast<const float*>(src[1] + b * elem);
      float* a = reinterpret_cast<float*>(acc);
      for (int64_t i = 0; i < n; ++i) a[i] = s0[i] + s1[i];
      q = 2;
    } else {
      std::memcpy(acc, src[0] + b * elem, bytes);
    }
    for (; q < src.size(); ++q) {
      ASSIGN_OR_RETURN(devices::KernelCost cost,
                       devices::Accumulate(accumulate_op, src[q] + b * elem,
                                           acc, n, p.dtype));
    }
    if (p.op == devices::ReduceOp::kMean) {
      ASSIGN_OR_RETURN(devices::KernelCost cost,
                       devices::FinalizeMean(acc, n, p.dtype, size_));
    }
    if (via_block) std::memcpy(out + b * elem, acc, bytes);
  }
  return absl::OkStatus();
}

absl::Status SharedMemoryAllReduce::OneShotRun(
    int rank, int parity, devices::LazyDeadline& deadline) {
  RankState& state = *ranks_[rank];
  const Published& mine = state.published[parity];
  const size_t bytes =
      static_cast<size_t>(mine.count) * devices::DTypeSize(mine.dtype);
  const size_t need = kStagingHeaderBytes + bytes;
  if (state.staging_bytes[parity] < need) {
    state.staging[parity].reset();
    state.staging[parity].reset(new StagingLine[(need + 63) / 64]);
    state.staging_bytes[parity] = (need + 63) / 64 * 64;
  }
  // The header goes with the data: a peer that has passed the barrier reads
  // both from one run of cache lines, one transfer from this core's cache
  // after the barrier's own, where a separate table would cost another.
  std::byte* staged = reinterpret_cast<std::byte*>(state.staging[parity].get());
  auto* header = reinterpret_cast<StagingHeader*>(staged);
  header->call = state.calls;
  header->count = mine.count;
  header->dtype = mine.dtype;
  header->op = mine.op;
  if (bytes > 0) std::memcpy(staged + kStagingHeaderBytes, mine.input, bytes);
  absl::Status s = group_.Arrive(rank, deadline);
  RETURN_IF_ERROR(s);
  absl::InlinedVector<const std::byte*, 8> src(static_cast<size_t>(size_));
  for (int q = 0; q < size_; ++q) {
    // Set before q's matching Arrive and replaced only after a later
    // barrier that this rank has not yet reached.
    const std::byte* theirs =
        reinterpret_cast<const std::byte*>(ranks_[q]->staging[parity].get());
    const auto* h = reinterpret_cast<const StagingHeader*>(theirs);
    if (h == nullptr || h->call != state.calls) {
      // q staged nothing for this call: its size took it to the two-shot
      // variant, so it disagrees; the table every rank fills says how.
      s = CheckAgreement(rank, parity);
      group_.Finish(rank);
      return s.ok() ? absl::InternalError(absl::StrCat(
                          "shared-memory all-reduce: rank ", q,
                          " staged no input for call ", state.calls,
                          " although it agrees on the shape"))
                    : s;
    }
    if (h->count != mine.count || h->dtype != mine.dtype || h->op != mine.op) {
      group_.Finish(rank);
      return Disagreement(rank, q, h->count, h->dtype, h->op, mine);
    }
    src[q] = theirs + kStagingHeaderBytes;
  }
  // This rank's own contribution from its input: the same bytes as its
  // staged copy, read from a cache line this core already holds.
  src[static_cast<size_t>(rank)] = mine.input;
  s = ReduceRange(rank, src, mine.output, 0, mine.count, mine);
  if (!s.ok()) return group_.Fail(rank, s);
  // Peers read only staging buffers, which the next call with this parity
  // overwrites only after the next barrier: no exit barrier.
  group_.Finish(rank);
  return absl::OkStatus();
}

absl::Status SharedMemoryAllReduce::TwoShotRun(
    int rank, int parity, devices::LazyDeadline& deadline) {
  const Published& mine = ranks_[rank]->published[parity];
  absl::Status s = group_.Arrive(rank, deadline);  // Pointers published.
  RETURN_IF_ERROR(s);
  s = CheckAgreement(rank, parity);
  if (!s.ok()) {
    group_.Finish(rank);
    return s;
  }
  const int64_t elem = static_cast<int64_t>(devices::DTypeSize(mine.dtype));
  absl::InlinedVector<const std::byte*, 8> src(static_cast<size_t>(size_));
  for (int q = 0; q < size_; ++q) src[q] = ranks_[q]->published[parity].input;
  const auto [begin, end] = SliceOf(mine.count, size_, rank, elem);
  s = ReduceRange(rank, src, mine.output, begin, end, mine);
  if (!s.ok()) return group_.Fail(rank, s);
  // Every slice is reduced, and every input read (an in-place rank's
  // output may now be overwritten).
  s = group_.Arrive(rank, deadline);
  RETURN_IF_ERROR(s);
  for (int j = 1; j < size_; ++j) {
    const int q = (rank + j) % size_;  // Spread the readers over the owners.
    const auto [qb, qe] = SliceOf(mine.count, size_, q, elem);
    if (qe > qb) {
      std::memcpy(mine.output + qb * elem,
                  ranks_[q]->published[parity].output + qb * elem,
                  static_cast<size_t>((qe - qb) * elem));
    }
  }
  // Peers have copied this rank's slice before it returns.
  s = group_.Arrive(rank, deadline);
  RETURN_IF_ERROR(s);
  group_.Finish(rank);
  return absl::OkStatus();
}

absl::Status SharedMemoryAllReduce::Run(int rank, const void* input,
                                        void* output, int64_t count,
                                        devices::DType dtype,
                                        devices::ReduceOp op,
                                        absl::Duration timeout) {
  if (rank < 0 || rank >= size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("shared-memory all-reduce: rank ", rank,
                     " is outside the group of ", size_, " ranks"));
  }
  if (count < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "shared-memory all-reduce: count must be >= 0, not ", count));
  }
  if (count > 0 && (input == nullptr || output == nullptr)) {
    return absl::InvalidArgumentError(
        "shared-memory all-reduce: null input or output buffer");
  }
  if (dtype == devices::DType::kBool && op == devices::ReduceOp::kMean) {
    return absl::InvalidArgumentError(
        "shared-memory all-reduce: MEAN is not defined for bool; use SUM "
        "(logical or) or PROD (logical and)");
  }
  const size_t bytes = static_cast<size_t>(count) * devices::DTypeSize(dtype);
  const auto* in = static_cast<const std::byte*>(input);
  auto* out = static_cast<std::byte*>(output);
  if (in != out && count > 0 && Overlaps(in, bytes, out, bytes)) {
    return absl::InvalidArgumentError(
        "shared-memory all-reduce: input and output partly overlap; pass "
        "the same buffer (in place) or disjoint ones");
  }
  if (size_ == 1) {
    if (in != out && bytes > 0) std::memcpy(out, in, bytes);
    return absl::OkStatus();  // kMean divides by 1.
  }
  RankState& state = *ranks_[rank];
  const int parity = static_cast<int>(state.calls & 1);
  ++state.calls;
  Published& mine = state.published[parity];
  mine.count = count;
  mine.dtype = dtype;
  mine.op = op;
  mine.input = in;
  mine.output = out;
  devices::LazyDeadline deadline(timeout);
  if (OneShot(static_cast<int64_t>(bytes))) {
    return OneShotRun(rank, parity, deadline);
  }
  // Two-shot's barriers share a deadline fixed now, so that a reduction
  // between them counts against the timeout (one clock read is nothing
  // next to a message of this size).
  deadline.Get(absl::Now());
  return TwoShotRun(rank, parity, deadline);
}

}  // namespace collective
}  // namespace distribute
