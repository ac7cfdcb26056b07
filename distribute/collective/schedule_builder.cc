#include "distribute/collective/schedule_builder.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "distribute/collective/schedule.h"

namespace distribute {
namespace collective {

absl::Status ValidateScheduleOptions(const ScheduleOptions& options) {
  if (options.group_size < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "group_size must be at least 1, got ", options.group_size));
  }
  if (options.count < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "count must be non-negative (elements per rank), got ", options.count));
  }
  if (options.num_chunks < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_chunks must be at least 1, got ", options.num_chunks,
                     "; use chunk_elements to choose a chunk size instead"));
  }
  if (options.chunk_elements < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk_elements must be 0 (use num_chunks) or positive, "
                     "got ",
                     options.chunk_elements));
  }
  if (options.num_channels < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_channels must be at least 1, got ", options.num_channels));
  }
  if (options.root < 0 || options.root >= options.group_size) {
    return absl::InvalidArgumentError(absl::StrCat("root ", options.root,
                                                   " is outside the group [0, ",
                                                   options.group_size, ")"));
  }
  return absl::OkStatus();
}

int64_t NumPieces(const ScheduleOptions& options, int64_t count) {
  int64_t pieces = options.num_chunks;
  if (options.chunk_elements > 0) {
    pieces = count / options.chunk_elements +
             (count % options.chunk_elements != 0 ? 1 : 0);
  }
  return std::max<int64_t>(1, std::min(pieces, std::max<int64_t>(count, 1)));
}

BufferRange Piece(const BufferRange& range, int64_t pieces, int64_t index) {
  const Shard shard = ShardOf(range.count, pieces, index);
  return BufferRange{range.buffer, range.offset + shard.offset, shard.count};
}

ScheduleBuilder::ScheduleBuilder(CollectiveOp op, Algorithm algorithm,
                                 const ScheduleOptions& options) {
  schedule_.op = op;
  schedule_.algorithm = algorithm;
  schedule_.options = options;
  schedule_.ranks.resize(options.group_size);
  regions_.resize(static_cast<size_t>(options.group_size) * 3);
}

void ScheduleBuilder::SetBuffers(int32_t rank, int64_t input, int64_t output,
                                 int64_t scratch) {
  RankProgram& program = schedule_.ranks[rank];
  program.input_count = input;
  program.output_count = output;
  program.scratch_count = scratch;
  const int64_t sizes[3] = {input, output, scratch};
  for (int b = 0; b < 3; ++b) {
    RegionMap& regions = regions_[static_cast<size_t>(rank) * 3 + b];
    regions.clear();
    if (sizes[b] > 0) regions.emplace(0, Region{sizes[b], -1, {}});
  }
}

ScheduleBuilder::RegionMap& ScheduleBuilder::Regions(int32_t rank,
                                                     BufferKind buffer) {
  return regions_[static_cast<size_t>(rank) * 3 + static_cast<size_t>(buffer)];
}

void ScheduleBuilder::SplitAt(RegionMap& regions, int64_t position) {
  auto it = regions.upper_bound(position);
  if (it == regions.begin()) return;
  --it;
  if (it->first < position && position < it->second.end) {
    Region tail = it->second;
    it->second.end = position;
    regions.emplace(position, std::move(tail));
  }
}

void ScheduleBuilder::NoteRead(int32_t rank, const BufferRange& range,
                               int32_t step, StepDeps* deps) {
  if (range.count == 0) return;
  RegionMap& regions = Regions(rank, range.buffer);
  SplitAt(regions, range.offset);
  SplitAt(regions, range.end());
  for (auto it = regions.lower_bound(range.offset);
       it != regions.end() && it->first < range.end(); ++it) {
    if (it->second.writer >= 0) deps->push_back(it->second.writer);
    it->second.readers.push_back(step);
  }
}

void ScheduleBuilder::NoteWrite(int32_t rank, const BufferRange& range,
                                int32_t step, StepDeps* deps) {
  if (range.count == 0) return;
  RegionMap& regions = Regions(rank, range.buffer);
  SplitAt(regions, range.offset);
  SplitAt(regions, range.end());
  auto first = regions.lower_bound(range.offset);
  auto last = first;
  for (; last != regions.end() && last->first < range.end(); ++last) {
    if (last->second.writer >= 0) deps->push_back(last->second.writer);
    for (int32_t reader : last->second.readers) {
      if (reader != step) deps->push_back(reader);
    }
  }
  regions.erase(first, last);
  regions.emplace(range.offset, Region{range.end(), step, {}});
}

int32_t ScheduleBuilder::Append(int32_t rank, Step step) {
  StepDeps& deps = step.deps;
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  std::vector<Step>& steps = schedule_.ranks[rank].steps;
  steps.push_back(std::move(step));
  return static_cast<int32_t>(steps.size()) - 1;
}

int32_t ScheduleBuilder::Copy(int32_t rank, const BufferRange& src,
                              const BufferRange& dst) {
  if (src.count == 0) return -1;
  const int32_t index =
      static_cast<int32_t>(schedule_.ranks[rank].steps.size());
  Step step;
  step.kind = StepKind::kCopy;
  step.src = src;
  step.dst = dst;
  NoteRead(rank, src, index, &step.deps);
  NoteWrite(rank, dst, index, &step.deps);
  return Append(rank, std::move(step));
}

int32_t ScheduleBuilder::Reduce(int32_t rank, const BufferRange& src,
                                const BufferRange& dst) {
  if (src.count == 0) return -1;
  const int32_t index =
      static_cast<int32_t>(schedule_.ranks[rank].steps.size());
  Step step;
  step.kind = StepKind::kReduce;
  step.src = src;
  step.dst = dst;
  NoteRead(rank, src, index, &step.deps);
  NoteWrite(rank, dst, index, &step.deps);
  return Append(rank, std::move(step));
}

int64_t ScheduleBuilder::NextTag(int32_t from, int32_t to) {
  const int64_t channel =
      static_cast<int64_t>(from) * schedule_.options.group_size + to;
  return next_tag_[channel]++;
}

int32_t ScheduleBuilder::AppendSend(int32_t from, const BufferRange& src,
                                    int32_t to, int64_t tag,
                                    const std::vector<int32_t>& extra_deps) {
  Step send;
  send.kind = StepKind::kSend;
  send.peer = to;
  send.tag = tag;
  send.src = src;
  const int32_t send_index =
      static_cast<int32_t>(schedule_.ranks[from].steps.size());
  NoteRead(from, src, send_index, &send.deps);
  for (int32_t dep : extra_deps) {
    if (dep >= 0) send.deps.push_back(dep);
  }
  return Append(from, std::move(send));
}

int32_t ScheduleBuilder::AppendRecv(int32_t to, const BufferRange& dst,
                                    int32_t from, int64_t tag) {
  Step recv;
  recv.kind = StepKind::kRecv;
  recv.peer = from;
  recv.tag = tag;
  recv.dst = dst;
  const int32_t recv_index =
      static_cast<int32_t>(schedule_.ranks[to].steps.size());
  NoteWrite(to, dst, recv_index, &recv.deps);
  return Append(to, std::move(recv));
}

ScheduleBuilder::Transfer ScheduleBuilder::Send(
    int32_t from, const BufferRange& src, int32_t to, const BufferRange& dst,
    const std::vector<int32_t>& extra_send_deps, bool keep_empty) {
  Transfer transfer;
  if (src.count == 0 && !keep_empty) return transfer;
  const int64_t tag = NextTag(from, to);
  transfer.send = AppendSend(from, src, to, tag, extra_send_deps);
  transfer.recv = AppendRecv(to, dst, from, tag);
  return transfer;
}

void ScheduleBuilder::SendRound(const std::vector<Message>& round) {
  round_tags_.assign(round.size(), -1);
  for (size_t i = 0; i < round.size(); ++i) {
    const Message& m = round[i];
    if (m.src.count == 0) continue;
    round_tags_[i] = NextTag(m.from, m.to);
    AppendSend(m.from, m.src, m.to, round_tags_[i], {});
  }
  for (size_t i = 0; i < round.size(); ++i) {
    const Message& m = round[i];
    if (round_tags_[i] >= 0) AppendRecv(m.to, m.dst, m.from, round_tags_[i]);
  }
}

Schedule ScheduleBuilder::Finish() && { return std::move(schedule_); }

}  // namespace collective
}  // namespace distribute
