// Internal: the two halves of a ring all-reduce, over any ordered subset of
// ranks and any element range, shared by the ring, hierarchical,
// reduce-scatter and all-gather builders.
//
// Example (a ring all-reduce of [0, count) over ranks 0..n-1):
//   RingReduceScatterPlan rs;
//   rs.members = {0, 1, 2, 3};
//   rs.length = count;
//   rs.local = [](int32_t, int64_t off, int64_t n) {
//     return InputRange(off, n);
//   };
//   rs.acc = [](int32_t, int64_t off, int64_t n) {
//     return OutputRange(off, n);
//   };
//   AddRingReduceScatter(rs, options, &builder);
#ifndef DISTRIBUTE_COLLECTIVE_RING_PHASES_H_
#define DISTRIBUTE_COLLECTIVE_RING_PHASES_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "distribute/collective/schedule.h"
#include "distribute/collective/schedule_builder.h"

namespace distribute {
namespace collective {

// Maps (member index, element position, count) to where a member keeps
// those elements.
using RangeFn = std::function<BufferRange(int32_t, int64_t, int64_t)>;

// Reduce-scatter of positions [base, base + length), split into
// m = members.size() segments ShardOf(length, m, x) (offset by base); member
// i sends to member i+1 and ends with the full reduction of segment i in
// acc(i, segment). In round k member i passes on segment i-k-1.
//  * tmp unset: each partial sum is received straight into acc and then
//    acc += local (local and acc must not alias).
//  * tmp set: local and acc alias (the data is reduced in place); partial
//    sums are received into tmp and then acc += tmp.
// With one member, local is copied to acc (when tmp is unset).
// Segment x of [base, base + length), relative to base; unset:
// ShardOf(length, m, x). Segments must tile the range in member order.
using SegmentFn = std::function<Shard(int64_t)>;

struct RingReduceScatterPlan {
  std::vector<int32_t> members;
  int64_t base = 0;
  int64_t length = 0;
  SegmentFn segment;
  RangeFn local;
  RangeFn acc;
  RangeFn tmp;
};
void AddRingReduceScatter(const RingReduceScatterPlan& plan,
                          const ScheduleOptions& options,
                          ScheduleBuilder* builder);

// All-gather of the same segments: member i starts with segment i at
// own(i, segment) and ends with every other segment x at dst(i, x); in round
// k member i passes on segment i-k.
struct RingAllGatherPlan {
  std::vector<int32_t> members;
  int64_t base = 0;
  int64_t length = 0;
  SegmentFn segment;
  RangeFn own;
  RangeFn dst;
};
void AddRingAllGather(const RingAllGatherPlan& plan,
                      const ScheduleOptions& options, ScheduleBuilder* builder);

}  // namespace collective
}  // namespace distribute

#endif  // DISTRIBUTE_COLLECTIVE_RING_PHASES_H_
