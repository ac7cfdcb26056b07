#include "distribute/collective/ring_phases.h"

#include <algorithm>
#include <cstdint>

#include "distribute/collective/schedule.h"
#include "distribute/collective/schedule_builder.h"

namespace distribute {
namespace collective {

namespace {

int64_t Mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

Shard Segment(const SegmentFn& segment, int64_t length, int64_t m, int64_t x) {
  return segment ? segment(x) : ShardOf(length, m, x);
}

// The most pieces any of the m segments is split into.
int64_t MaxPieces(const ScheduleOptions& options, const SegmentFn& segment,
                  int64_t length, int64_t m) {
  // Equal shards: segment 0 is the largest.
  if (!segment) return NumPieces(options, ShardOf(length, m, 0).count);
  int64_t most = 0;
  for (int64_t x = 0; x < m; ++x) {
    most = std::max(most, NumPieces(options, segment(x).count));
  }
  return most;
}

// Piece `c` of segment `x` in absolute positions; false if the segment has
// fewer pieces.
bool SegmentPiece(const ScheduleOptions& options, const SegmentFn& segment_fn,
                  int64_t base, int64_t length, int64_t m, int64_t x, int64_t c,
                  Shard* piece) {
  const Shard segment = Segment(segment_fn, length, m, x);
  const int64_t pieces = NumPieces(options, segment.count);
  if (c >= pieces) return false;
  const Shard p = ShardOf(segment.count, pieces, c);
  piece->offset = base + segment.offset + p.offset;
  piece->count = p.count;
  return piece->count > 0;
}

}  // namespace

void AddRingReduceScatter(const RingReduceScatterPlan& plan,
                          const ScheduleOptions& options,
                          ScheduleBuilder* builder) {
  const int64_t m = static_cast<int64_t>(plan.members.size());
  if (m == 0 || plan.length == 0) return;
  const int64_t max_pieces = MaxPieces(options, plan.segment, plan.length, m);
  Shard piece;
  if (m == 1) {
    if (plan.tmp) return;
    for (int64_t c = 0; c < max_pieces; ++c) {
      if (!SegmentPiece(options, plan.segment, plan.base, plan.length, 1, 0, c,
                        &piece)) {
        continue;
      }
      builder->Copy(plan.members[0], plan.local(0, piece.offset, piece.count),
                    plan.acc(0, piece.offset, piece.count));
    }
    return;
  }
  // Every member's send of a round comes before its reduction in program
  // order: the send does not depend on the reduction, and an executor that
  // issues steps in program order would otherwise hold it back until the
  // member's own receive has arrived, passing the round around the ring one
  // member at a time instead of all at once.
  std::vector<ScheduleBuilder::Message> round;
  for (int64_t k = 0; k + 1 < m; ++k) {
    for (int64_t c = 0; c < max_pieces; ++c) {
      round.clear();
      for (int pass = 0; pass < 2; ++pass) {
        if (pass == 1) builder->SendRound(round);
        for (int64_t i = 0; i < m; ++i) {
          const int64_t x = Mod(i - k - 1, m);
          if (!SegmentPiece(options, plan.segment, plan.base, plan.length, m, x,
                            c, &piece)) {
            continue;
          }
          const int32_t from = static_cast<int32_t>(i);
          const int32_t to = static_cast<int32_t>((i + 1) % m);
          const BufferRange acc = plan.acc(to, piece.offset, piece.count);
          const BufferRange into =
              plan.tmp ? plan.tmp(to, piece.offset, piece.count) : acc;
          if (pass == 0) {
            const BufferRange src =
                k == 0 ? plan.local(from, piece.offset, piece.count)
                       : plan.acc(from, piece.offset, piece.count);
            round.push_back({plan.members[from], src, plan.members[to], into});
          } else if (plan.tmp) {
            builder->Reduce(plan.members[to], into, acc);
          } else {
            builder->Reduce(plan.members[to],
                            plan.local(to, piece.offset, piece.count), acc);
          }
        }
      }
    }
  }
}

void AddRingAllGather(const RingAllGatherPlan& plan,
                      const ScheduleOptions& options,
                      ScheduleBuilder* builder) {
  const int64_t m = static_cast<int64_t>(plan.members.size());
  if (m <= 1 || plan.length == 0) return;
  const int64_t max_pieces = MaxPieces(options, plan.segment, plan.length, m);
  Shard piece;
  std::vector<ScheduleBuilder::Message> round;
  for (int64_t k = 0; k + 1 < m; ++k) {
    for (int64_t c = 0; c < max_pieces; ++c) {
      round.clear();
      for (int64_t i = 0; i < m; ++i) {
        const int64_t x = Mod(i - k, m);
        if (!SegmentPiece(options, plan.segment, plan.base, plan.length, m, x,
                          c, &piece)) {
          continue;
        }
        const int32_t from = static_cast<int32_t>(i);
        const int32_t to = static_cast<int32_t>((i + 1) % m);
        const BufferRange src = k == 0
                                    ? plan.own(from, piece.offset, piece.count)
                                    : plan.dst(from, piece.offset, piece.count);
        round.push_back({plan.members[from], src, plan.members[to],
                         plan.dst(to, piece.offset, piece.count)});
      }
      builder->SendRound(round);
    }
  }
}

}  // namespace collective
}  // namespace distribute
