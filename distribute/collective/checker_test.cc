// The checker rejects corrupted schedules with INTERNAL and a message that
// names the violation; hand-written schedules pin the exact wording.
#include "distribute/collective/checker.h"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "distribute/collective/builders.h"
#include "distribute/collective/schedule.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace collective {
namespace {

using ::testing::HasSubstr;

Schedule Built(absl::StatusOr<Schedule> schedule) {
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_TRUE(CheckSchedule(*schedule).ok());
  return *std::move(schedule);
}

ScheduleOptions Options(int32_t n, int64_t count) {
  ScheduleOptions options;
  options.group_size = n;
  options.count = count;
  return options;
}

// Removes a step; steps that waited for it wait for its deps instead.
void RemoveStep(Schedule* schedule, int32_t rank, int32_t index) {
  std::vector<Step>& steps = schedule->ranks[rank].steps;
  const std::vector<int32_t> inherited(steps[index].deps.begin(),
                                       steps[index].deps.end());
  steps.erase(steps.begin() + index);
  for (Step& step : steps) {
    std::vector<int32_t> deps;
    for (int32_t dep : step.deps) {
      if (dep == index) {
        deps.insert(deps.end(), inherited.begin(), inherited.end());
      } else {
        deps.push_back(dep > index ? dep - 1 : dep);
      }
    }
    step.deps.assign(deps.begin(), deps.end());
  }
}

int32_t FindStep(const Schedule& schedule, int32_t rank, StepKind kind,
                 int32_t nth = 0) {
  const std::vector<Step>& steps = schedule.ranks[rank].steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind == kind && nth-- == 0) return static_cast<int32_t>(i);
  }
  ADD_FAILURE() << "no such step";
  return -1;
}

// Waits for every earlier step of the rank.
std::vector<int32_t> AllBefore(int32_t index) {
  std::vector<int32_t> deps;
  for (int32_t i = 0; i < index; ++i) deps.push_back(i);
  return deps;
}

Step MakeStep(StepKind kind, BufferRange src, BufferRange dst,
              std::vector<int32_t> deps = {}, int32_t peer = -1,
              int64_t tag = -1) {
  Step step;
  step.kind = kind;
  step.src = src;
  step.dst = dst;
  step.deps.assign(deps.begin(), deps.end());
  step.peer = peer;
  step.tag = tag;
  return step;
}

BufferRange In(int64_t offset, int64_t count) {
  return {BufferKind::kInput, offset, count};
}
BufferRange Out(int64_t offset, int64_t count) {
  return {BufferKind::kOutput, offset, count};
}
BufferRange Scratch(int64_t offset, int64_t count) {
  return {BufferKind::kScratch, offset, count};
}

Step Send(int32_t peer, int64_t tag, BufferRange src,
          std::vector<int32_t> deps = {}) {
  return MakeStep(StepKind::kSend, src, {}, std::move(deps), peer, tag);
}
Step Recv(int32_t peer, int64_t tag, BufferRange dst,
          std::vector<int32_t> deps = {}) {
  return MakeStep(StepKind::kRecv, {}, dst, std::move(deps), peer, tag);
}
Step Copy(BufferRange src, BufferRange dst, std::vector<int32_t> deps = {}) {
  return MakeStep(StepKind::kCopy, src, dst, std::move(deps));
}
Step Reduce(BufferRange src, BufferRange dst, std::vector<int32_t> deps = {}) {
  return MakeStep(StepKind::kReduce, src, dst, std::move(deps));
}

// A correct two-rank all-reduce of one element, written by hand: each rank
// receives the other's input into scratch and computes x0 + x1.
Schedule TwoRankAllReduce() {
  Schedule s;
  s.op = CollectiveOp::kAllReduce;
  s.algorithm = Algorithm::kDirect;
  s.options = Options(2, 1);
  s.ranks.resize(2);
  for (RankProgram& program : s.ranks) {
    program.input_count = 1;
    program.output_count = 1;
    program.scratch_count = 1;
  }
  s.ranks[0].steps = {Send(1, 0, In(0, 1)), Recv(1, 0, Scratch(0, 1)),
                      Copy(In(0, 1), Out(0, 1)),
                      Reduce(Scratch(0, 1), Out(0, 1), {1, 2})};
  s.ranks[1].steps = {Send(0, 0, In(0, 1)), Recv(0, 0, Scratch(0, 1)),
                      Copy(Scratch(0, 1), Out(0, 1), {1}),
                      Reduce(In(0, 1), Out(0, 1), {2})};
  return s;
}

void ExpectInternal(const Schedule& schedule, const std::string& fragment) {
  const absl::Status status = CheckSchedule(schedule);
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal) << status;
  EXPECT_THAT(std::string(status.message()), HasSubstr(fragment));
}

TEST(CheckerTest, AcceptsHandWrittenAllReduce) {
  EXPECT_TRUE(CheckSchedule(TwoRankAllReduce()).ok());
}

TEST(CheckerTest, DroppedRecvLeavesSendUnmatched) {
  Schedule s = Built(BuildRingAllReduce(Options(4, 100)));
  RemoveStep(&s, 1, FindStep(s, 1, StepKind::kRecv));
  ExpectInternal(s, "has no matching RECV from rank 0 with tag 0");
}

TEST(CheckerTest, DroppedSendLeavesRecvUnmatched) {
  Schedule s = Built(BuildRingAllReduce(Options(4, 100)));
  RemoveStep(&s, 2, FindStep(s, 2, StepKind::kSend));
  ExpectInternal(s, "rank 2 sends no message to rank 3 with tag 0");
}

TEST(CheckerTest, DroppedReduceMissesAContribution) {
  Schedule s = Built(BuildRingAllReduce(Options(4, 100)));
  RemoveStep(&s, 1, FindStep(s, 1, StepKind::kReduce));
  ExpectInternal(s, "missing contribution of rank 1");
}

TEST(CheckerTest, DoubledReduceCountsAContributionTwice) {
  Schedule s = Built(BuildDirectAllReduce(Options(3, 10)));
  std::vector<Step>& steps = s.ranks[0].steps;
  Step again = steps[FindStep(s, 0, StepKind::kReduce, 1)];
  const std::vector<int32_t> all =
      AllBefore(static_cast<int32_t>(steps.size()));
  again.deps.assign(all.begin(), all.end());
  steps.push_back(again);
  ExpectInternal(s, "would count the contribution of rank 2 twice");
}

TEST(CheckerTest, SwappedTagsMisplaceData) {
  // Rank 0 sends its input to rank 1 in two equal pieces; swapping their
  // tags delivers elements 2..3 where elements 0..1 belong.
  ScheduleOptions options = Options(2, 4);
  options.num_chunks = 2;
  Schedule s = Built(BuildDirectAllReduce(options));
  Step& first = s.ranks[0].steps[FindStep(s, 0, StepKind::kSend, 0)];
  Step& second = s.ranks[0].steps[FindStep(s, 0, StepKind::kSend, 1)];
  std::swap(first.tag, second.tag);
  ExpectInternal(s,
                 "combines data of input element 2 (in output element 0) "
                 "with data of input element 0 (from input element 0)");
}

TEST(CheckerTest, SwappedTagsInRingDeadlock) {
  // In a two-rank ring, rank 1 swaps the tags of its two rounds: its first
  // receive then waits for rank 0's all-gather message, which rank 0 sends
  // only after receiving rank 1's all-gather message, which rank 1 sends
  // only after that first receive.
  Schedule s = Built(BuildRingAllReduce(Options(2, 100)));
  for (Step& step : s.ranks[1].steps) {
    if (step.tag == 0 || step.tag == 1) step.tag = 1 - step.tag;
  }
  ExpectInternal(s, "deadlock when every rank issues its steps in order");
}

TEST(CheckerTest, SwappedTagsAcrossPeersAreUnmatched) {
  Schedule s = Built(BuildDirectAllReduce(Options(3, 4)));
  // Rank 0's messages to ranks 1 and 2 both have tag 0; give the one to
  // rank 2 tag 1: rank 2 waits for a tag 0 that never comes.
  std::vector<Step>& steps = s.ranks[0].steps;
  Step& to_two = steps[FindStep(s, 0, StepKind::kSend, 1)];
  ASSERT_EQ(to_two.peer, 2);
  to_two.tag = 1;
  ExpectInternal(s,
                 "rank 2 step 0 (RECV from 0 tag 0 scratch[0,+4)): rank 0 "
                 "sends no message to rank 2 with tag 0");
}

TEST(CheckerTest, DuplicateTagIsRejected) {
  Schedule s = Built(BuildRingAllReduce(Options(2, 100)));
  s.ranks[0].steps[FindStep(s, 0, StepKind::kSend, 1)].tag = 0;
  ExpectInternal(s, "tag 0 already used by step 0 for a message to rank 1");
}

TEST(CheckerTest, SizeMismatchIsRejected) {
  Schedule s = TwoRankAllReduce();
  s.options.count = 2;
  for (RankProgram& program : s.ranks) {
    program.input_count = program.output_count = program.scratch_count = 2;
  }
  s.ranks[0].steps[0].src.count = 2;
  ExpectInternal(s, "receives 1 elements but rank 0 step 0");
}

TEST(CheckerTest, MissingDependencyIsARace) {
  Schedule s = Built(BuildRingAllReduce(Options(3, 30)));
  // Rank 1's second send passes on the partial sum its first reduce made.
  Step& send = s.ranks[1].steps[FindStep(s, 1, StepKind::kSend, 1)];
  ASSERT_FALSE(send.deps.empty());
  send.deps.clear();
  ExpectInternal(s, "may run concurrently; add the dependency");
}

TEST(CheckerTest, CyclicWaitIsADeadlock) {
  Schedule s = TwoRankAllReduce();
  // Each rank sends only after it has received: nobody starts.
  for (RankProgram& program : s.ranks) {
    std::swap(program.steps[0], program.steps[1]);
    program.steps[1].deps = {0};
  }
  s.ranks[0].steps[3].deps = {0, 2};
  s.ranks[1].steps[2].deps = {0};
  ExpectInternal(s, "deadlock when every rank issues its steps in order");
}

TEST(CheckerTest, DifferentReductionOrdersAreNotBitIdentical) {
  Schedule s = TwoRankAllReduce();
  // Rank 1 computes x1 + x0 instead of x0 + x1.
  s.ranks[1].steps[2] = Copy(In(0, 1), Out(0, 1));
  s.ranks[1].steps[3] = Reduce(Scratch(0, 1), Out(0, 1), {1, 2});
  ExpectInternal(s, "computed as (x1+x0) but rank 0 computes (x0+x1)");
}

TEST(CheckerTest, MissingContributionNamesRankAndElement) {
  Schedule s = TwoRankAllReduce();
  s.ranks[1].steps.pop_back();  // rank 1 never adds its own input
  ExpectInternal(s,
                 "rank 1 element 0 of output: missing contribution of "
                 "rank 1");
}

TEST(CheckerTest, ReadingUnwrittenDataIsRejected) {
  Schedule s = TwoRankAllReduce();
  s.ranks[0].steps[0].src = Out(0, 1);  // sends its output before writing it
  s.ranks[0].steps[2].deps = {0};       // (and writes it after the send)
  ExpectInternal(s, "reads element 0 of output, which no earlier step wrote");
}

TEST(CheckerTest, UnwrittenOutputIsRejected) {
  Schedule s = TwoRankAllReduce();
  s.options.count = 2;
  for (RankProgram& program : s.ranks) {
    program.input_count = program.output_count = 2;
  }
  ExpectInternal(s, "rank 0 element 1 of output: never written by any step");
}

TEST(CheckerTest, WritingTheInputIsRejected) {
  Schedule s = TwoRankAllReduce();
  s.ranks[0].steps[1].dst = In(0, 1);
  ExpectInternal(s, "writes the input buffer, which is read-only");
}

TEST(CheckerTest, ForwardDependencyIsRejected) {
  Schedule s = TwoRankAllReduce();
  s.ranks[0].steps[0].deps = {3};
  ExpectInternal(s, "dependency 3 must name an earlier step");
}

TEST(CheckerTest, RangeOutsideBufferIsRejected) {
  Schedule s = TwoRankAllReduce();
  s.ranks[1].steps[1].dst = Scratch(1, 1);
  ExpectInternal(s, "range scratch[1,+1) is outside the scratch buffer of 1");
}

TEST(CheckerTest, PeerOutsideGroupIsRejected) {
  Schedule s = TwoRankAllReduce();
  s.ranks[0].steps[0].peer = 2;
  ExpectInternal(s, "peer 2 is not another rank of the group of 2");
}

TEST(CheckerTest, EmptyStepOutsideBarrierIsRejected) {
  Schedule s = TwoRankAllReduce();
  s.ranks[0].steps.push_back(Copy(In(0, 0), Out(0, 0)));
  ExpectInternal(s, "empty range; steps without data must be omitted");
}

TEST(CheckerTest, WrongBufferSizesAreRejected) {
  Schedule s = TwoRankAllReduce();
  s.ranks[1].output_count = 3;
  ExpectInternal(s,
                 "rank 1: buffers of 1 input and 3 output elements, but "
                 "all_reduce of count 1 over 2 ranks needs 1 and 1");
}

TEST(CheckerTest, ReducingDifferentElementsIsRejected) {
  Schedule s = Built(BuildDirectAllReduce(Options(2, 4)));
  // Rank 0 adds rank 1's elements 0..2 to its own elements 1..3.
  Step& reduce = s.ranks[0].steps[FindStep(s, 0, StepKind::kReduce)];
  reduce.src = Scratch(0, 3);
  reduce.dst = Out(1, 3);
  ExpectInternal(s,
                 "combines data of input element 1 (in output element 1) "
                 "with data of input element 0 (from scratch element 0)");
}

TEST(CheckerTest, BarrierWithoutChainedRoundsIsIncomplete) {
  ScheduleOptions options = Options(4, 0);
  Schedule s = Built(BuildDisseminationBarrier(options));
  // Without waiting for round 0, round 1 forwards nothing heard.
  for (RankProgram& program : s.ranks) {
    for (Step& step : program.steps) step.deps.clear();
  }
  ExpectInternal(s,
                 "leaves the barrier without having heard, directly or "
                 "through others, from rank");
}

TEST(CheckerTest, BrokenAllToAllNamesTheBlock) {
  Schedule s = Built(BuildPairwiseAllToAll(Options(3, 2)));
  // Rank 0 sends block 2 where block 1 was due (to rank 1).
  Step& send = s.ranks[0].steps[FindStep(s, 0, StepKind::kSend)];
  ASSERT_EQ(send.peer, 1);
  send.src.offset = 4;
  ExpectInternal(s,
                 "rank 1 element 0 of output: expected input element 2 of "
                 "rank 0, found x0 of input element 4");
}

}  // namespace
}  // namespace collective
}  // namespace distribute
