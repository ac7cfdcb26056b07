// An alpha-beta cost model of the all-reduce algorithms of builders.h, and a
// tuner on top of it (in the manner of NCCL's): for a message size and a
// group's link costs (GroupCosts) it predicts every algorithm's time at its
// best chunk size and picks the fastest, or the one the user forces by name.
//
// Example:
//   GroupCosts costs;
//   costs.n = 16;
//   costs.ranks_per_node = 8;
//   absl::StatusOr<std::optional<Algorithm>> forced = ParseAlgorithm("auto");
//   absl::StatusOr<AllReduceSelection> choice =
//       SelectAllReduce(64 << 20, costs, *forced);
//   // choice->algorithm, choice->chunk_bytes, choice->predicted_us, and
//   // choice->candidates (every algorithm's estimate) for inspection.
//   ScheduleOptions options = ScheduleOptionsFor(*choice, costs,
//                                                /*count=*/16 << 20,
//                                                /*element_size=*/4);
//
// The model (times in microseconds; S bytes, n ranks, L ranks per node,
// M = ceil(n / L) nodes; alpha a link's latency, beta = 1e6 / bandwidth,
// gamma = 1e6 / reduce_bw_Bps, o = step_overhead_us; C the number of pieces
// a range is split into by the chunk size; "flat" links are the intra-node
// ones on one node and the slower of both kinds otherwise; a non-neighbour
// intra-node link has bandwidth intra_bw_Bps * bisection_fraction):
//  ring    2(n-1)(alpha + C o) + 2(n-1)/n S beta + (n-1)/n S gamma / C
//          (neighbour links; reduction overlapped with the next piece).
//  tree    (2h + C - 1)(alpha + 2o + 2 (S/C) beta + (S/C) gamma), h the depth
//          of the trees: a pipeline of 2h stages in which an interior rank
//          receives 2S/C bytes per piece (two halves, two trees).
//  rhd     per halving/doubling step of distance d moving m bytes:
//          alpha + C o + m beta (+ m gamma / C when halving), on inter-node
//          links when d >= L, else non-neighbour intra-node links; plus the
//          fold and unfold of S bytes when n is not a power of two.
//  direct  alpha + (n-1) C o + S ((L-1) beta_intra' + (n-L) beta_inter)
//          + (n-1) S gamma / C: every rank sends S to every other rank.
//  hierarchical  an intra-node ring reduce-scatter and all-gather over L
//          ranks of S, plus an inter-node ring all-reduce over M ranks of
//          S / L; needs n to be a multiple of L. Over a grid (d_0, d_1,
//          ...): a ring all-reduce along each dimension k of
//          S / (d_0 ... d_{k-1}) on the flat links.
// Reduce-scatter and all-gather (no chunking, no reduction cost): ring
// (n-1)(alpha + o) + (n-1)/n S beta; hierarchical over a grid, the last
// dimension first, sum over k of (d_k-1)(alpha + o) + (d_k-1)/d_k S_k beta
// with S_k = S / (d_{k+1} ... d_last).
// Chunk sizes tried: none (C = 1) and powers of two from 16 KiB to 16 MiB;
// with max_chunk_bytes set, none above it (and max_chunk_bytes itself in
// place of "none" when the message is larger).
#ifndef DISTRIBUTE_COLLECTIVE_COST_MODEL_H_
#define DISTRIBUTE_COLLECTIVE_COST_MODEL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "distribute/collective/schedule.h"

namespace distribute {
namespace collective {

// A group of n ranks on nodes of ranks_per_node consecutive ranks each.
// Bandwidths are per rank and per direction.
struct GroupCosts {
  int32_t n = 1;
  int32_t ranks_per_node = 0;    // 0: all ranks on one node
  double intra_bw_Bps = 100e9;   // e.g. NVLink
  double inter_bw_Bps = 12.5e9;  // e.g. one 100 Gb/s NIC per rank
  double intra_latency_us = 2.0;
  double inter_latency_us = 5.0;
  double step_overhead_us = 1.0;  // per message: launch, sync, protocol
  double reduce_bw_Bps = 200e9;   // local reduction throughput; 0: free
  // Share of intra_bw_Bps left when every rank talks to a non-neighbour at
  // once (1: full-bisection switch; about 0.5 for PCIe trees or partial
  // NVLink meshes). Ring and chain use neighbour links only.
  double bisection_fraction = 1.0;
  // The largest piece worth sending (0: no limit). Transports that copy
  // through the CPU (sockets) lose the cache on larger messages, which the
  // linear terms above cannot express; the all-reduce tuner then never
  // chunks above this size. (The other collectives are not tuned: they
  // send whole shards unless ScheduleCommunicatorOptions::chunk_bytes is
  // set, and the cap does not apply to them.)
  int64_t max_chunk_bytes = 0;
  // The ranks as a mesh or torus of these dimensions, the first fastest
  // (rank = c0 + d0 * (c1 + d1 * (c2 + ...))), whose neighbours along every
  // dimension are linked directly, so that rings along different
  // dimensions use different links (TPU chips on their ICI). Empty: none.
  // With a grid, the hierarchical algorithms run over it (rings along each
  // dimension), and AUTO weighs them for reduce-scatter and all-gather too.
  std::vector<int32_t> grid;
};

// InvalidArgument naming the bad field (n < 1, ranks_per_node < 0,
// non-positive bandwidths, negative latencies, bisection_fraction outside
// (0, 1], max_chunk_bytes < 0).
absl::Status ValidateGroupCosts(const GroupCosts& costs);

struct AlgorithmEstimate {
  Algorithm algorithm = Algorithm::kRing;
  bool feasible = true;
  std::string reason;       // why not feasible
  int64_t chunk_bytes = 0;  // best chunk size; 0: one piece per range
  double predicted_us = 0;  // at chunk_bytes
};

struct AllReduceSelection {
  Algorithm algorithm = Algorithm::kRing;
  int64_t chunk_bytes = 0;
  double predicted_us = 0;
  bool forced = false;
  // Every all-reduce algorithm, in the order ring, tree, rhd, direct,
  // hierarchical (ties go to the earliest).
  std::vector<AlgorithmEstimate> candidates;

  // "auto picked ring (chunk 1048576 B): 812.4 us; ring 812.4 us, tree ..."
  std::string DebugString() const;
};

// "auto" -> std::nullopt (let SelectAllReduce decide); "ring", "tree",
// "rhd", "direct", "hierarchical" (any case) -> that algorithm;
// InvalidArgument listing the choices otherwise.
absl::StatusOr<std::optional<Algorithm>> ParseAlgorithm(absl::string_view name);

// Predicted time of one all-reduce of `bytes` with the given chunk size
// (0: one piece per range). InvalidArgument for bad costs, negative
// sizes, a non-all-reduce algorithm; FailedPrecondition when the algorithm
// cannot run on the group (hierarchical with n not a multiple of L).
absl::StatusOr<double> PredictAllReduceUs(Algorithm algorithm, int64_t bytes,
                                          int64_t chunk_bytes,
                                          const GroupCosts& costs);

// The algorithm's estimate at its best chunk size (infeasible ones have
// feasible = false and a reason).
absl::StatusOr<AlgorithmEstimate> EstimateAllReduce(Algorithm algorithm,
                                                    int64_t bytes,
                                                    const GroupCosts& costs);

// Estimates every algorithm and picks the fastest, or `forced`
// (FailedPrecondition if it cannot run on the group).
absl::StatusOr<AllReduceSelection> SelectAllReduce(
    int64_t bytes, const GroupCosts& costs,
    std::optional<Algorithm> forced = std::nullopt);

// Reduce-scatter or all-gather of `bytes` (the whole buffer: the input of a
// reduce-scatter, the output of an all-gather): kHierarchical over
// costs.grid where the model predicts it faster than the ring, else
// kRing (always without a grid). InvalidArgument for bad costs,
// negative bytes or another operation.
absl::StatusOr<Algorithm> SelectShardedCollective(CollectiveOp op,
                                                  int64_t bytes,
                                                  const GroupCosts& costs);

// Builder options that realise a selection for `count` elements of
// `element_size` bytes: group size, ranks per node and chunk_elements
// (chunk_bytes / element_size, at least 1; 0 when chunk_bytes is 0).
ScheduleOptions ScheduleOptionsFor(const AllReduceSelection& selection,
                                   const GroupCosts& costs, int64_t count,
                                   int64_t element_size);

}  // namespace collective
}  // namespace distribute

#endif  // DISTRIBUTE_COLLECTIVE_COST_MODEL_H_
