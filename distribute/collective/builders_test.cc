// Every builder, over group sizes 1..9 and 16, element counts from 0 to a
// prime above 4096 and several chunkings, produces a schedule that the
// symbolic checker accepts.
#include "distribute/collective/builders.h"

#include <cstdint>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "distribute/collective/checker.h"
#include "distribute/collective/schedule.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace collective {
namespace {

enum class RootChoice { kFirst, kMiddle, kLast };
enum class NodeChoice { kNone, kPairs, kQuads };

struct Case {
  const char* name;
  CollectiveOp op;
  Algorithm algorithm;
  RootChoice root = RootChoice::kFirst;
  NodeChoice nodes = NodeChoice::kNone;
};

const Case kCases[] = {
    {"AllReduceRing", CollectiveOp::kAllReduce, Algorithm::kRing},
    {"AllReduceTree", CollectiveOp::kAllReduce, Algorithm::kDoubleBinaryTree},
    {"AllReduceRhd", CollectiveOp::kAllReduce,
     Algorithm::kRecursiveHalvingDoubling},
    {"AllReduceDirect", CollectiveOp::kAllReduce, Algorithm::kDirect},
    // Two ranks per node when n is even, else one (every rank its own node).
    {"AllReduceHierarchicalPairs", CollectiveOp::kAllReduce,
     Algorithm::kHierarchical, RootChoice::kFirst, NodeChoice::kPairs},
    // Four ranks per node when n is a multiple of 4, else a single node.
    {"AllReduceHierarchicalQuads", CollectiveOp::kAllReduce,
     Algorithm::kHierarchical, RootChoice::kFirst, NodeChoice::kQuads},
    {"ReduceScatterRing", CollectiveOp::kReduceScatter, Algorithm::kRing},
    {"ReduceScatterHierarchicalPairs", CollectiveOp::kReduceScatter,
     Algorithm::kHierarchical, RootChoice::kFirst, NodeChoice::kPairs},
    {"AllGatherRing", CollectiveOp::kAllGather, Algorithm::kRing},
    {"AllGatherHierarchicalQuads", CollectiveOp::kAllGather,
     Algorithm::kHierarchical, RootChoice::kFirst, NodeChoice::kQuads},
    {"BroadcastChainFirst", CollectiveOp::kBroadcast, Algorithm::kChain},
    {"BroadcastChainLast", CollectiveOp::kBroadcast, Algorithm::kChain,
     RootChoice::kLast},
    {"BroadcastTreeMiddle", CollectiveOp::kBroadcast, Algorithm::kBinaryTree,
     RootChoice::kMiddle},
    {"ReduceChainLast", CollectiveOp::kReduce, Algorithm::kChain,
     RootChoice::kLast},
    {"ReduceTreeFirst", CollectiveOp::kReduce, Algorithm::kBinaryTree},
    {"ReduceTreeMiddle", CollectiveOp::kReduce, Algorithm::kBinaryTree,
     RootChoice::kMiddle},
    {"AllToAllPairwise", CollectiveOp::kAllToAll, Algorithm::kPairwise},
    {"BarrierDissemination", CollectiveOp::kBarrier, Algorithm::kDissemination},
};

struct Chunking {
  const char* name;
  int64_t num_chunks;
  int64_t chunk_elements;
};

const Chunking kChunkings[] = {
    {"Whole", 1, 0},
    {"ThreeChunks", 3, 0},
    {"Chunk500", 1, 500},
};

ScheduleOptions OptionsFor(const Case& c, int32_t n, int64_t count,
                           const Chunking& chunking) {
  ScheduleOptions options;
  options.group_size = n;
  options.count = c.op == CollectiveOp::kBarrier ? 0 : count;
  options.num_chunks = chunking.num_chunks;
  options.chunk_elements = chunking.chunk_elements;
  switch (c.root) {
    case RootChoice::kFirst:
      options.root = 0;
      break;
    case RootChoice::kMiddle:
      options.root = n / 2;
      break;
    case RootChoice::kLast:
      options.root = n - 1;
      break;
  }
  switch (c.nodes) {
    case NodeChoice::kNone:
      break;
    case NodeChoice::kPairs:
      options.ranks_per_node = n % 2 == 0 ? 2 : 1;
      break;
    case NodeChoice::kQuads:
      options.ranks_per_node = n % 4 == 0 ? 4 : n;
      break;
  }
  return options;
}

bool SameSchedule(const Schedule& a, const Schedule& b) {
  if (a.ranks.size() != b.ranks.size()) return false;
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    if (a.ranks[r].input_count != b.ranks[r].input_count ||
        a.ranks[r].output_count != b.ranks[r].output_count ||
        a.ranks[r].scratch_count != b.ranks[r].scratch_count ||
        !(a.ranks[r].steps == b.ranks[r].steps)) {
      return false;
    }
  }
  return true;
}

using Param = std::tuple<Case, int32_t, int64_t, Chunking>;

class BuildersTest : public ::testing::TestWithParam<Param> {};

TEST_P(BuildersTest, CheckerAcceptsSchedule) {
  const auto& [c, n, count, chunking] = GetParam();
  const ScheduleOptions options = OptionsFor(c, n, count, chunking);
  absl::StatusOr<Schedule> schedule = BuildSchedule(c.op, c.algorithm, options);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_EQ(schedule->op, c.op);
  EXPECT_EQ(schedule->algorithm, c.algorithm);
  ASSERT_EQ(static_cast<int32_t>(schedule->ranks.size()), n);
  const absl::Status verdict = CheckSchedule(*schedule);
  EXPECT_TRUE(verdict.ok())
      << verdict << "\n"
      << (schedule->NumSteps() < 200 ? schedule->DebugString()
                                     : std::string("(schedule too long)"));
  // A single rank never communicates; more ranks always do, except when
  // there is no data (a barrier always communicates).
  const bool moves_data = c.op == CollectiveOp::kBarrier || options.count > 0;
  EXPECT_EQ(schedule->NumMessages() > 0, n > 1 && moves_data);
}

// Builders are pure functions of their inputs (so is the reduction order).
TEST(BuildersDeterminismTest, SameInputsSameSchedule) {
  for (const Case& c : kCases) {
    for (int32_t n : {7, 16}) {
      const ScheduleOptions options = OptionsFor(c, n, 4099, kChunkings[1]);
      absl::StatusOr<Schedule> first =
          BuildSchedule(c.op, c.algorithm, options);
      absl::StatusOr<Schedule> second =
          BuildSchedule(c.op, c.algorithm, options);
      ASSERT_TRUE(first.ok()) << first.status();
      ASSERT_TRUE(second.ok()) << second.status();
      EXPECT_TRUE(SameSchedule(*first, *second)) << c.name << " n=" << n;
    }
  }
}

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  const auto& [c, n, count, chunking] = info.param;
  return std::string(c.name) + "_n" + std::to_string(n) + "_count" +
         std::to_string(count) + "_" + chunking.name;
}

INSTANTIATE_TEST_SUITE_P(
    AllAlgorithms, BuildersTest,
    ::testing::Combine(::testing::ValuesIn(kCases),
                       ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8, 9, 16),
                       ::testing::Values(0, 1, 2, 7, 13, 100, 1000, 4099),
                       ::testing::ValuesIn(kChunkings)),
    ParamName);

// Exact traffic of the bandwidth-optimal and the direct algorithms.
TEST(BuildersTrafficTest, ElementsSentMatchTheAlgorithm) {
  for (int32_t n : {2, 3, 5, 8}) {
    for (int64_t count : {1, 7, 100}) {
      ScheduleOptions options;
      options.group_size = n;
      options.count = count;
      options.num_chunks = 2;
      absl::StatusOr<Schedule> ring = BuildRingAllReduce(options);
      ASSERT_TRUE(ring.ok());
      // Each segment travels n-1 hops reducing and n-1 hops gathering.
      EXPECT_EQ(ring->ElementsSent(), 2 * (n - 1) * count);
      absl::StatusOr<Schedule> tree = BuildDoubleBinaryTreeAllReduce(options);
      ASSERT_TRUE(tree.ok());
      // Every element goes up and down the n-1 edges of its tree.
      EXPECT_EQ(tree->ElementsSent(), 2 * (n - 1) * count);
      absl::StatusOr<Schedule> direct = BuildDirectAllReduce(options);
      ASSERT_TRUE(direct.ok());
      EXPECT_EQ(direct->ElementsSent(), int64_t{n} * (n - 1) * count);
      absl::StatusOr<Schedule> all_to_all = BuildPairwiseAllToAll(options);
      ASSERT_TRUE(all_to_all.ok());
      EXPECT_EQ(all_to_all->ElementsSent(), int64_t{n} * (n - 1) * count);
    }
  }
}

TEST(BuildersTrafficTest, ChunkElementsBoundsEveryMessage) {
  ScheduleOptions options;
  options.group_size = 5;
  options.count = 1000;
  options.chunk_elements = 30;
  for (Algorithm algorithm :
       {Algorithm::kRing, Algorithm::kDoubleBinaryTree,
        Algorithm::kRecursiveHalvingDoubling, Algorithm::kDirect}) {
    absl::StatusOr<Schedule> schedule = BuildAllReduce(algorithm, options);
    ASSERT_TRUE(schedule.ok());
    for (const RankProgram& program : schedule->ranks) {
      for (const Step& step : program.steps) {
        if (step.kind == StepKind::kSend) {
          EXPECT_LE(step.src.count, 30) << AlgorithmName(algorithm);
          EXPECT_GT(step.src.count, 0) << AlgorithmName(algorithm);
        }
      }
    }
  }
}

TEST(BuildersTrafficTest, BarrierTakesLogRounds) {
  ScheduleOptions options;
  options.group_size = 9;
  absl::StatusOr<Schedule> barrier = BuildDisseminationBarrier(options);
  ASSERT_TRUE(barrier.ok());
  // Rounds with distance 1, 2, 4, 8: one send and one receive each.
  for (const RankProgram& program : barrier->ranks) {
    EXPECT_EQ(program.steps.size(), 8u);
  }
  EXPECT_EQ(barrier->ElementsSent(), 0);
}

// Channels: every algorithm of all-reduce, broadcast and reduce, split over
// 2, 3 and 8 channels, still passes the checker (right results, no races,
// no deadlock under in-order issue), for counts below and above the
// channel count.
TEST(ChannelsTest, EverySplitScheduleIsCorrect) {
  const struct {
    CollectiveOp op;
    Algorithm algorithm;
  } kinds[] = {
      {CollectiveOp::kAllReduce, Algorithm::kRing},
      {CollectiveOp::kAllReduce, Algorithm::kDoubleBinaryTree},
      {CollectiveOp::kAllReduce, Algorithm::kRecursiveHalvingDoubling},
      {CollectiveOp::kAllReduce, Algorithm::kDirect},
      {CollectiveOp::kAllReduce, Algorithm::kHierarchical},
      {CollectiveOp::kBroadcast, Algorithm::kChain},
      {CollectiveOp::kBroadcast, Algorithm::kBinaryTree},
      {CollectiveOp::kReduce, Algorithm::kChain},
      {CollectiveOp::kReduce, Algorithm::kBinaryTree},
  };
  for (const auto& kind : kinds) {
    for (int32_t n : {2, 3, 4, 6, 8}) {
      for (int32_t per_node : {0, 2}) {
        if (kind.algorithm == Algorithm::kHierarchical && per_node == 0) {
          continue;
        }
        if (per_node > 0 && n % per_node != 0) continue;
        for (int32_t channels : {2, 3, 8}) {
          for (int64_t count : {1, 5, 97}) {
            ScheduleOptions options;
            options.group_size = n;
            options.count = count;
            options.num_chunks = 2;
            options.ranks_per_node = per_node;
            options.num_channels = channels;
            options.root = n - 1;
            absl::StatusOr<Schedule> schedule =
                BuildSchedule(kind.op, kind.algorithm, options);
            const std::string what = absl::StrCat(
                OpName(kind.op), " ", AlgorithmName(kind.algorithm), " n=", n,
                " per_node=", per_node, " channels=", channels,
                " count=", count);
            ASSERT_TRUE(schedule.ok()) << what << ": " << schedule.status();
            EXPECT_TRUE(CheckSchedule(*schedule).ok())
                << what << ": " << CheckSchedule(*schedule);
          }
        }
      }
    }
  }
}

// A ring over 2 nodes of 8 ranks on 8 channels crosses between the nodes
// from every local rank once in each direction (each channel through other
// NICs), where one channel crosses from local rank 7 only.
TEST(ChannelsTest, RingChannelsCrossNodesAtEveryLocalRank) {
  for (int32_t channels : {1, 8}) {
    ScheduleOptions options;
    options.group_size = 16;
    options.count = 1 << 12;
    options.ranks_per_node = 8;
    options.num_channels = channels;
    absl::StatusOr<Schedule> schedule =
        BuildSchedule(CollectiveOp::kAllReduce, Algorithm::kRing, options);
    ASSERT_TRUE(schedule.ok()) << schedule.status();
    std::set<int32_t> crossing_locals;
    int64_t elements = 0;
    for (int32_t r = 0; r < 16; ++r) {
      for (const Step& step : schedule->ranks[r].steps) {
        if (step.kind != StepKind::kSend) continue;
        elements += step.src.count;
        if (step.peer / 8 != r / 8) crossing_locals.insert(r % 8);
      }
    }
    if (channels == 1) {
      EXPECT_EQ(crossing_locals, (std::set<int32_t>{7}));
    } else {
      EXPECT_EQ(crossing_locals.size(), 8u);
    }
    // The same elements move either way: 2 (n-1)/n of the count per rank.
    EXPECT_EQ(elements, 2 * 15 * options.count);
  }
}

TEST(ChannelsTest, OpsThatDoNotSplitSayWhich) {
  ScheduleOptions options;
  options.group_size = 4;
  options.count = 64;
  options.num_channels = 2;
  absl::StatusOr<Schedule> schedule =
      BuildSchedule(CollectiveOp::kAllGather, Algorithm::kRing, options);
  EXPECT_EQ(schedule.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(schedule.status().message(), testing::HasSubstr("all_gather"));
  options.num_channels = 0;
  EXPECT_EQ(BuildSchedule(CollectiveOp::kAllReduce, Algorithm::kRing, options)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// Hierarchical all-reduce, reduce-scatter and all-gather over grids of 1 to
// 4 dimensions (dims of 1 included), with counts that do not divide (and
// fewer elements than ranks), chunked or not, pass the checker; {L, n / L}
// is the same schedule as ranks_per_node L.
TEST(HierarchicalDimsTest, EveryGridIsCorrect) {
  const std::vector<std::vector<int32_t>> grids = {
      {2, 2, 2}, {2, 3, 2}, {4, 1, 2}, {3, 4}, {1, 5}, {5}, {2, 2, 2, 2}};
  for (CollectiveOp op :
       {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter,
        CollectiveOp::kAllGather}) {
    for (const auto& dims : grids) {
      int32_t n = 1;
      for (int32_t d : dims) n *= d;
      for (int64_t count : {1, 7, 97}) {
        for (int64_t chunks : {1, 3}) {
          ScheduleOptions options;
          options.group_size = n;
          options.count = count;
          options.num_chunks = chunks;
          options.dims = dims;
          absl::StatusOr<Schedule> schedule =
              BuildSchedule(op, Algorithm::kHierarchical, options);
          const std::string what =
              absl::StrCat(OpName(op), " ", absl::StrJoin(dims, "x"),
                           " count=", count, " chunks=", chunks);
          ASSERT_TRUE(schedule.ok()) << what << ": " << schedule.status();
          EXPECT_TRUE(CheckSchedule(*schedule).ok())
              << what << ": " << CheckSchedule(*schedule);
        }
      }
    }
  }
  ScheduleOptions by_node;
  by_node.group_size = 12;
  by_node.count = 1000;
  by_node.num_chunks = 2;
  by_node.ranks_per_node = 4;
  ScheduleOptions by_dims = by_node;
  by_dims.dims = {4, 3};
  absl::StatusOr<Schedule> a = BuildSchedule(CollectiveOp::kAllReduce,
                                             Algorithm::kHierarchical, by_node);
  absl::StatusOr<Schedule> b = BuildSchedule(CollectiveOp::kAllReduce,
                                             Algorithm::kHierarchical, by_dims);
  ASSERT_TRUE(a.ok() && b.ok());
  for (int32_t r = 0; r < 12; ++r) {
    EXPECT_EQ(a->ranks[r].steps, b->ranks[r].steps) << "rank " << r;
  }
}

TEST(HierarchicalDimsTest, GridsThatDoNotHoldTheGroupAreRefused) {
  ScheduleOptions options;
  options.group_size = 8;
  options.count = 64;
  options.dims = {2, 3};
  absl::StatusOr<Schedule> schedule = BuildSchedule(
      CollectiveOp::kAllReduce, Algorithm::kHierarchical, options);
  EXPECT_EQ(schedule.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(schedule.status().message(), testing::HasSubstr("2x3"));
  options.dims = {8, 0};
  EXPECT_EQ(
      BuildSchedule(CollectiveOp::kAllReduce, Algorithm::kHierarchical, options)
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace collective
}  // namespace distribute
