// All-to-all and barrier builders, and the dispatch by operation and
// algorithm (builders.h).
#include "distribute/collective/builders.h"

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/collective/schedule.h"
#include "distribute/collective/schedule_builder.h"

namespace distribute {
namespace collective {

namespace {

absl::Status Unsupported(CollectiveOp op, Algorithm algorithm,
                         absl::string_view supported) {
  return absl::InvalidArgumentError(absl::StrCat(
      "algorithm '", AlgorithmName(algorithm), "' does not implement ",
      OpName(op), "; use one of: ", supported));
}

}  // namespace

absl::StatusOr<Schedule> BuildPairwiseAllToAll(const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  const int32_t n = options.group_size;
  const int64_t block = options.count;
  ScheduleBuilder builder(CollectiveOp::kAllToAll, Algorithm::kPairwise,
                          options);
  for (int32_t r = 0; r < n; ++r) {
    builder.SetBuffers(r, n * block, n * block, 0);
  }
  const int64_t pieces = NumPieces(options, block);
  for (int32_t k = 0; k < n; ++k) {
    for (int64_t c = 0; c < pieces; ++c) {
      const Shard piece = ShardOf(block, pieces, c);
      if (piece.count == 0) continue;
      for (int32_t r = 0; r < n; ++r) {
        const int32_t to = (r + k) % n;
        const BufferRange src =
            InputRange(to * block + piece.offset, piece.count);
        const BufferRange dst =
            OutputRange(r * block + piece.offset, piece.count);
        if (k == 0) {
          builder.Copy(r, src, dst);
        } else {
          builder.Send(r, src, to, dst);
        }
      }
    }
  }
  return std::move(builder).Finish();
}

absl::StatusOr<Schedule> BuildDisseminationBarrier(
    const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  if (options.count != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a barrier carries no data: count must be 0, got ", options.count));
  }
  const int32_t n = options.group_size;
  ScheduleBuilder builder(CollectiveOp::kBarrier, Algorithm::kDissemination,
                          options);
  for (int32_t r = 0; r < n; ++r) builder.SetBuffers(r, 0, 0, 0);
  // A round's send waits for the previous round's receive and send, so it
  // carries everything the rank has heard so far.
  std::vector<int32_t> last_recv(n, -1);
  std::vector<int32_t> last_send(n, -1);
  const BufferRange empty_in = InputRange(0, 0);
  const BufferRange empty_out = OutputRange(0, 0);
  for (int64_t d = 1; d < n; d *= 2) {
    std::vector<int32_t> recv(n, -1);
    for (int32_t r = 0; r < n; ++r) {
      const int32_t to = static_cast<int32_t>((r + d) % n);
      const ScheduleBuilder::Transfer t =
          builder.Send(r, empty_in, to, empty_out, {last_recv[r], last_send[r]},
                       /*keep_empty=*/true);
      recv[to] = t.recv;
      last_send[r] = t.send;
    }
    last_recv = recv;
  }
  return std::move(builder).Finish();
}

namespace {

// Channel c's order of the ranks: virtual rank v (node v / L, local v % L)
// is real rank node * L + (local + c) mod (that node's size).
std::vector<int32_t> ChannelOrder(int32_t n, int32_t per_node, int32_t c) {
  const int32_t L = per_node <= 0 ? n : std::min(per_node, n);
  std::vector<int32_t> real(n);
  for (int32_t v = 0; v < n; ++v) {
    const int32_t base = v / L * L;
    const int32_t size = std::min(L, n - base);
    real[v] = base + (v - base + c) % size;
  }
  return real;
}

// For every step (rounds[rank][index]), the round in which it is issued
// when every rank issues each step as soon as its deps have completed: one
// more than the latest completion among its deps (0 without deps). A
// reduction or copy completes in its own round; a send and its receive
// complete together, in the later of their two rounds (sends rendezvous).
// Deps always precede a step in its rank's round order. Requires a schedule
// whose steps all match and whose dependences are acyclic, as every builder
// makes.
std::vector<std::vector<int64_t>> IssueRounds(const Schedule& schedule) {
  const int32_t n = schedule.group_size();
  // Steps by global id: offset[r] + index. Flat arrays: a channel of a ring
  // over hundreds of ranks has millions of steps.
  std::vector<int64_t> offset(static_cast<size_t>(n) + 1, 0);
  for (int32_t r = 0; r < n; ++r) {
    offset[r + 1] =
        offset[r] + static_cast<int64_t>(schedule.ranks[r].steps.size());
  }
  const int64_t total = offset[n];
  std::vector<int32_t> rank_of(static_cast<size_t>(total));
  for (int32_t r = 0; r < n; ++r) {
    std::fill(rank_of.begin() + offset[r], rank_of.begin() + offset[r + 1], r);
  }
  std::vector<int64_t> issue(static_cast<size_t>(total), -1);
  std::vector<int64_t> complete(static_cast<size_t>(total), -1);
  std::vector<int32_t> pending(static_cast<size_t>(total), 0);
  std::vector<int64_t> partner(static_cast<size_t>(total), -1);
  // Each step's dependents (steps of its rank that wait for it), as one
  // array sliced by first_dependent.
  std::vector<int64_t> first_dependent(static_cast<size_t>(total) + 1, 0);
  absl::flat_hash_map<std::tuple<int32_t, int32_t, int64_t>, int64_t> sends;
  for (int32_t r = 0; r < n; ++r) {
    const auto& steps = schedule.ranks[r].steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      const int64_t id = offset[r] + static_cast<int64_t>(i);
      pending[id] = static_cast<int32_t>(steps[i].deps.size());
      for (int32_t d : steps[i].deps) ++first_dependent[offset[r] + d + 1];
      if (steps[i].kind == StepKind::kSend) {
        sends[{r, steps[i].peer, steps[i].tag}] = id;
      }
    }
  }
  for (int64_t id = 0; id < total; ++id) {
    first_dependent[id + 1] += first_dependent[id];
  }
  std::vector<int64_t> dependents(static_cast<size_t>(first_dependent[total]));
  {
    std::vector<int64_t> fill(first_dependent.begin(),
                              first_dependent.end() - 1);
    for (int32_t r = 0; r < n; ++r) {
      const auto& steps = schedule.ranks[r].steps;
      for (size_t i = 0; i < steps.size(); ++i) {
        for (int32_t d : steps[i].deps) {
          dependents[fill[offset[r] + d]++] =
              offset[r] + static_cast<int64_t>(i);
        }
      }
    }
  }
  for (int32_t r = 0; r < n; ++r) {
    const auto& steps = schedule.ranks[r].steps;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i].kind != StepKind::kRecv) continue;
      auto it = sends.find({steps[i].peer, r, steps[i].tag});
      if (it == sends.end()) continue;
      const int64_t id = offset[r] + static_cast<int64_t>(i);
      partner[id] = it->second;
      partner[it->second] = id;
    }
  }
  std::vector<int64_t> ready;
  for (int64_t id = 0; id < total; ++id) {
    if (pending[id] == 0) ready.push_back(id);
  }
  std::vector<int64_t> done;
  while (!ready.empty()) {
    const int64_t id = ready.back();
    ready.pop_back();
    const int32_t r = rank_of[static_cast<size_t>(id)];
    const Step& step =
        schedule.ranks[r].steps[static_cast<size_t>(id - offset[r])];
    int64_t round = 0;
    for (int32_t d : step.deps) {
      round = std::max(round, complete[offset[r] + d] + 1);
    }
    issue[id] = round;
    done.clear();
    const int64_t p = partner[id];
    if (p < 0) {
      complete[id] = round;
      done.push_back(id);
    } else if (issue[p] >= 0) {
      const int64_t both = std::max(round, issue[p]);
      complete[id] = complete[p] = both;
      done.push_back(id);
      done.push_back(p);
    }
    for (const int64_t d : done) {
      for (int64_t k = first_dependent[d]; k < first_dependent[d + 1]; ++k) {
        if (--pending[dependents[k]] == 0) ready.push_back(dependents[k]);
      }
    }
  }
  // Steps never reached (an unmatched message) keep their program order
  // after everything else.
  int64_t last = 0;
  for (int64_t round : issue) last = std::max(last, round);
  std::vector<std::vector<int64_t>> out(static_cast<size_t>(n));
  for (int32_t r = 0; r < n; ++r) {
    out[r].reserve(static_cast<size_t>(offset[r + 1] - offset[r]));
    for (int64_t id = offset[r]; id < offset[r + 1]; ++id) {
      out[r].push_back(issue[id] < 0 ? last + 1 : issue[id]);
    }
  }
  return out;
}

absl::StatusOr<Schedule> BuildChannels(CollectiveOp op, Algorithm algorithm,
                                       const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  if (op != CollectiveOp::kAllReduce && op != CollectiveOp::kBroadcast &&
      op != CollectiveOp::kReduce) {
    return absl::InvalidArgumentError(absl::StrCat(
        OpName(op), " runs on one channel (num_channels ", options.num_channels,
        "); channels split all-reduce, broadcast and reduce"));
  }
  const int32_t n = options.group_size;
  const int32_t channels = static_cast<int32_t>(std::max<int64_t>(
      1, std::min<int64_t>(options.num_channels, options.count)));
  struct Channel {
    Schedule schedule;
    std::vector<int32_t> real;  // virtual rank -> real rank
    std::vector<int32_t> virt;  // real rank -> virtual rank
    int64_t offset = 0;         // of its slice of the elements
  };
  std::vector<Channel> parts(channels);
  for (int32_t c = 0; c < channels; ++c) {
    Channel& part = parts[c];
    part.real = ChannelOrder(n, options.ranks_per_node, c);
    part.virt.resize(n);
    for (int32_t v = 0; v < n; ++v) part.virt[part.real[v]] = v;
    const Shard slice = ShardOf(options.count, channels, c);
    part.offset = slice.offset;
    ScheduleOptions sub = options;
    sub.num_channels = 1;
    sub.count = slice.count;
    sub.root = part.virt[options.root];
    ASSIGN_OR_RETURN(Schedule built, BuildSchedule(op, algorithm, sub));
    part.schedule = std::move(built);
  }
  Schedule out;
  out.op = op;
  out.algorithm = parts[0].schedule.algorithm;
  out.options = options;
  out.ranks.resize(n);
  // Every rank's steps of all channels, ordered by the round in which a
  // step could be issued if every rank issued each step as soon as its deps
  // allowed (IssueRounds). Issuing in that order cannot deadlock: a step of
  // round k waits only for steps of lower rounds, on every rank. Interleaving
  // the channels by position instead can: a rank blocked in one channel
  // stops its others, whose peers then wait for them.
  struct Entry {
    int64_t round;
    int32_t channel;
    int32_t index;
  };
  std::vector<std::vector<std::vector<int64_t>>> rounds(channels);
  for (int32_t c = 0; c < channels; ++c) {
    rounds[c] = IssueRounds(parts[c].schedule);
  }
  for (int32_t r = 0; r < n; ++r) {
    RankProgram& program = out.ranks[r];
    std::vector<int64_t> scratch_base(channels);
    std::vector<Entry> order;
    for (int32_t c = 0; c < channels; ++c) {
      const int32_t v = parts[c].virt[r];
      const RankProgram& source = parts[c].schedule.ranks[v];
      program.input_count += source.input_count;
      program.output_count += source.output_count;
      scratch_base[c] = program.scratch_count;
      program.scratch_count += source.scratch_count;
      for (size_t i = 0; i < source.steps.size(); ++i) {
        order.push_back({rounds[c][v][i], c, static_cast<int32_t>(i)});
      }
    }
    std::stable_sort(order.begin(), order.end(),
                     [](const Entry& a, const Entry& b) {
                       if (a.round != b.round) return a.round < b.round;
                       if (a.channel != b.channel) return a.channel < b.channel;
                       return a.index < b.index;
                     });
    std::vector<std::vector<int32_t>> index(channels);
    for (int32_t c = 0; c < channels; ++c) {
      index[c].assign(parts[c].schedule.ranks[parts[c].virt[r]].steps.size(),
                      -1);
    }
    program.steps.reserve(order.size());
    for (const Entry& entry : order) {
      const int32_t c = entry.channel;
      // Moved out: each channel's program of this rank is read once.
      Step step = std::move(
          parts[c].schedule.ranks[parts[c].virt[r]].steps[entry.index]);
      auto shift = [&](BufferRange& range) {
        if (range.count == 0 && range.offset == 0) return;
        range.offset += range.buffer == BufferKind::kScratch ? scratch_base[c]
                                                             : parts[c].offset;
      };
      shift(step.src);
      shift(step.dst);
      if (step.peer >= 0) step.peer = parts[c].real[step.peer];
      if (step.tag >= 0) step.tag = step.tag * channels + c;
      for (int32_t& dep : step.deps) dep = index[c][dep];
      std::sort(step.deps.begin(), step.deps.end());
      index[c][entry.index] = static_cast<int32_t>(program.steps.size());
      program.steps.push_back(std::move(step));
    }
    for (int32_t c = 0; c < channels; ++c) {
      std::vector<Step>().swap(parts[c].schedule.ranks[parts[c].virt[r]].steps);
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<Schedule> BuildAllReduce(Algorithm algorithm,
                                        const ScheduleOptions& options) {
  if (options.num_channels > 1) {
    return BuildChannels(CollectiveOp::kAllReduce, algorithm, options);
  }
  switch (algorithm) {
    case Algorithm::kRing:
      return BuildRingAllReduce(options);
    case Algorithm::kDoubleBinaryTree:
      return BuildDoubleBinaryTreeAllReduce(options);
    case Algorithm::kRecursiveHalvingDoubling:
      return BuildRecursiveHalvingDoublingAllReduce(options);
    case Algorithm::kDirect:
      return BuildDirectAllReduce(options);
    case Algorithm::kHierarchical:
      return BuildHierarchicalAllReduce(options);
    default:
      return Unsupported(CollectiveOp::kAllReduce, algorithm,
                         "ring, tree, rhd, direct, hierarchical");
  }
}

absl::StatusOr<Schedule> BuildReduceScatter(Algorithm algorithm,
                                            const ScheduleOptions& options) {
  if (options.num_channels > 1) {
    return BuildChannels(CollectiveOp::kReduceScatter, algorithm, options);
  }
  if (algorithm == Algorithm::kRing) return BuildRingReduceScatter(options);
  if (algorithm == Algorithm::kHierarchical) {
    return BuildHierarchicalReduceScatter(options);
  }
  return Unsupported(CollectiveOp::kReduceScatter, algorithm,
                     "ring, hierarchical");
}

absl::StatusOr<Schedule> BuildAllGather(Algorithm algorithm,
                                        const ScheduleOptions& options) {
  if (options.num_channels > 1) {
    return BuildChannels(CollectiveOp::kAllGather, algorithm, options);
  }
  if (algorithm == Algorithm::kRing) return BuildRingAllGather(options);
  if (algorithm == Algorithm::kHierarchical) {
    return BuildHierarchicalAllGather(options);
  }
  return Unsupported(CollectiveOp::kAllGather, algorithm, "ring, hierarchical");
}

absl::StatusOr<Schedule> BuildBroadcast(Algorithm algorithm,
                                        const ScheduleOptions& options) {
  if (options.num_channels > 1) {
    return BuildChannels(CollectiveOp::kBroadcast, algorithm, options);
  }
  if (algorithm == Algorithm::kChain) return BuildChainBroadcast(options);
  if (algorithm == Algorithm::kBinaryTree) return BuildTreeBroadcast(options);
  return Unsupported(CollectiveOp::kBroadcast, algorithm, "chain, binary_tree");
}

absl::StatusOr<Schedule> BuildReduce(Algorithm algorithm,
                                     const ScheduleOptions& options) {
  if (options.num_channels > 1) {
    return BuildChannels(CollectiveOp::kReduce, algorithm, options);
  }
  if (algorithm == Algorithm::kChain) return BuildChainReduce(options);
  if (algorithm == Algorithm::kBinaryTree) return BuildTreeReduce(options);
  return Unsupported(CollectiveOp::kReduce, algorithm, "chain, binary_tree");
}

absl::StatusOr<Schedule> BuildAllToAll(Algorithm algorithm,
                                       const ScheduleOptions& options) {
  if (options.num_channels > 1) {
    return BuildChannels(CollectiveOp::kAllToAll, algorithm, options);
  }
  if (algorithm == Algorithm::kPairwise) return BuildPairwiseAllToAll(options);
  return Unsupported(CollectiveOp::kAllToAll, algorithm, "pairwise");
}

absl::StatusOr<Schedule> BuildBarrier(Algorithm algorithm,
                                      const ScheduleOptions& options) {
  if (options.num_channels > 1) {
    return BuildChannels(CollectiveOp::kBarrier, algorithm, options);
  }
  if (algorithm == Algorithm::kDissemination) {
    return BuildDisseminationBarrier(options);
  }
  return Unsupported(CollectiveOp::kBarrier, algorithm, "dissemination");
}

absl::StatusOr<Schedule> BuildSchedule(CollectiveOp op, Algorithm algorithm,
                                       const ScheduleOptions& options) {
  switch (op) {
    case CollectiveOp::kAllReduce:
      return BuildAllReduce(algorithm, options);
    case CollectiveOp::kReduceScatter:
      return BuildReduceScatter(algorithm, options);
    case CollectiveOp::kAllGather:
      return BuildAllGather(algorithm, options);
    case CollectiveOp::kBroadcast:
      return BuildBroadcast(algorithm, options);
    case CollectiveOp::kReduce:
      return BuildReduce(algorithm, options);
    case CollectiveOp::kAllToAll:
      return BuildAllToAll(algorithm, options);
    case CollectiveOp::kBarrier:
      return BuildBarrier(algorithm, options);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown collective operation ", static_cast<int>(op)));
}

}  // namespace collective
}  // namespace distribute
