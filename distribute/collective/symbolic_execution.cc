#include "distribute/collective/symbolic_execution.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/status_macros.h"
#include "distribute/collective/schedule.h"
#include "distribute/collective/symbolic_state.h"

namespace distribute {
namespace collective {

namespace {

// What output element `position` of a rank must hold, valid up to run_end
// (with the origin advancing one per element).
struct Expectation {
  bool reduced = false;  // the reduction over all ranks
  int32_t source = -1;   // else: a copy of this rank's input
  int64_t origin = 0;    // input element it derives from
  int64_t run_end = 0;
};

Expectation Expect(const Schedule& schedule, int32_t rank, int64_t position,
                   int64_t output_size) {
  const int64_t n = schedule.group_size();
  const int64_t count = schedule.count();
  Expectation e;
  e.origin = position;
  e.run_end = output_size;
  switch (schedule.op) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kReduce:
      e.reduced = true;
      break;
    case CollectiveOp::kReduceScatter:
      e.reduced = true;
      e.origin = ShardOf(count, n, rank).offset + position;
      break;
    case CollectiveOp::kAllGather: {
      const int64_t owner = ShardOwner(count, n, position);
      const Shard shard = ShardOf(count, n, owner);
      e.source = static_cast<int32_t>(owner);
      e.origin = position - shard.offset;
      e.run_end = shard.offset + shard.count;
      break;
    }
    case CollectiveOp::kBroadcast:
      e.source = schedule.options.root;
      break;
    case CollectiveOp::kAllToAll: {
      const int64_t block = position / count;
      e.source = static_cast<int32_t>(block);
      e.origin = rank * count + position % count;
      e.run_end = (block + 1) * count;
      break;
    }
    case CollectiveOp::kBarrier:
      break;
  }
  return e;
}

}  // namespace

SymbolicExecution::SymbolicExecution(
    const Schedule& schedule, const std::vector<std::vector<int32_t>>& matches)
    : schedule_(schedule),
      matches_(matches),
      n_(schedule.group_size()),
      words_((static_cast<size_t>(schedule.group_size()) + 63) / 64),
      exprs_(schedule.group_size()) {
  buffers_.reserve(static_cast<size_t>(n_) * 3);
  state_.resize(n_);
  messages_.resize(n_);
  next_.assign(n_, 0);
  if (schedule.op == CollectiveOp::kBarrier) knowledge_.resize(n_);
  for (int32_t rank = 0; rank < n_; ++rank) {
    const RankProgram& program = schedule.ranks[rank];
    buffers_.emplace_back(program.input_count);
    buffers_.emplace_back(program.output_count);
    buffers_.emplace_back(program.scratch_count);
    buffers_[static_cast<size_t>(rank) * 3].Write(
        0, {Run{program.input_count, exprs_.Leaf(rank), 0}});
    state_[rank].assign(program.steps.size(), State::kPending);
    messages_[rank].resize(program.steps.size());
    if (!knowledge_.empty()) {
      knowledge_[rank].assign(program.steps.size() * words_, 0);
    }
  }
}

std::string SymbolicExecution::Where(int32_t rank, int32_t index) const {
  return absl::StrCat("rank ", rank, " step ", index, " (",
                      StepDebugString(schedule_.ranks[rank].steps[index]), ")");
}

SymbolicBuffer& SymbolicExecution::Buffer(int32_t rank, BufferKind kind) {
  return buffers_[static_cast<size_t>(rank) * 3 + static_cast<size_t>(kind)];
}

bool SymbolicExecution::DepsDone(int32_t rank, int32_t index) const {
  for (int32_t dep : schedule_.ranks[rank].steps[index].deps) {
    if (state_[rank][dep] != State::kDone) return false;
  }
  return true;
}

absl::Status SymbolicExecution::ReadInitialized(int32_t rank, int32_t index,
                                                const BufferRange& range,
                                                std::vector<Run>* runs) {
  *runs = Buffer(rank, range.buffer).Read(range.offset, range.count);
  int64_t at = range.offset;
  for (const Run& run : *runs) {
    if (run.expr == ExprTable::kUninitialized) {
      return absl::InternalError(absl::StrCat(
          Where(rank, index), ": reads element ", at, " of ",
          BufferName(range.buffer), ", which no earlier step wrote"));
    }
    at += run.length;
  }
  return absl::OkStatus();
}

absl::Status SymbolicExecution::ApplyReduce(int32_t rank, int32_t index) {
  const Step& step = schedule_.ranks[rank].steps[index];
  std::vector<Run> dst;
  std::vector<Run> src;
  RETURN_IF_ERROR(ReadInitialized(rank, index, step.dst, &dst));
  RETURN_IF_ERROR(ReadInitialized(rank, index, step.src, &src));
  std::vector<Run> result;
  size_t a = 0;
  size_t b = 0;
  int64_t used_a = 0;  // elements of dst[a] already combined
  int64_t used_b = 0;
  int64_t position = 0;  // relative to the ranges' starts
  while (a < dst.size() && b < src.size()) {
    const int64_t length =
        std::min(dst[a].length - used_a, src[b].length - used_b);
    const int64_t origin_a = dst[a].origin + used_a;
    const int64_t origin_b = src[b].origin + used_b;
    if (origin_a != origin_b) {
      return absl::InternalError(absl::StrCat(
          Where(rank, index), ": combines data of input element ", origin_a,
          " (in ", BufferName(step.dst.buffer), " element ",
          step.dst.offset + position, ") with data of input element ", origin_b,
          " (from ", BufferName(step.src.buffer), " element ",
          step.src.offset + position,
          "); a reduction must combine the same element of every rank"));
    }
    const int32_t twice = exprs_.FirstCommonRank(dst[a].expr, src[b].expr);
    if (twice >= 0) {
      return absl::InternalError(absl::StrCat(
          Where(rank, index), ": ", BufferName(step.dst.buffer), " element ",
          step.dst.offset + position, " would count the contribution of rank ",
          twice, " twice: ", exprs_.ToString(dst[a].expr), " + ",
          exprs_.ToString(src[b].expr)));
    }
    result.push_back(
        Run{length, exprs_.Combine(dst[a].expr, src[b].expr), origin_a});
    position += length;
    used_a += length;
    used_b += length;
    if (used_a == dst[a].length) {
      ++a;
      used_a = 0;
    }
    if (used_b == src[b].length) {
      ++b;
      used_b = 0;
    }
  }
  Buffer(rank, step.dst.buffer).Write(step.dst.offset, result);
  return absl::OkStatus();
}

void SymbolicExecution::Deliver(int32_t send_rank, int32_t send_index) {
  const Step& send = schedule_.ranks[send_rank].steps[send_index];
  const int32_t recv_rank = send.peer;
  const int32_t recv_index = matches_[send_rank][send_index];
  const Step& recv = schedule_.ranks[recv_rank].steps[recv_index];
  std::vector<Run>& message = messages_[send_rank][send_index];
  Buffer(recv_rank, recv.dst.buffer).Write(recv.dst.offset, message);
  message.clear();
  message.shrink_to_fit();
  if (!knowledge_.empty()) {
    const uint64_t* heard = Knowledge(send_rank, send_index);
    uint64_t* mine = Knowledge(recv_rank, recv_index);
    for (size_t w = 0; w < words_; ++w) mine[w] |= heard[w];
  }
  state_[send_rank][send_index] = State::kDone;
  state_[recv_rank][recv_index] = State::kDone;
}

absl::Status SymbolicExecution::Issue(int32_t rank, int32_t index) {
  const Step& step = schedule_.ranks[rank].steps[index];
  if (!knowledge_.empty()) {
    uint64_t* mine = Knowledge(rank, index);
    mine[rank / 64] |= uint64_t{1} << (rank % 64);
    for (int32_t dep : step.deps) {
      const uint64_t* theirs = Knowledge(rank, dep);
      for (size_t w = 0; w < words_; ++w) mine[w] |= theirs[w];
    }
  }
  switch (step.kind) {
    case StepKind::kSend: {
      RETURN_IF_ERROR(
          ReadInitialized(rank, index, step.src, &messages_[rank][index]));
      state_[rank][index] = State::kIssued;
      const int32_t match = matches_[rank][index];
      if (state_[step.peer][match] == State::kIssued) Deliver(rank, index);
      return absl::OkStatus();
    }
    case StepKind::kRecv: {
      state_[rank][index] = State::kIssued;
      const int32_t match = matches_[rank][index];
      if (state_[step.peer][match] == State::kIssued) Deliver(step.peer, match);
      return absl::OkStatus();
    }
    case StepKind::kCopy: {
      std::vector<Run> runs;
      RETURN_IF_ERROR(ReadInitialized(rank, index, step.src, &runs));
      Buffer(rank, step.dst.buffer).Write(step.dst.offset, runs);
      state_[rank][index] = State::kDone;
      return absl::OkStatus();
    }
    case StepKind::kReduce: {
      RETURN_IF_ERROR(ApplyReduce(rank, index));
      state_[rank][index] = State::kDone;
      return absl::OkStatus();
    }
  }
  return absl::InternalError(
      absl::StrCat(Where(rank, index), ": unknown kind"));
}

absl::Status SymbolicExecution::Execute() {
  bool progress = true;
  while (progress) {
    progress = false;
    for (int32_t rank = 0; rank < n_; ++rank) {
      const int32_t size =
          static_cast<int32_t>(schedule_.ranks[rank].steps.size());
      while (next_[rank] < size && DepsDone(rank, next_[rank])) {
        RETURN_IF_ERROR(Issue(rank, next_[rank]));
        ++next_[rank];
        progress = true;
      }
    }
  }
  for (int32_t rank = 0; rank < n_; ++rank) {
    if (next_[rank] < static_cast<int32_t>(state_[rank].size())) {
      return DescribeDeadlock();
    }
    for (size_t i = 0; i < state_[rank].size(); ++i) {
      if (state_[rank][i] != State::kDone) return DescribeDeadlock();
    }
  }
  return absl::OkStatus();
}

absl::Status SymbolicExecution::DescribeDeadlock() const {
  std::vector<std::string> blocked;
  for (int32_t rank = 0; rank < n_ && blocked.size() < 4; ++rank) {
    const int32_t size = static_cast<int32_t>(state_[rank].size());
    if (next_[rank] >= size) continue;
    const int32_t index = next_[rank];
    std::string line = absl::StrCat(Where(rank, index), " cannot start");
    for (int32_t dep : schedule_.ranks[rank].steps[index].deps) {
      if (state_[rank][dep] == State::kDone) continue;
      const Step& waiting = schedule_.ranks[rank].steps[dep];
      const int32_t match = matches_[rank][dep];
      absl::StrAppend(&line, ": it waits for ", Where(rank, dep),
                      ", whose peer step ", match, " on rank ", waiting.peer,
                      " has not been issued");
      break;
    }
    blocked.push_back(std::move(line));
  }
  return absl::InternalError(
      absl::StrCat("deadlock when every rank issues its steps in order: ",
                   absl::StrJoin(blocked, "; ")));
}

absl::Status SymbolicExecution::CheckOutput(int32_t rank) const {
  const RankProgram& program = schedule_.ranks[rank];
  const SymbolicBuffer& output =
      buffers_[static_cast<size_t>(rank) * 3 +
               static_cast<size_t>(BufferKind::kOutput)];
  for (const auto& [start, segment] : output.segments()) {
    int64_t position = start;
    while (position < segment.end) {
      const Expectation e =
          Expect(schedule_, rank, position, program.output_count);
      const int64_t stop = std::min(segment.end, e.run_end);
      const int64_t origin = segment.origin + (position - start);
      const std::string where =
          absl::StrCat("rank ", rank, " element ", position, " of output");
      if (segment.expr == ExprTable::kUninitialized) {
        return absl::InternalError(
            absl::StrCat(where, ": never written by any step"));
      }
      if (e.reduced) {
        if (origin != e.origin) {
          return absl::InternalError(
              absl::StrCat(where, ": holds the reduction of input element ",
                           origin, ", expected input element ", e.origin));
        }
        const int32_t missing = exprs_.FirstMissingRank(segment.expr);
        if (missing >= 0) {
          return absl::InternalError(
              absl::StrCat(where, ": missing contribution of rank ", missing,
                           " (holds ", exprs_.ToString(segment.expr), ")"));
        }
      } else if (segment.expr != exprs_.Leaf(e.source) || origin != e.origin) {
        return absl::InternalError(absl::StrCat(
            where, ": expected input element ", e.origin, " of rank ", e.source,
            ", found ", exprs_.ToString(segment.expr), " of input element ",
            origin));
      }
      position = stop;
    }
  }
  return absl::OkStatus();
}

absl::Status SymbolicExecution::CheckSameAsRankZero(int32_t rank) const {
  const auto& mine = buffers_[static_cast<size_t>(rank) * 3 + 1].segments();
  const auto& zero = buffers_[1].segments();
  auto a = mine.begin();
  auto b = zero.begin();
  while (a != mine.end() && b != zero.end()) {
    const int64_t begin = std::max(a->first, b->first);
    if (a->second.expr != b->second.expr) {
      return absl::InternalError(absl::StrCat(
          "rank ", rank, " element ", begin, " of output: computed as ",
          exprs_.ToString(a->second.expr), " but rank 0 computes ",
          exprs_.ToString(b->second.expr),
          "; every rank must reduce in the same order to end bit-identical"));
    }
    if (a->second.end <= b->second.end) {
      if (a->second.end == b->second.end) ++b;
      ++a;
    } else {
      ++b;
    }
  }
  return absl::OkStatus();
}

absl::Status SymbolicExecution::CheckBarrier() const {
  for (int32_t rank = 0; rank < n_; ++rank) {
    std::vector<uint64_t> heard(words_, 0);
    heard[rank / 64] |= uint64_t{1} << (rank % 64);
    for (size_t i = 0; i < state_[rank].size(); ++i) {
      for (size_t w = 0; w < words_; ++w) {
        heard[w] |= knowledge_[rank][i * words_ + w];
      }
    }
    for (int32_t other = 0; other < n_; ++other) {
      if ((heard[other / 64] >> (other % 64) & 1) == 0) {
        return absl::InternalError(
            absl::StrCat("rank ", rank,
                         " leaves the barrier without having heard, "
                         "directly or through others, from rank ",
                         other));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status SymbolicExecution::CheckResults() const {
  if (schedule_.op == CollectiveOp::kBarrier) return CheckBarrier();
  for (int32_t rank = 0; rank < n_; ++rank) {
    RETURN_IF_ERROR(CheckOutput(rank));
    if (schedule_.op == CollectiveOp::kAllReduce && rank > 0) {
      RETURN_IF_ERROR(CheckSameAsRankZero(rank));
    }
  }
  return absl::OkStatus();
}

}  // namespace collective
}  // namespace distribute
