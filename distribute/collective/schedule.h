// A collective algorithm as data: for every rank of a group, an ordered
// program of point-to-point steps (send, receive, reduce, copy) over element
// ranges of three per-rank buffers (input, output, scratch). Builders
// (builders.h) produce schedules as pure functions of (operation, algorithm,
// group size, element count, chunking); the checker (checker.h) executes them
// symbolically; an executor runs them over a devices::Transport.
//
// Example:
//   ScheduleOptions options;
//   options.group_size = 4;
//   options.count = 1000;          // elements per rank
//   options.num_chunks = 2;        // pipeline chunks per range
//   absl::StatusOr<Schedule> s = BuildAllReduce(Algorithm::kRing, options);
//   for (const Step& step : s->ranks[rank].steps) { ... }
//
// Execution contract (what an executor must do, and what the checker proves):
//  * Elements, not bytes: offsets and counts are in elements of the
//    collective's dtype; multiply by the element size for byte ranges.
//  * Buffers per rank: kInput (read only; `input_count` elements), kOutput
//    (`output_count`), kScratch (`scratch_count`, allocated by the executor,
//    contents undefined at start). Input and output must not alias.
//  * A step may start once every step listed in `deps` (indices into the same
//    rank's program, all smaller than the step's own index) has completed.
//    Steps are otherwise unordered: an executor may issue them strictly in
//    program order (waiting for each step's deps before issuing it) or as a
//    DAG (any step whose deps are done, in any order, concurrently). Both are
//    deadlock-free and give identical results; the checker verifies the
//    in-order issue with rendezvous sends (a send completes only once the
//    peer has posted the matching receive), which implies the others.
//  * kSend: send `src` to `peer` with `tag`; complete when the buffer may be
//    reused. kRecv: receive the message from `peer` with `tag` into `dst`;
//    complete when the data is in place. Sizes always match. Tags are unique
//    per (sender, receiver) pair, so a transport that matches on (peer, tag)
//    needs no ordering guarantee.
//  * kReduce: dst[i] = dst[i] (op) src[i], in that operand order.
//    kCopy: dst[i] = src[i]. The reduction op is chosen at execution time.
//  * Two steps of a rank that touch overlapping ranges (at least one writing)
//    are always ordered through `deps`, so concurrent execution is race-free.
//  * Only barrier schedules contain empty (zero-element) steps; elsewhere a
//    step whose range would be empty is omitted.
#ifndef DISTRIBUTE_COLLECTIVE_SCHEDULE_H_
#define DISTRIBUTE_COLLECTIVE_SCHEDULE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distribute {
namespace collective {

// The collective operation a schedule implements, and what `count` means:
//  kAllReduce     input = output = count elements on every rank.
//  kReduceScatter input = count; output = Shard(count, n, rank).count.
//  kAllGather     input = Shard(count, n, rank).count; output = count.
//  kBroadcast     input = count on the root (0 elsewhere); output = count.
//  kReduce        input = count; output = count on the root (0 elsewhere).
//  kAllToAll      count elements per block: input = output = n * count;
//                 block j of rank i's input lands in block i of rank j.
//  kBarrier       no data (count must be 0); zero-element messages.
enum class CollectiveOp : uint8_t {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kReduce,
  kAllToAll,
  kBarrier,
};

// Algorithms. Which ones implement which operation: see builders.h.
enum class Algorithm : uint8_t {
  kRing,                      // "ring"
  kDoubleBinaryTree,          // "tree"
  kRecursiveHalvingDoubling,  // "rhd"
  kDirect,                    // "direct"
  kHierarchical,              // "hierarchical"
  kChain,                     // "chain"
  kBinaryTree,                // "binary_tree"
  kPairwise,                  // "pairwise"
  kDissemination,             // "dissemination"
};

enum class BufferKind : uint8_t { kInput, kOutput, kScratch };

enum class StepKind : uint8_t { kSend, kRecv, kReduce, kCopy };

// A range of `count` elements starting at element `offset` of a buffer.
struct BufferRange {
  BufferKind buffer = BufferKind::kInput;
  int64_t offset = 0;
  int64_t count = 0;

  int64_t end() const { return offset + count; }
  bool operator==(const BufferRange& other) const {
    return buffer == other.buffer && offset == other.offset &&
           count == other.count;
  }
};

// One step of a rank's program. Fields that a kind does not use keep their
// defaults (peer -1, tag -1, empty range).
//  kSend:   reads `src`; peer, tag.
//  kRecv:   writes `dst`; peer, tag.
//  kReduce: dst = dst (op) src; src and dst have the same count.
//  kCopy:   dst = src; same count.
// A step's dependencies: almost always a few, kept inside the step (a
// schedule of 16,384 ranks has millions of steps).
using StepDeps = absl::InlinedVector<int32_t, 4>;

struct Step {
  StepKind kind = StepKind::kCopy;
  int32_t peer = -1;
  int64_t tag = -1;
  BufferRange src;
  BufferRange dst;
  StepDeps deps;  // sorted, unique, each < this step's index

  bool operator==(const Step& other) const {
    return kind == other.kind && peer == other.peer && tag == other.tag &&
           src == other.src && dst == other.dst && deps == other.deps;
  }
};

// One rank's buffers (sizes in elements) and program.
struct RankProgram {
  int64_t input_count = 0;
  int64_t output_count = 0;
  int64_t scratch_count = 0;
  std::vector<Step> steps;
};

// Inputs of every builder. `count` is in elements (see CollectiveOp).
// Chunking: every range an algorithm moves is split into pieces, each sent
// as its own message (so transfers and reductions pipeline): into
// `num_chunks` pieces, or, when `chunk_elements` > 0, into pieces of at most
// `chunk_elements` elements (which overrides num_chunks).
struct ScheduleOptions {
  int32_t group_size = 1;
  int64_t count = 0;
  int64_t num_chunks = 1;
  int64_t chunk_elements = 0;
  int32_t root = 0;  // kBroadcast and kReduce
  int32_t ranks_per_node =
      0;  // kHierarchical: ranks [k*L, (k+1)*L) share node k
  // Channels (as NCCL's): the collective runs as num_channels independent
  // schedules of the same algorithm over contiguous slices of the elements
  // (ShardOf(count, num_channels, c)), their steps interleaved so that all
  // progress at once. Channel c orders each node's ranks rotated by c (with
  // ranks_per_node L; 0 means one node), so that a ring of channel c leaves
  // node k from its local rank c-1 and enters node k+1 at local rank c:
  // each channel crosses between nodes through other ranks' NICs. All-reduce,
  // broadcast and reduce only; 1 for the others. Slices that would be empty
  // (count < num_channels) are left out.
  int32_t num_channels = 1;
  // kHierarchical: the group as a grid of these sizes, the first dimension
  // fastest (rank = c0 + d0 * (c1 + d1 * (c2 + ...))), their product the
  // group size; e.g. {8, 32, 64}: 8 GPUs a node, 32 nodes a pod, 64 pods.
  // Empty: {ranks_per_node, group_size / ranks_per_node}.
  std::vector<int32_t> dims;
};

struct Schedule {
  CollectiveOp op = CollectiveOp::kAllReduce;
  Algorithm algorithm = Algorithm::kRing;
  ScheduleOptions options;
  std::vector<RankProgram> ranks;  // size options.group_size

  int32_t group_size() const { return options.group_size; }
  int64_t count() const { return options.count; }
  int64_t NumSteps() const;
  // Number of kSend steps and the elements they carry, over all ranks.
  int64_t NumMessages() const;
  int64_t ElementsSent() const;
  // A readable listing: a header line, then every rank's buffers and steps,
  // e.g. "  #3 SEND to 2 tag 1 output[0,+25) deps {1,2}".
  std::string DebugString() const;
};

// The balanced split of `count` elements into `parts` contiguous shards used
// by every builder: shard i has count/parts elements, plus one for the first
// count%parts shards. Requires parts >= 1 and 0 <= index < parts.
struct Shard {
  int64_t offset = 0;
  int64_t count = 0;
};
Shard ShardOf(int64_t count, int64_t parts, int64_t index);
// The shard that holds element `element` (0 <= element < count).
int64_t ShardOwner(int64_t count, int64_t parts, int64_t element);

absl::string_view OpName(CollectiveOp op);
absl::string_view AlgorithmName(Algorithm algorithm);
// The inverse of AlgorithmName ("ring", "tree", "rhd", "direct",
// "hierarchical", "chain", "binary_tree", "pairwise", "dissemination");
// InvalidArgument listing the known names otherwise.
absl::StatusOr<Algorithm> AlgorithmFromName(absl::string_view name);
absl::string_view BufferName(BufferKind buffer);
absl::string_view StepKindName(StepKind kind);
// "output[10,+5)".
std::string RangeDebugString(const BufferRange& range);
// "SEND to 2 tag 1 output[0,+25) deps {1,2}".
std::string StepDebugString(const Step& step);

}  // namespace collective
}  // namespace distribute

#endif  // DISTRIBUTE_COLLECTIVE_SCHEDULE_H_
