#include "distribute/collective/cost_model.h"

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distribute/collective/builders.h"
#include "distribute/collective/checker.h"
#include "distribute/collective/schedule.h"
#include "gtest/gtest.h"

namespace distribute {
namespace collective {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;
constexpr int64_t kGiB = int64_t{1} << 30;

// Eight GPUs in one server whose intra-node fabric halves the bandwidth of
// non-neighbour traffic (PCIe switches, partial NVLink mesh).
GroupCosts OneServer() {
  GroupCosts t;
  t.n = 8;
  t.ranks_per_node = 8;
  t.bisection_fraction = 0.5;
  return t;
}

// Four such servers, one 100 Gb/s NIC per GPU.
GroupCosts FourServers() {
  GroupCosts t = OneServer();
  t.n = 32;
  return t;
}

Algorithm Pick(int64_t bytes, const GroupCosts& costs) {
  absl::StatusOr<AllReduceSelection> s = SelectAllReduce(bytes, costs);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? s->algorithm : Algorithm::kChain;
}

TEST(ParseAlgorithmTest, KnownNames) {
  absl::StatusOr<std::optional<Algorithm>> parsed = ParseAlgorithm("auto");
  ASSERT_TRUE(parsed.ok());
  EXPECT_FALSE(parsed->has_value());
  const std::pair<const char*, Algorithm> names[] = {
      {"ring", Algorithm::kRing},
      {"tree", Algorithm::kDoubleBinaryTree},
      {"RHD", Algorithm::kRecursiveHalvingDoubling},
      {"direct", Algorithm::kDirect},
      {"Hierarchical", Algorithm::kHierarchical}};
  for (const auto& [name, algorithm] : names) {
    parsed = ParseAlgorithm(name);
    ASSERT_TRUE(parsed.ok()) << name;
    ASSERT_TRUE(parsed->has_value());
    EXPECT_EQ(**parsed, algorithm);
  }
  EXPECT_EQ(ParseAlgorithm("chain").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseAlgorithm("").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TopologyTest, RejectsBadTopologies) {
  GroupCosts t;
  EXPECT_TRUE(ValidateGroupCosts(t).ok());
  t.n = 0;
  EXPECT_EQ(ValidateGroupCosts(t).code(), absl::StatusCode::kInvalidArgument);
  t = GroupCosts();
  t.ranks_per_node = -1;
  EXPECT_EQ(ValidateGroupCosts(t).code(), absl::StatusCode::kInvalidArgument);
  t = GroupCosts();
  t.inter_bw_Bps = 0;
  EXPECT_EQ(ValidateGroupCosts(t).code(), absl::StatusCode::kInvalidArgument);
  t = GroupCosts();
  t.intra_latency_us = -1;
  EXPECT_EQ(ValidateGroupCosts(t).code(), absl::StatusCode::kInvalidArgument);
  t = GroupCosts();
  t.max_chunk_bytes = -1;
  EXPECT_EQ(ValidateGroupCosts(t).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(ValidateGroupCosts(t).message().find("max_chunk_bytes"),
            std::string::npos);
  t = GroupCosts();
  t.bisection_fraction = 1.5;
  EXPECT_EQ(ValidateGroupCosts(t).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SelectAllReduce(100, t).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SelectAllReduce(-1, GroupCosts()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SelectAllReduceTest, SmallMessagesGoDirect) {
  EXPECT_EQ(Pick(1 * kKiB, OneServer()), Algorithm::kDirect);
  EXPECT_EQ(Pick(1 * kKiB, FourServers()), Algorithm::kDirect);
}

TEST(SelectAllReduceTest, ManyRanksNeedLogarithmicSteps) {
  // 256 ranks: direct sends too many messages and the ring takes too many
  // steps; halving-doubling needs 2 log2(n) steps, and the tree's pipeline
  // of depth 2 log2(n) still beats the ring.
  GroupCosts t = FourServers();
  t.n = 256;
  absl::StatusOr<AllReduceSelection> s = SelectAllReduce(64 * kKiB, t);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->algorithm, Algorithm::kRecursiveHalvingDoubling);
  EXPECT_LT(s->candidates[1].predicted_us, s->candidates[0].predicted_us);
  EXPECT_LT(s->candidates[1].predicted_us, s->candidates[3].predicted_us);
}

TEST(SelectAllReduceTest, LargeMessagesUseRingOrHierarchical) {
  EXPECT_EQ(Pick(kGiB, OneServer()), Algorithm::kRing);
  EXPECT_EQ(Pick(kGiB, FourServers()), Algorithm::kHierarchical);
}

TEST(SelectAllReduceTest, FullBisectionFavoursFewerSteps) {
  // On a full-bisection switch, halving-doubling moves as many bytes as the
  // ring in log2(n) steps instead of n-1.
  GroupCosts t = OneServer();
  t.bisection_fraction = 1.0;
  EXPECT_EQ(Pick(kGiB, t), Algorithm::kRecursiveHalvingDoubling);
}

TEST(SelectAllReduceTest, CandidatesAreInspectable) {
  absl::StatusOr<AllReduceSelection> s = SelectAllReduce(kGiB, FourServers());
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->candidates.size(), 5u);
  EXPECT_EQ(s->candidates[0].algorithm, Algorithm::kRing);
  EXPECT_EQ(s->candidates[4].algorithm, Algorithm::kHierarchical);
  for (const AlgorithmEstimate& c : s->candidates) {
    EXPECT_TRUE(c.feasible);
    EXPECT_GE(c.predicted_us, s->predicted_us);
  }
  EXPECT_FALSE(s->forced);
  const std::string text = s->DebugString();
  for (const char* name : {"ring", "tree", "rhd", "direct", "hierarchical"}) {
    EXPECT_NE(text.find(name), std::string::npos) << text;
  }
  EXPECT_EQ(text.rfind("auto picked hierarchical", 0), 0u) << text;
}

TEST(SelectAllReduceTest, ChunkingPaysOffOnlyWhenReductionCosts) {
  GroupCosts t = OneServer();
  absl::StatusOr<AlgorithmEstimate> ring =
      EstimateAllReduce(Algorithm::kRing, kGiB, t);
  ASSERT_TRUE(ring.ok());
  EXPECT_GT(ring->chunk_bytes, 0);  // pieces overlap transfer and reduction
  t.reduce_bw_Bps = 0;              // free reduction: pieces only add overhead
  ring = EstimateAllReduce(Algorithm::kRing, kGiB, t);
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(ring->chunk_bytes, 0);
  // The tree is a pipeline: it always wants pieces for large messages.
  absl::StatusOr<AlgorithmEstimate> tree =
      EstimateAllReduce(Algorithm::kDoubleBinaryTree, kGiB, t);
  ASSERT_TRUE(tree.ok());
  EXPECT_GT(tree->chunk_bytes, 0);
}

TEST(SelectAllReduceTest, MaxChunkBytesBoundsEveryPiece) {
  // Free reduction: uncapped, one piece per range is best.
  GroupCosts t = OneServer();
  t.reduce_bw_Bps = 0;
  absl::StatusOr<AlgorithmEstimate> ring =
      EstimateAllReduce(Algorithm::kRing, kGiB, t);
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(ring->chunk_bytes, 0);
  // Capped: pieces of the cap (the fewest allowed) replace "no chunking",
  // and the prediction is the model's at that chunk size.
  t.max_chunk_bytes = 2 * kMiB;
  ring = EstimateAllReduce(Algorithm::kRing, kGiB, t);
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(ring->chunk_bytes, 2 * kMiB);
  EXPECT_DOUBLE_EQ(ring->predicted_us,
                   *PredictAllReduceUs(Algorithm::kRing, kGiB, 2 * kMiB, t));
  // Every algorithm's best chunk respects the cap, at every size.
  t.reduce_bw_Bps = 4e9;
  for (int64_t bytes : {int64_t{1} << 10, kMiB, 2 * kMiB, 64 * kMiB, kGiB}) {
    absl::StatusOr<AllReduceSelection> s = SelectAllReduce(bytes, t);
    ASSERT_TRUE(s.ok());
    for (const AlgorithmEstimate& c : s->candidates) {
      if (!c.feasible) continue;
      EXPECT_LE(c.chunk_bytes, 2 * kMiB) << s->DebugString();
      if (bytes > 2 * kMiB) {
        EXPECT_GT(c.chunk_bytes, 0) << s->DebugString();
      }
    }
  }
  // A message no larger than the cap may still go in one piece.
  t.reduce_bw_Bps = 0;
  ring = EstimateAllReduce(Algorithm::kRing, 2 * kMiB, t);
  ASSERT_TRUE(ring.ok());
  EXPECT_EQ(ring->chunk_bytes, 0);
}

TEST(SelectAllReduceTest, ForcedAlgorithm) {
  absl::StatusOr<AllReduceSelection> s =
      SelectAllReduce(kGiB, OneServer(), Algorithm::kDirect);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->algorithm, Algorithm::kDirect);
  EXPECT_TRUE(s->forced);
  EXPECT_EQ(s->predicted_us, s->candidates[3].predicted_us);
  EXPECT_EQ(
      SelectAllReduce(kGiB, OneServer(), Algorithm::kChain).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(SelectAllReduceTest, HierarchicalNeedsWholeNodes) {
  GroupCosts t = OneServer();
  t.n = 12;  // one and a half servers
  absl::StatusOr<AllReduceSelection> s = SelectAllReduce(kGiB, t);
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->candidates[4].feasible);
  EXPECT_EQ(s->candidates[4].reason,
            "group size 12 is not a multiple of ranks_per_node 8");
  EXPECT_NE(s->algorithm, Algorithm::kHierarchical);
  EXPECT_EQ(SelectAllReduce(kGiB, t, Algorithm::kHierarchical).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      PredictAllReduceUs(Algorithm::kHierarchical, kGiB, 0, t).status().code(),
      absl::StatusCode::kFailedPrecondition);
}

// Reduce-scatter and all-gather: rings without a grid; over a torus of
// 2 x 4 x 4 x 4 ranks the grid's 10 steps beat the ring's 127 until the
// bandwidth terms dominate; a grid that does not hold the group is refused.
TEST(SelectShardedCollectiveTest, GridOnlyWhereItPays) {
  GroupCosts flat;
  flat.n = 128;
  for (CollectiveOp op :
       {CollectiveOp::kReduceScatter, CollectiveOp::kAllGather}) {
    absl::StatusOr<Algorithm> a = SelectShardedCollective(op, kMiB, flat);
    ASSERT_TRUE(a.ok()) << a.status();
    EXPECT_EQ(*a, Algorithm::kRing);
  }
  GroupCosts torus = flat;
  torus.grid = {2, 4, 4, 4};
  absl::StatusOr<Algorithm> a =
      SelectShardedCollective(CollectiveOp::kReduceScatter, kMiB, torus);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, Algorithm::kHierarchical);
  torus.grid = {2, 4, 4};
  EXPECT_EQ(SelectShardedCollective(CollectiveOp::kAllGather, kMiB, torus)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SelectShardedCollective(CollectiveOp::kAllReduce, kMiB, flat)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(PredictAllReduceTest, GrowsWithBytesAndVanishesForOneRank) {
  for (Algorithm algorithm : {Algorithm::kRing, Algorithm::kDoubleBinaryTree,
                              Algorithm::kRecursiveHalvingDoubling,
                              Algorithm::kDirect, Algorithm::kHierarchical}) {
    double previous = 0;
    for (int64_t bytes = kKiB; bytes <= kGiB; bytes *= 16) {
      absl::StatusOr<double> us =
          PredictAllReduceUs(algorithm, bytes, 0, FourServers());
      ASSERT_TRUE(us.ok());
      EXPECT_GT(*us, previous) << AlgorithmName(algorithm);
      previous = *us;
    }
    GroupCosts single;
    absl::StatusOr<double> alone =
        PredictAllReduceUs(algorithm, kGiB, 0, single);
    ASSERT_TRUE(alone.ok());
    EXPECT_EQ(*alone, 0);
  }
  EXPECT_EQ(PredictAllReduceUs(Algorithm::kPairwise, 10, 0, GroupCosts())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ScheduleOptionsForTest, SelectionBuildsACheckedSchedule) {
  for (int64_t bytes : {int64_t{4} * kKiB, int64_t{64} * 1024 * kKiB}) {
    GroupCosts t = FourServers();
    absl::StatusOr<AllReduceSelection> s = SelectAllReduce(bytes, t);
    ASSERT_TRUE(s.ok());
    const int64_t count = bytes / 4;
    ScheduleOptions options = ScheduleOptionsFor(*s, t, count, 4);
    EXPECT_EQ(options.group_size, 32);
    EXPECT_EQ(options.ranks_per_node, 8);
    EXPECT_EQ(options.chunk_elements, s->chunk_bytes / 4);
    absl::StatusOr<Schedule> schedule = BuildAllReduce(s->algorithm, options);
    ASSERT_TRUE(schedule.ok()) << schedule.status();
    EXPECT_TRUE(CheckSchedule(*schedule).ok()) << s->DebugString();
  }
}

}  // namespace
}  // namespace collective
}  // namespace distribute
