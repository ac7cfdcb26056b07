#include "distribute/collective/race_check.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/collective/schedule.h"

namespace distribute {
namespace collective {

namespace {

struct Access {
  int64_t begin = 0;
  int64_t end = 0;
  int32_t step = 0;
  bool write = false;
};

absl::Status CheckRank(const RankProgram& program, int32_t rank) {
  const size_t steps = program.steps.size();
  const size_t words = (steps + 63) / 64;
  // ancestors[i * words ...]: the steps that step i waits for, transitively.
  std::vector<uint64_t> ancestors(steps * words, 0);
  std::vector<Access> accesses[3];
  for (size_t i = 0; i < steps; ++i) {
    const Step& step = program.steps[i];
    uint64_t* mine = &ancestors[i * words];
    for (int32_t dep : step.deps) {
      const uint64_t* theirs = &ancestors[static_cast<size_t>(dep) * words];
      for (size_t w = 0; w < words; ++w) mine[w] |= theirs[w];
      mine[dep / 64] |= uint64_t{1} << (dep % 64);
    }
    const int32_t index = static_cast<int32_t>(i);
    auto note = [&](const BufferRange& range, bool write) {
      if (range.count == 0) return;
      accesses[static_cast<int>(range.buffer)].push_back(
          Access{range.offset, range.end(), index, write});
    };
    switch (step.kind) {
      case StepKind::kSend:
        note(step.src, false);
        break;
      case StepKind::kRecv:
        note(step.dst, true);
        break;
      case StepKind::kReduce:
      case StepKind::kCopy:
        note(step.src, false);
        note(step.dst, true);
        break;
    }
  }
  for (int b = 0; b < 3; ++b) {
    std::vector<Access>& list = accesses[b];
    std::sort(list.begin(), list.end(), [](const Access& x, const Access& y) {
      return x.begin != y.begin ? x.begin < y.begin : x.step < y.step;
    });
    std::vector<Access> active;
    for (const Access& access : list) {
      active.erase(std::remove_if(active.begin(), active.end(),
                                  [&](const Access& other) {
                                    return other.end <= access.begin;
                                  }),
                   active.end());
      for (const Access& other : active) {
        if (!access.write && !other.write) continue;
        if (access.step == other.step) continue;
        const int32_t first = std::min(access.step, other.step);
        const int32_t second = std::max(access.step, other.step);
        const uint64_t bit =
            ancestors[static_cast<size_t>(second) * words + first / 64] >>
            (first % 64);
        if ((bit & 1) != 0) continue;
        const int64_t begin = std::max(access.begin, other.begin);
        const int64_t end = std::min(access.end, other.end);
        return absl::InternalError(absl::StrCat(
            "rank ", rank, ": step ", first, " (",
            StepDebugString(program.steps[first]), ") and step ", second, " (",
            StepDebugString(program.steps[second]), ") both touch ",
            BufferName(static_cast<BufferKind>(b)), "[", begin, ",", end,
            "), at least one writing, but step ", second,
            " does not depend on step ", first,
            " (directly or transitively): they may run concurrently; add the "
            "dependency"));
      }
      active.push_back(access);
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckNoRaces(const Schedule& schedule) {
  for (size_t rank = 0; rank < schedule.ranks.size(); ++rank) {
    RETURN_IF_ERROR(
        CheckRank(schedule.ranks[rank], static_cast<int32_t>(rank)));
  }
  return absl::OkStatus();
}

}  // namespace collective
}  // namespace distribute
