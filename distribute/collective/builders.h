// Builders of collective schedules (schedule.h): pure functions of the
// operation, the algorithm and ScheduleOptions. The same inputs always give
// the same schedule, and every element's reduction order depends only on
// them, so all ranks of an all-reduce end bit-identical.
//
// Example:
//   ScheduleOptions options;
//   options.group_size = 8;
//   options.count = 1 << 20;
//   options.chunk_elements = 1 << 16;
//   absl::StatusOr<Schedule> s =
//       BuildSchedule(CollectiveOp::kAllReduce, Algorithm::kRing, options);
//
// Operations and algorithms (scratch sizes are per rank, in elements):
//  all-reduce
//   kRing              reduce-scatter then all-gather around 0 -> 1 -> ... ->
//                      n-1 -> 0; segment x = ShardOf(count, n, x) ends
//                      reduced on rank x. Scratch 0.
//   kDoubleBinaryTree  two complementary in-order binary trees
//                      (rank_tree.h), each carrying one half of the data:
//                      reduce up, broadcast down, pipelined. Scratch count
//                      on ranks with two children in either tree.
//   kRecursiveHalvingDoubling  Rabenseifner: reduce-scatter by recursive
//                      halving, all-gather by recursive doubling among the
//                      largest power of two p <= n; with n = p + e, ranks
//                      2i (i < e) first send their input to 2i+1 and receive
//                      the result at the end. Scratch count.
//   kDirect            one shot: every rank sends its input to every other
//                      rank and reduces the n inputs in rank order
//                      (((x0 + x1) + x2) + ...). Scratch (n-1)*count.
//   kHierarchical      over the grid of ScheduleOptions::dims (default
//                      {L, n / L}, L = ranks_per_node; n must be a multiple
//                      of L): ring reduce-scatters along each dimension in
//                      turn, first dimension first, each over the range the
//                      previous ones left, then ring all-gathers back, last
//                      dimension first. Scratch count.
//  reduce-scatter kRing; kHierarchical: ring reduce-scatters along each
//   dimension of the grid, the last first, so that each level leaves a rank
//   the sum of the shards of the ranks that share its coordinates from that
//   level up, and the last its own ShardOf(count, n, rank) (no final
//   permutation; the first level moves the most data). Scratch 2*count
//   (count with one level).
//  all-gather kRing; kHierarchical: ring all-gathers along each dimension,
//   the first first, the reverse of reduce-scatter. Scratch 0.
//  broadcast kChain (pipelined root -> root+1 -> ...) and kBinaryTree
//   (HeapBinaryTree at the root); reduce kChain and kBinaryTree (the same
//   shapes, data flowing to the root).
//  all-to-all kPairwise: in round k = 1..n-1 rank r sends block r+k to rank
//   r+k and receives block r-k from rank r-k.
//  barrier kDissemination: in round k rank r sends a zero-element message to
//   r + 2^k and receives one from r - 2^k, each send after the previous
//   round's send and receive.
// Unsupported (operation, algorithm) pairs and bad options are
// InvalidArgument.
#ifndef DISTRIBUTE_COLLECTIVE_BUILDERS_H_
#define DISTRIBUTE_COLLECTIVE_BUILDERS_H_

#include "absl/status/statusor.h"
#include "distribute/collective/schedule.h"

namespace distribute {
namespace collective {

// Dispatches to the functions below.
absl::StatusOr<Schedule> BuildSchedule(CollectiveOp op, Algorithm algorithm,
                                       const ScheduleOptions& options);

absl::StatusOr<Schedule> BuildAllReduce(Algorithm algorithm,
                                        const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildReduceScatter(Algorithm algorithm,
                                            const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildAllGather(Algorithm algorithm,
                                        const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildBroadcast(Algorithm algorithm,
                                        const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildReduce(Algorithm algorithm,
                                     const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildAllToAll(Algorithm algorithm,
                                       const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildBarrier(Algorithm algorithm,
                                      const ScheduleOptions& options);

// The individual algorithms (the same validation as above).
absl::StatusOr<Schedule> BuildRingAllReduce(const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildDoubleBinaryTreeAllReduce(
    const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildRecursiveHalvingDoublingAllReduce(
    const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildDirectAllReduce(const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildHierarchicalAllReduce(
    const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildRingReduceScatter(const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildRingAllGather(const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildHierarchicalReduceScatter(
    const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildHierarchicalAllGather(
    const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildChainBroadcast(const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildTreeBroadcast(const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildChainReduce(const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildTreeReduce(const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildPairwiseAllToAll(const ScheduleOptions& options);
absl::StatusOr<Schedule> BuildDisseminationBarrier(
    const ScheduleOptions& options);

}  // namespace collective
}  // namespace distribute

#endif  // DISTRIBUTE_COLLECTIVE_BUILDERS_H_
