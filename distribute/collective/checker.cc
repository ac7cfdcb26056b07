#include "distribute/collective/checker.h"

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/collective/race_check.h"
#include "distribute/collective/schedule.h"
#include "distribute/collective/symbolic_execution.h"

namespace distribute {
namespace collective {

namespace {

std::string Where(const Schedule& schedule, int32_t rank, int32_t index) {
  return absl::StrCat("rank ", rank, " step ", index, " (",
                      StepDebugString(schedule.ranks[rank].steps[index]), ")");
}

bool IsRooted(CollectiveOp op) {
  return op == CollectiveOp::kBroadcast || op == CollectiveOp::kReduce;
}

// The input and output sizes the operation prescribes (schedule.h).
void ExpectedSizes(const Schedule& schedule, int32_t rank, int64_t* input,
                   int64_t* output) {
  const int64_t n = schedule.group_size();
  const int64_t count = schedule.count();
  const bool is_root = rank == schedule.options.root;
  switch (schedule.op) {
    case CollectiveOp::kAllReduce:
      *input = *output = count;
      return;
    case CollectiveOp::kReduceScatter:
      *input = count;
      *output = ShardOf(count, n, rank).count;
      return;
    case CollectiveOp::kAllGather:
      *input = ShardOf(count, n, rank).count;
      *output = count;
      return;
    case CollectiveOp::kBroadcast:
      *input = is_root ? count : 0;
      *output = count;
      return;
    case CollectiveOp::kReduce:
      *input = count;
      *output = is_root ? count : 0;
      return;
    case CollectiveOp::kAllToAll:
      *input = *output = n * count;
      return;
    case CollectiveOp::kBarrier:
      *input = *output = 0;
      return;
  }
}

absl::Status CheckHeader(const Schedule& schedule) {
  const int32_t n = schedule.group_size();
  if (n < 1) {
    return absl::InternalError(
        absl::StrCat("schedule has group size ", n, "; it must be >= 1"));
  }
  if (static_cast<int64_t>(schedule.ranks.size()) != n) {
    return absl::InternalError(
        absl::StrCat("schedule has ", schedule.ranks.size(),
                     " rank programs for group size ", n));
  }
  if (schedule.count() < 0) {
    return absl::InternalError(
        absl::StrCat("schedule has negative count ", schedule.count()));
  }
  if (static_cast<int>(schedule.op) >
      static_cast<int>(CollectiveOp::kBarrier)) {
    return absl::InternalError(absl::StrCat("schedule has unknown operation ",
                                            static_cast<int>(schedule.op)));
  }
  if (IsRooted(schedule.op) &&
      (schedule.options.root < 0 || schedule.options.root >= n)) {
    return absl::InternalError(absl::StrCat("schedule root ",
                                            schedule.options.root,
                                            " is outside the group of ", n));
  }
  if (schedule.op == CollectiveOp::kBarrier && schedule.count() != 0) {
    return absl::InternalError(absl::StrCat(
        "barrier schedule has count ", schedule.count(), "; it must be 0"));
  }
  for (int32_t rank = 0; rank < n; ++rank) {
    const RankProgram& program = schedule.ranks[rank];
    int64_t input = 0;
    int64_t output = 0;
    ExpectedSizes(schedule, rank, &input, &output);
    if (program.input_count != input || program.output_count != output) {
      return absl::InternalError(absl::StrCat(
          "rank ", rank, ": buffers of ", program.input_count, " input and ",
          program.output_count, " output elements, but ", OpName(schedule.op),
          " of count ", schedule.count(), " over ", n, " ranks needs ", input,
          " and ", output));
    }
    if (program.scratch_count < 0) {
      return absl::InternalError(absl::StrCat(
          "rank ", rank, ": negative scratch size ", program.scratch_count));
    }
  }
  return absl::OkStatus();
}

int64_t BufferSize(const RankProgram& program, BufferKind buffer) {
  switch (buffer) {
    case BufferKind::kInput:
      return program.input_count;
    case BufferKind::kOutput:
      return program.output_count;
    case BufferKind::kScratch:
      return program.scratch_count;
  }
  return -1;
}

absl::Status CheckRange(const Schedule& schedule, int32_t rank, int32_t index,
                        const BufferRange& range, bool written) {
  const RankProgram& program = schedule.ranks[rank];
  if (static_cast<int>(range.buffer) > static_cast<int>(BufferKind::kScratch)) {
    return absl::InternalError(absl::StrCat(Where(schedule, rank, index),
                                            ": unknown buffer ",
                                            static_cast<int>(range.buffer)));
  }
  const int64_t size = BufferSize(program, range.buffer);
  if (range.offset < 0 || range.count < 0 || range.offset > size ||
      range.count > size - range.offset) {
    return absl::InternalError(absl::StrCat(
        Where(schedule, rank, index), ": range ", RangeDebugString(range),
        " is outside the ", BufferName(range.buffer), " buffer of ", size,
        " elements"));
  }
  if (written && range.buffer == BufferKind::kInput) {
    return absl::InternalError(absl::StrCat(Where(schedule, rank, index),
                                            ": writes the input buffer, which "
                                            "is read-only"));
  }
  if (range.count == 0 && schedule.op != CollectiveOp::kBarrier) {
    return absl::InternalError(absl::StrCat(
        Where(schedule, rank, index),
        ": empty range; steps without data must be omitted (only barriers "
        "send empty messages)"));
  }
  return absl::OkStatus();
}

absl::Status CheckStep(const Schedule& schedule, int32_t rank, int32_t index) {
  const Step& step = schedule.ranks[rank].steps[index];
  const std::string where = Where(schedule, rank, index);
  for (int32_t dep : step.deps) {
    if (dep < 0 || dep >= index) {
      return absl::InternalError(
          absl::StrCat(where, ": dependency ", dep,
                       " must name an earlier step of the same rank"));
    }
  }
  switch (step.kind) {
    case StepKind::kSend:
    case StepKind::kRecv: {
      if (step.peer < 0 || step.peer >= schedule.group_size() ||
          step.peer == rank) {
        return absl::InternalError(absl::StrCat(
            where, ": peer ", step.peer,
            " is not another rank of the group of ", schedule.group_size()));
      }
      if (step.tag < 0) {
        return absl::InternalError(
            absl::StrCat(where, ": tag ", step.tag, " must be non-negative"));
      }
      return step.kind == StepKind::kSend
                 ? CheckRange(schedule, rank, index, step.src, false)
                 : CheckRange(schedule, rank, index, step.dst, true);
    }
    case StepKind::kReduce:
    case StepKind::kCopy: {
      if (schedule.op == CollectiveOp::kBarrier) {
        return absl::InternalError(
            absl::StrCat(where, ": a barrier moves no data"));
      }
      RETURN_IF_ERROR(CheckRange(schedule, rank, index, step.src, false));
      RETURN_IF_ERROR(CheckRange(schedule, rank, index, step.dst, true));
      if (step.src.count != step.dst.count) {
        return absl::InternalError(
            absl::StrCat(where, ": source and destination sizes differ"));
      }
      if (step.src.buffer == step.dst.buffer &&
          step.src.offset < step.dst.end() &&
          step.dst.offset < step.src.end()) {
        return absl::InternalError(
            absl::StrCat(where, ": source and destination overlap"));
      }
      return absl::OkStatus();
    }
  }
  return absl::InternalError(absl::StrCat("rank ", rank, " step ", index,
                                          ": unknown step kind ",
                                          static_cast<int>(step.kind)));
}

// Pairs every SEND with its RECV: (*matches)[rank][i] is the index of the
// matching step in the peer's program.
absl::Status MatchMessages(const Schedule& schedule,
                           std::vector<std::vector<int32_t>>* matches) {
  const int32_t n = schedule.group_size();
  using Key = std::tuple<int32_t, int32_t, int64_t>;  // sender, receiver, tag
  absl::flat_hash_map<Key, int32_t> sends;
  matches->assign(n, {});
  for (int32_t rank = 0; rank < n; ++rank) {
    const std::vector<Step>& steps = schedule.ranks[rank].steps;
    (*matches)[rank].assign(steps.size(), -1);
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].kind != StepKind::kSend) continue;
      auto [it, inserted] = sends.try_emplace(
          Key{rank, steps[i].peer, steps[i].tag}, static_cast<int32_t>(i));
      if (!inserted) {
        return absl::InternalError(
            absl::StrCat(Where(schedule, rank, static_cast<int32_t>(i)),
                         ": tag ", steps[i].tag, " already used by step ",
                         it->second, " for a message to rank ", steps[i].peer,
                         "; tags must be unique per (sender, receiver)"));
      }
    }
  }
  for (int32_t rank = 0; rank < n; ++rank) {
    const std::vector<Step>& steps = schedule.ranks[rank].steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      const Step& recv = steps[i];
      if (recv.kind != StepKind::kRecv) continue;
      const int32_t index = static_cast<int32_t>(i);
      auto it = sends.find(Key{recv.peer, rank, recv.tag});
      if (it == sends.end()) {
        return absl::InternalError(absl::StrCat(
            Where(schedule, rank, index), ": rank ", recv.peer,
            " sends no message to rank ", rank, " with tag ", recv.tag));
      }
      int32_t& send_match = (*matches)[recv.peer][it->second];
      if (send_match >= 0) {
        return absl::InternalError(absl::StrCat(
            Where(schedule, rank, index), ": the message from rank ", recv.peer,
            " with tag ", recv.tag, " is already received by step ",
            send_match));
      }
      const Step& send = schedule.ranks[recv.peer].steps[it->second];
      if (send.src.count != recv.dst.count) {
        return absl::InternalError(absl::StrCat(
            Where(schedule, rank, index), ": receives ", recv.dst.count,
            " elements but ", Where(schedule, recv.peer, it->second), " sends ",
            send.src.count));
      }
      send_match = index;
      (*matches)[rank][i] = it->second;
    }
  }
  for (int32_t rank = 0; rank < n; ++rank) {
    const std::vector<Step>& steps = schedule.ranks[rank].steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].kind == StepKind::kSend && (*matches)[rank][i] < 0) {
        return absl::InternalError(absl::StrCat(
            Where(schedule, rank, static_cast<int32_t>(i)), ": rank ",
            steps[i].peer, " has no matching RECV from rank ", rank,
            " with tag ", steps[i].tag));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSchedule(const Schedule& schedule) {
  RETURN_IF_ERROR(CheckHeader(schedule));
  for (int32_t rank = 0; rank < schedule.group_size(); ++rank) {
    const int32_t steps =
        static_cast<int32_t>(schedule.ranks[rank].steps.size());
    for (int32_t i = 0; i < steps; ++i) {
      RETURN_IF_ERROR(CheckStep(schedule, rank, i));
    }
  }
  std::vector<std::vector<int32_t>> matches;
  RETURN_IF_ERROR(MatchMessages(schedule, &matches));
  RETURN_IF_ERROR(CheckNoRaces(schedule));
  SymbolicExecution execution(schedule, matches);
  RETURN_IF_ERROR(execution.Execute());
  return execution.CheckResults();
}

}  // namespace collective
}  // namespace distribute
