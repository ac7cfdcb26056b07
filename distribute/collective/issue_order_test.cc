#include "distribute/collective/issue_order.h"

#include <cstdint>
#include <vector>

#include "distribute/collective/builders.h"
#include "distribute/collective/checker.h"
#include "distribute/collective/schedule.h"
#include "gtest/gtest.h"

namespace distribute {
namespace collective {
namespace {

Step Make(StepKind kind, int32_t peer, int64_t tag, BufferRange src,
          BufferRange dst, std::vector<int32_t> deps) {
  Step s;
  s.kind = kind;
  s.peer = peer;
  s.tag = tag;
  s.src = src;
  s.dst = dst;
  s.deps.assign(deps.begin(), deps.end());
  return s;
}

// Rank 0 receives from 1 and reduces, and independently sends its input to
// rank 2; listed after the reduce, the send would wait for the receive.
Schedule Stalling() {
  Schedule s;
  s.options.group_size = 3;
  s.options.count = 4;
  s.ranks.resize(3);
  const BufferRange in{BufferKind::kInput, 0, 4};
  const BufferRange out{BufferKind::kOutput, 0, 4};
  const BufferRange scratch{BufferKind::kScratch, 0, 4};
  s.ranks[0] = {4,
                4,
                4,
                {Make(StepKind::kRecv, 1, 0, {}, scratch, {}),
                 Make(StepKind::kCopy, -1, -1, in, out, {}),
                 Make(StepKind::kReduce, -1, -1, scratch, out, {0, 1}),
                 Make(StepKind::kSend, 2, 0, in, {}, {})}};
  s.ranks[1] = {4, 0, 0, {Make(StepKind::kSend, 0, 0, in, {}, {})}};
  s.ranks[2] = {0, 4, 0, {Make(StepKind::kRecv, 0, 0, {}, out, {})}};
  return s;
}

TEST(IssueOrderTest, IndependentSendMovesAheadOfTheWait) {
  const Schedule s = OrderForInOrderIssue(Stalling());
  const std::vector<Step>& steps = s.ranks[0].steps;
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(steps[0].kind, StepKind::kRecv);
  EXPECT_EQ(steps[1].kind, StepKind::kCopy);
  EXPECT_EQ(steps[2].kind, StepKind::kSend);
  EXPECT_EQ(steps[3].kind, StepKind::kReduce);
  // The reduce's dependencies follow the steps to their new places.
  EXPECT_EQ(steps[3].deps, (StepDeps{0, 1}));
  EXPECT_EQ(s.ranks[1].steps, Stalling().ranks[1].steps);
}

TEST(IssueOrderTest, UnmatchedScheduleIsReturnedUnchanged) {
  Schedule s = Stalling();
  s.ranks[2].steps.clear();  // rank 0's send has no receiver
  const Schedule ordered = OrderForInOrderIssue(s);
  for (size_t r = 0; r < s.ranks.size(); ++r) {
    EXPECT_EQ(ordered.ranks[r].steps, s.ranks[r].steps);
  }
}

// The double binary tree is built through the pass: every program stays
// topologically ordered, and the checker (matching, races, deadlock under
// in-order issue, results) accepts it.
TEST(IssueOrderTest, DoubleBinaryTreeStaysValid) {
  for (int32_t n : {2, 3, 5, 8, 13}) {
    for (int64_t chunks : {1, 3, 16}) {
      ScheduleOptions options;
      options.group_size = n;
      options.count = 1000;
      options.num_chunks = chunks;
      absl::StatusOr<Schedule> s = BuildDoubleBinaryTreeAllReduce(options);
      ASSERT_TRUE(s.ok()) << s.status();
      for (const RankProgram& program : s->ranks) {
        for (size_t i = 0; i < program.steps.size(); ++i) {
          for (int32_t d : program.steps[i].deps) {
            EXPECT_LT(d, static_cast<int32_t>(i));
          }
        }
      }
      EXPECT_TRUE(CheckSchedule(*s).ok()) << n << " ranks, " << chunks;
    }
  }
}

}  // namespace
}  // namespace collective
}  // namespace distribute
