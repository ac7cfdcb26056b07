// Recursive halving-doubling (Rabenseifner) and one-shot direct all-reduce
// (builders.h).
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "devices/status_macros.h"
#include "distribute/collective/builders.h"
#include "distribute/collective/schedule.h"
#include "distribute/collective/schedule_builder.h"

namespace distribute {
namespace collective {

namespace {

// Calls fn(piece) for every piece of `range` under the options' chunking.
template <typename Fn>
void ForEachPiece(const ScheduleOptions& options, const BufferRange& range,
                  Fn fn) {
  const int64_t pieces = NumPieces(options, range.count);
  for (int64_t c = 0; c < pieces; ++c) {
    const BufferRange piece = Piece(range, pieces, c);
    if (piece.count > 0) fn(piece);
  }
}

BufferRange WithBuffer(BufferKind buffer, const BufferRange& range) {
  return BufferRange{buffer, range.offset, range.count};
}

}  // namespace

absl::StatusOr<Schedule> BuildRecursiveHalvingDoublingAllReduce(
    const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  const int32_t n = options.group_size;
  const int64_t count = options.count;
  ScheduleBuilder builder(CollectiveOp::kAllReduce,
                          Algorithm::kRecursiveHalvingDoubling, options);
  for (int32_t r = 0; r < n; ++r) {
    builder.SetBuffers(r, count, count, n > 1 ? count : 0);
  }
  int64_t p = 1;
  while (p * 2 <= n) p *= 2;
  const int64_t extra = n - p;
  // Virtual rank v < extra is rank 2v+1 (which absorbs rank 2v); the others
  // are rank v + extra.
  auto rank_of = [extra](int64_t v) {
    return static_cast<int32_t>(v < extra ? 2 * v + 1 : v + extra);
  };
  // Element range of blocks [lo, hi), block b being ShardOf(count, p, b).
  auto blocks = [count, p](int64_t lo, int64_t hi) {
    const int64_t begin = ShardOf(count, p, lo).offset;
    const int64_t end = hi < p ? ShardOf(count, p, hi).offset : count;
    return OutputRange(begin, end - begin);
  };
  const BufferRange all = OutputRange(0, count);

  // Fold: rank 2i sends its input to rank 2i+1, which adds its own.
  for (int64_t i = 0; i < extra; ++i) {
    const int32_t even = static_cast<int32_t>(2 * i);
    ForEachPiece(options, all, [&](const BufferRange& piece) {
      builder.Send(even, WithBuffer(BufferKind::kInput, piece), even + 1,
                   piece);
      builder.Reduce(even + 1, WithBuffer(BufferKind::kInput, piece), piece);
    });
  }
  for (int64_t v = extra; v < p; ++v) {
    ForEachPiece(options, all, [&](const BufferRange& piece) {
      builder.Copy(rank_of(v), WithBuffer(BufferKind::kInput, piece), piece);
    });
  }

  // Reduce-scatter by recursive halving: v keeps the half of its blocks on
  // the side of bit d and receives the partner's partial sums of that half.
  std::vector<int64_t> lo(p, 0), hi(p, p);
  for (int64_t d = p / 2; d >= 1; d /= 2) {
    std::vector<int64_t> keep_lo(p), keep_hi(p);
    for (int64_t v = 0; v < p; ++v) {
      const int64_t mid = (lo[v] + hi[v]) / 2;
      const bool upper = (v & d) != 0;
      keep_lo[v] = upper ? mid : lo[v];
      keep_hi[v] = upper ? hi[v] : mid;
      const BufferRange give = upper ? blocks(lo[v], mid) : blocks(mid, hi[v]);
      ForEachPiece(options, give, [&](const BufferRange& piece) {
        builder.Send(rank_of(v), piece, rank_of(v ^ d),
                     WithBuffer(BufferKind::kScratch, piece));
      });
    }
    for (int64_t v = 0; v < p; ++v) {
      lo[v] = keep_lo[v];
      hi[v] = keep_hi[v];
      ForEachPiece(
          options, blocks(lo[v], hi[v]), [&](const BufferRange& piece) {
            builder.Reduce(rank_of(v), WithBuffer(BufferKind::kScratch, piece),
                           piece);
          });
    }
  }

  // All-gather by recursive doubling: partners swap their reduced blocks.
  for (int64_t d = 1; d < p; d *= 2) {
    for (int64_t v = 0; v < p; ++v) {
      ForEachPiece(options, blocks(lo[v], hi[v]),
                   [&](const BufferRange& piece) {
                     builder.Send(rank_of(v), piece, rank_of(v ^ d), piece);
                   });
    }
    for (int64_t v = 0; v < p; ++v) {
      const int64_t size = hi[v] - lo[v];
      if ((v & d) != 0) {
        lo[v] -= size;
      } else {
        hi[v] += size;
      }
    }
  }

  // Unfold: rank 2i+1 returns the result to rank 2i.
  for (int64_t i = 0; i < extra; ++i) {
    const int32_t even = static_cast<int32_t>(2 * i);
    ForEachPiece(options, all, [&](const BufferRange& piece) {
      builder.Send(even + 1, piece, even, piece);
    });
  }
  return std::move(builder).Finish();
}

absl::StatusOr<Schedule> BuildDirectAllReduce(const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  const int32_t n = options.group_size;
  const int64_t count = options.count;
  ScheduleBuilder builder(CollectiveOp::kAllReduce, Algorithm::kDirect,
                          options);
  for (int32_t r = 0; r < n; ++r) {
    builder.SetBuffers(r, count, count, static_cast<int64_t>(n - 1) * count);
  }
  // Rank r keeps rank q's input (q != r) in scratch slot q (q < r) or q-1.
  auto slot = [count](int32_t r, int32_t q, const BufferRange& piece) {
    const int64_t index = q < r ? q : q - 1;
    return ScratchRange(index * count + piece.offset, piece.count);
  };
  const BufferRange all = InputRange(0, count);
  ForEachPiece(options, all, [&](const BufferRange& piece) {
    for (int32_t r = 0; r < n; ++r) {
      for (int32_t j = 1; j < n; ++j) {
        const int32_t q = (r + j) % n;
        builder.Send(r, piece, q, slot(q, r, piece));
      }
    }
  });
  // Every rank adds the inputs in rank order: ((x0 + x1) + x2) + ...
  ForEachPiece(options, all, [&](const BufferRange& piece) {
    const BufferRange out = WithBuffer(BufferKind::kOutput, piece);
    for (int32_t r = 0; r < n; ++r) {
      for (int32_t q = 0; q < n; ++q) {
        const BufferRange src = q == r ? piece : slot(r, q, piece);
        if (q == 0) {
          builder.Copy(r, src, out);
        } else {
          builder.Reduce(r, src, out);
        }
      }
    }
  });
  return std::move(builder).Finish();
}

}  // namespace collective
}  // namespace distribute
