// Schedule types, names, sharding, DebugString and the builders' input
// validation.
#include "distribute/collective/schedule.h"

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distribute/collective/builders.h"
#include "gtest/gtest.h"

namespace distribute {
namespace collective {
namespace {

TEST(ShardTest, BalancedContiguousCover) {
  for (int64_t count : {0, 1, 2, 7, 13, 100, 4099}) {
    for (int64_t parts : {1, 2, 3, 7, 16}) {
      int64_t next = 0;
      for (int64_t i = 0; i < parts; ++i) {
        const Shard shard = ShardOf(count, parts, i);
        EXPECT_EQ(shard.offset, next);
        EXPECT_TRUE(shard.count == count / parts ||
                    shard.count == count / parts + 1);
        for (int64_t e = shard.offset; e < shard.offset + shard.count; ++e) {
          EXPECT_EQ(ShardOwner(count, parts, e), i);
        }
        next += shard.count;
      }
      EXPECT_EQ(next, count);
    }
  }
}

TEST(NamesTest, AlgorithmNamesRoundTrip) {
  for (Algorithm algorithm :
       {Algorithm::kRing, Algorithm::kDoubleBinaryTree,
        Algorithm::kRecursiveHalvingDoubling, Algorithm::kDirect,
        Algorithm::kHierarchical, Algorithm::kChain, Algorithm::kBinaryTree,
        Algorithm::kPairwise, Algorithm::kDissemination}) {
    absl::StatusOr<Algorithm> parsed =
        AlgorithmFromName(AlgorithmName(algorithm));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, algorithm);
  }
  EXPECT_EQ(AlgorithmFromName("butterfly").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(OpName(CollectiveOp::kReduceScatter), "reduce_scatter");
  EXPECT_EQ(BufferName(BufferKind::kScratch), "scratch");
  EXPECT_EQ(StepKindName(StepKind::kReduce), "REDUCE");
}

TEST(DebugStringTest, ListsEveryStep) {
  ScheduleOptions options;
  options.group_size = 2;
  options.count = 2;
  absl::StatusOr<Schedule> s = BuildRingAllReduce(options);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->DebugString(),
            "all_reduce ring n=2 count=2 num_chunks=1 chunk_elements=0 root=0 "
            "ranks_per_node=0\n"
            "rank 0 (input 2, output 2, scratch 0):\n"
            "  #0 SEND to 1 tag 0 input[1,+1)\n"
            "  #1 RECV from 1 tag 0 output[0,+1)\n"
            "  #2 REDUCE output[0,+1) += input[0,+1) deps {1}\n"
            "  #3 SEND to 1 tag 1 output[0,+1) deps {2}\n"
            "  #4 RECV from 1 tag 1 output[1,+1)\n"
            "rank 1 (input 2, output 2, scratch 0):\n"
            "  #0 SEND to 0 tag 0 input[0,+1)\n"
            "  #1 RECV from 0 tag 0 output[1,+1)\n"
            "  #2 REDUCE output[1,+1) += input[1,+1) deps {1}\n"
            "  #3 SEND to 0 tag 1 output[1,+1) deps {2}\n"
            "  #4 RECV from 0 tag 1 output[0,+1)\n");
  EXPECT_EQ(s->NumSteps(), 10);
  EXPECT_EQ(s->NumMessages(), 4);
  EXPECT_EQ(s->ElementsSent(), 4);
}

TEST(BuilderOptionsTest, RejectsBadOptions) {
  ScheduleOptions good;
  good.group_size = 4;
  good.count = 10;
  ASSERT_TRUE(BuildRingAllReduce(good).ok());

  ScheduleOptions o = good;
  o.group_size = 0;
  EXPECT_EQ(BuildRingAllReduce(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o = good;
  o.count = -1;
  EXPECT_EQ(BuildDoubleBinaryTreeAllReduce(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o = good;
  o.num_chunks = 0;
  EXPECT_EQ(BuildDirectAllReduce(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o = good;
  o.chunk_elements = -5;
  EXPECT_EQ(BuildRecursiveHalvingDoublingAllReduce(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o = good;
  o.root = 4;
  EXPECT_EQ(BuildChainBroadcast(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.root = -1;
  EXPECT_EQ(BuildTreeReduce(o).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildDisseminationBarrier(good).status().code(),
            absl::StatusCode::kInvalidArgument);  // count must be 0
}

TEST(BuilderOptionsTest, HierarchicalNeedsWholeNodes) {
  ScheduleOptions options;
  options.group_size = 6;
  options.count = 10;
  options.ranks_per_node = 4;
  absl::StatusOr<Schedule> s = BuildHierarchicalAllReduce(options);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.status().message())
                .find("group size 6 is not a multiple of 4"),
            std::string::npos)
      << s.status();
  options.ranks_per_node = 0;
  EXPECT_EQ(BuildHierarchicalAllReduce(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.ranks_per_node = 3;
  EXPECT_TRUE(BuildHierarchicalAllReduce(options).ok());
}

TEST(BuilderOptionsTest, UnsupportedPairsAreInvalidArgument) {
  ScheduleOptions options;
  options.group_size = 3;
  options.count = 5;
  absl::StatusOr<Schedule> s =
      BuildSchedule(CollectiveOp::kBroadcast, Algorithm::kRing, options);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(std::string(s.status().message()),
            "algorithm 'ring' does not implement broadcast; use one of: "
            "chain, binary_tree");
  EXPECT_EQ(BuildAllReduce(Algorithm::kChain, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildAllToAll(Algorithm::kDirect, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildBarrier(Algorithm::kRing, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildReduceScatter(Algorithm::kDirect, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildAllGather(Algorithm::kDirect, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildReduce(Algorithm::kRing, options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(BuilderOptionsTest, ChunkElementsOverridesNumChunks) {
  ScheduleOptions options;
  options.group_size = 2;
  options.count = 100;
  options.num_chunks = 2;
  absl::StatusOr<Schedule> two = BuildChainBroadcast(options);
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->NumMessages(), 2);
  options.chunk_elements = 10;
  absl::StatusOr<Schedule> ten = BuildChainBroadcast(options);
  ASSERT_TRUE(ten.ok());
  EXPECT_EQ(ten->NumMessages(), 10);
  // More chunks than elements: one message per element, no empty ones.
  options.chunk_elements = 0;
  options.num_chunks = 1000;
  absl::StatusOr<Schedule> many = BuildChainBroadcast(options);
  ASSERT_TRUE(many.ok());
  EXPECT_EQ(many->NumMessages(), 100);
}

}  // namespace
}  // namespace collective
}  // namespace distribute
