// Internal helper of the builders: appends steps to per-rank programs,
// allocates tags per (sender, receiver) pair, omits empty steps and derives
// every step's dependencies from the ranges it touches (read-after-write,
// write-after-read, write-after-write on the same rank), so that each builder
// only states the data movement and the schedule is race-free by
// construction.
//
// Example:
//   ScheduleBuilder b(CollectiveOp::kAllReduce, Algorithm::kRing, options);
//   b.SetBuffers(rank, count, count, 0);          // for every rank
//   b.Copy(0, InputRange(0, n), OutputRange(0, n));
//   b.Send(0, OutputRange(0, n), 1, ScratchRange(0, n));  // SEND + RECV
//   Schedule s = std::move(b).Finish();
#ifndef DISTRIBUTE_COLLECTIVE_SCHEDULE_BUILDER_H_
#define DISTRIBUTE_COLLECTIVE_SCHEDULE_BUILDER_H_

#include <cstdint>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "distribute/collective/schedule.h"

namespace distribute {
namespace collective {

// Validates the options shared by every builder (group size, count,
// chunking, root); InvalidArgument naming the bad field otherwise.
absl::Status ValidateScheduleOptions(const ScheduleOptions& options);

// Number of pieces a range of `count` elements is split into under the
// options' chunking (at least 1, at most max(count, 1)).
int64_t NumPieces(const ScheduleOptions& options, int64_t count);

// Piece `index` of `range` split into `pieces` balanced pieces.
BufferRange Piece(const BufferRange& range, int64_t pieces, int64_t index);

// A range of the same buffer shifted to start at `offset` relative to range.
inline BufferRange Sub(const BufferRange& range, int64_t offset,
                       int64_t count) {
  return BufferRange{range.buffer, range.offset + offset, count};
}

inline BufferRange InputRange(int64_t offset, int64_t count) {
  return BufferRange{BufferKind::kInput, offset, count};
}
inline BufferRange OutputRange(int64_t offset, int64_t count) {
  return BufferRange{BufferKind::kOutput, offset, count};
}
inline BufferRange ScratchRange(int64_t offset, int64_t count) {
  return BufferRange{BufferKind::kScratch, offset, count};
}

class ScheduleBuilder {
 public:
  struct Transfer {
    int32_t send = -1;  // index in the sender's program, -1 if omitted
    int32_t recv = -1;  // index in the receiver's program, -1 if omitted
  };

  ScheduleBuilder(CollectiveOp op, Algorithm algorithm,
                  const ScheduleOptions& options);
  ScheduleBuilder(const ScheduleBuilder&) = delete;
  ScheduleBuilder& operator=(const ScheduleBuilder&) = delete;

  // Declares a rank's buffer sizes; call before adding its steps.
  void SetBuffers(int32_t rank, int64_t input, int64_t output, int64_t scratch);

  // Steps; each returns its index in the rank's program or -1 when the range
  // is empty and the step was omitted.
  int32_t Copy(int32_t rank, const BufferRange& src, const BufferRange& dst);
  int32_t Reduce(int32_t rank, const BufferRange& src, const BufferRange& dst);
  // A message from `from` (reading src) to `to` (writing dst). The send also
  // waits for `extra_send_deps`; `keep_empty` keeps zero-element messages
  // (barriers).
  Transfer Send(int32_t from, const BufferRange& src, int32_t to,
                const BufferRange& dst,
                const std::vector<int32_t>& extra_send_deps = {},
                bool keep_empty = false);
  // One message of a round.
  struct Message {
    int32_t from;
    BufferRange src;
    int32_t to;
    BufferRange dst;
  };
  // The messages of one round sent at once (a ring's step): every send, in
  // order, then every receive, so that each rank's program has its send
  // before its receive whatever its place in the list (sent one by one, a
  // ring's first member would send first and every other receive first).
  // Tags as if each were sent with Send in order; empty ones are omitted.
  void SendRound(const std::vector<Message>& round);

  Schedule Finish() &&;

 private:
  // Per (rank, buffer): which step last wrote each element range and which
  // steps read it since.
  struct Region {
    int64_t end = 0;
    int32_t writer = -1;
    std::vector<int32_t> readers;
  };
  // A B-tree: regions are split and merged millions of times on large
  // groups, and its nodes stay in cache where a red-black tree's do not.
  using RegionMap = absl::btree_map<int64_t, Region>;

  RegionMap& Regions(int32_t rank, BufferKind buffer);
  static void SplitAt(RegionMap& regions, int64_t position);
  void NoteRead(int32_t rank, const BufferRange& range, int32_t step,
                StepDeps* deps);
  void NoteWrite(int32_t rank, const BufferRange& range, int32_t step,
                 StepDeps* deps);
  int32_t Append(int32_t rank, Step step);
  int64_t NextTag(int32_t from, int32_t to);
  int32_t AppendSend(int32_t from, const BufferRange& src, int32_t to,
                     int64_t tag, const std::vector<int32_t>& extra_deps);
  int32_t AppendRecv(int32_t to, const BufferRange& dst, int32_t from,
                     int64_t tag);

  Schedule schedule_;
  std::vector<RegionMap> regions_;                  // rank * 3 + buffer
  absl::flat_hash_map<int64_t, int64_t> next_tag_;  // from * n + to
  std::vector<int64_t> round_tags_;                 // SendRound's scratch
};

}  // namespace collective
}  // namespace distribute

#endif  // DISTRIBUTE_COLLECTIVE_SCHEDULE_BUILDER_H_
