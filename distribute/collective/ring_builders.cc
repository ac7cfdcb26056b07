// Ring all-reduce, hierarchical all-reduce, ring reduce-scatter and ring
// all-gather (builders.h), all made of the phases in ring_phases.h.
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/status_macros.h"
#include "distribute/collective/builders.h"
#include "distribute/collective/ring_phases.h"
#include "distribute/collective/schedule.h"
#include "distribute/collective/schedule_builder.h"

namespace distribute {
namespace collective {

namespace {

std::vector<int32_t> AllRanks(int32_t n) {
  std::vector<int32_t> ranks(n);
  std::iota(ranks.begin(), ranks.end(), 0);
  return ranks;
}

BufferRange InputAt(int32_t, int64_t offset, int64_t count) {
  return InputRange(offset, count);
}
BufferRange OutputAt(int32_t, int64_t offset, int64_t count) {
  return OutputRange(offset, count);
}
BufferRange ScratchAt(int32_t, int64_t offset, int64_t count) {
  return ScratchRange(offset, count);
}

}  // namespace

absl::StatusOr<Schedule> BuildRingAllReduce(const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  const int32_t n = options.group_size;
  ScheduleBuilder builder(CollectiveOp::kAllReduce, Algorithm::kRing, options);
  for (int32_t r = 0; r < n; ++r) {
    builder.SetBuffers(r, options.count, options.count, 0);
  }
  RingReduceScatterPlan rs;
  rs.members = AllRanks(n);
  rs.length = options.count;
  rs.local = InputAt;
  rs.acc = OutputAt;
  AddRingReduceScatter(rs, options, &builder);
  RingAllGatherPlan ag;
  ag.members = rs.members;
  ag.length = options.count;
  ag.own = OutputAt;
  ag.dst = OutputAt;
  AddRingAllGather(ag, options, &builder);
  return std::move(builder).Finish();
}

namespace {

// The grid of a hierarchical schedule (ScheduleOptions::dims, or
// {ranks_per_node, nodes}) without its dimensions of one rank, which add no
// step; {1} for a group of one rank. INVALID_ARGUMENT naming `what` for
// dimensions that do not hold the group.
absl::StatusOr<std::vector<int32_t>> GridOf(const ScheduleOptions& options,
                                            absl::string_view what) {
  const int32_t n = options.group_size;
  std::vector<int32_t> dims = options.dims;
  if (dims.empty()) {
    const int32_t per_node = options.ranks_per_node;
    if (per_node < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hierarchical ", what,
          " needs ranks_per_node >= 1 (ranks [k*L, (k+1)*L) share node k), "
          "got ",
          per_node));
    }
    if (n % per_node != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hierarchical ", what,
          " needs a group size that is a multiple of ranks_per_node: group "
          "size ",
          n, " is not a multiple of ", per_node,
          "; use the ring or tree algorithm for uneven nodes"));
    }
    dims = {per_node, n / per_node};
  } else {
    int64_t product = 1;
    for (int32_t d : dims) {
      if (d < 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "hierarchical ", what, ": every dimension must be >= 1, got ",
            absl::StrJoin(dims, "x")));
      }
      product *= d;
    }
    if (product != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hierarchical ", what, ": dimensions ", absl::StrJoin(dims, "x"),
          " hold ", product, " ranks, not the group's ", n));
    }
  }
  std::vector<int32_t> grid;
  for (int32_t d : dims) {
    if (d > 1) grid.push_back(d);
  }
  if (grid.empty()) grid.push_back(1);
  return grid;
}

// An all-gather's buffers (input: the rank's shard; output: everything)
// and the copy of every rank's own shard into its output.
void AllGatherBuffersAndOwnShards(const ScheduleOptions& options,
                                  ScheduleBuilder& builder) {
  const int32_t n = options.group_size;
  const int64_t count = options.count;
  for (int32_t r = 0; r < n; ++r) {
    builder.SetBuffers(r, ShardOf(count, n, r).count, count, 0);
  }
  for (int32_t r = 0; r < n; ++r) {
    const Shard own = ShardOf(count, n, r);
    const int64_t pieces = NumPieces(options, own.count);
    for (int64_t c = 0; c < pieces; ++c) {
      const Shard piece = ShardOf(own.count, pieces, c);
      builder.Copy(r, InputRange(piece.offset, piece.count),
                   OutputRange(own.offset + piece.offset, piece.count));
    }
  }
}

// Rank strides of a grid: stride[k] = grid[0] * ... * grid[k-1], and
// stride[levels] = the group size.
std::vector<int64_t> Strides(const std::vector<int32_t>& grid) {
  std::vector<int64_t> stride(grid.size() + 1, 1);
  for (size_t k = 1; k <= grid.size(); ++k) {
    stride[k] = stride[k - 1] * grid[k - 1];
  }
  return stride;
}

// The elements of the reduce-scatter shards of ranks [first, first + ranks).
Shard ShardsOf(int64_t count, int32_t n, int64_t first, int64_t ranks) {
  const Shard a = ShardOf(count, n, first);
  const Shard b = ShardOf(count, n, first + ranks - 1);
  return Shard{a.offset, b.offset + b.count - a.offset};
}

// A level-k group of a grid (the ranks that differ from `first` only in
// coordinate k, which is 0 in `first`) as a ring plan's members, range and
// segments: member j's segment is the shards of the ranks that share its
// coordinates from k up, so the group's range is those of the ranks that
// share first's coordinates above k.
struct GridGroup {
  std::vector<int32_t> members;
  Shard range;
  SegmentFn segment;
};
// The ranks that differ from `first` (whose coordinate `level` is 0) only
// in coordinate `level`, in order.
std::vector<int32_t> GridMembers(const std::vector<int32_t>& grid,
                                 const std::vector<int64_t>& stride,
                                 int32_t first, size_t level) {
  std::vector<int32_t> members;
  for (int32_t c = 0; c < grid[level]; ++c) {
    members.push_back(static_cast<int32_t>(first + c * stride[level]));
  }
  return members;
}

GridGroup GridGroupOf(const std::vector<int32_t>& grid,
                      const std::vector<int64_t>& stride, int64_t count,
                      int32_t first, size_t level) {
  const int32_t n = static_cast<int32_t>(stride.back());
  GridGroup g;
  g.members = GridMembers(grid, stride, first, level);
  const int64_t block = first / stride[level + 1] * stride[level + 1];
  g.range = ShardsOf(count, n, block, stride[level + 1]);
  const int64_t per = stride[level];
  const int64_t base = g.range.offset;
  g.segment = [count, n, block, per, base](int64_t x) {
    const Shard s = ShardsOf(count, n, block + x * per, per);
    return Shard{s.offset - base, s.count};
  };
  return g;
}

// The first rank of every level-k group, in rank order.
std::vector<int32_t> GridLeaders(const std::vector<int32_t>& grid,
                                 const std::vector<int64_t>& stride,
                                 size_t level) {
  std::vector<int32_t> out;
  for (int32_t r = 0; r < stride.back(); ++r) {
    if (r / stride[level] % grid[level] == 0) out.push_back(r);
  }
  return out;
}

}  // namespace

absl::StatusOr<Schedule> BuildHierarchicalAllReduce(
    const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  const int32_t n = options.group_size;
  ASSIGN_OR_RETURN(std::vector<int32_t> grid_or, GridOf(options, "all-reduce"));
  const std::vector<int32_t> grid = std::move(grid_or);
  const int32_t levels = static_cast<int32_t>(grid.size());
  ScheduleBuilder builder(CollectiveOp::kAllReduce, Algorithm::kHierarchical,
                          options);
  for (int32_t r = 0; r < n; ++r) {
    builder.SetBuffers(r, options.count, options.count,
                       levels > 1 ? options.count : 0);
  }
  const int64_t count = options.count;
  const std::vector<int64_t> stride = Strides(grid);
  // The range a rank reduces at level k: shard c0 of the whole, then shard
  // c1 of that, ..., shard c_{k-1}: what the ranks of its level-k group
  // (equal in every coordinate but c_k) share.
  auto range_at = [&](int32_t rank, int32_t level) {
    Shard range{0, count};
    for (int32_t k = 0; k < level; ++k) {
      const int32_t c = static_cast<int32_t>(rank / stride[k] % grid[k]);
      const Shard sub = ShardOf(range.count, grid[k], c);
      range = Shard{range.offset + sub.offset, sub.count};
    }
    return range;
  };
  auto group_of = [&](int32_t first, int32_t level) {
    return GridMembers(grid, stride, first, static_cast<size_t>(level));
  };
  auto leaders = [&](int32_t level) {
    return GridLeaders(grid, stride, static_cast<size_t>(level));
  };
  // All-gather of a level-k group's range (in place in the output).
  auto all_gather = [&](int32_t first, int32_t level) {
    const Shard range = range_at(first, level);
    RingAllGatherPlan ag;
    ag.members = group_of(first, level);
    ag.base = range.offset;
    ag.length = range.count;
    ag.own = OutputAt;
    ag.dst = OutputAt;
    AddRingAllGather(ag, options, &builder);
  };
  // 1. Reduce-scatter level by level: after level k a rank holds the sum,
  //    over its level-0..k groups, of its range at level k+1. Level 0 reads
  //    the input; the others reduce in place in the output.
  for (int32_t level = 0; level < levels; ++level) {
    for (int32_t first : leaders(level)) {
      const Shard range = range_at(first, level);
      RingReduceScatterPlan rs;
      rs.members = group_of(first, level);
      rs.base = range.offset;
      rs.length = range.count;
      rs.local = level == 0 ? InputAt : OutputAt;
      rs.acc = OutputAt;
      if (level > 0) rs.tmp = ScratchAt;
      AddRingReduceScatter(rs, options, &builder);
      // 2. The last level all-gathers at once what it reduced.
      if (level == levels - 1) all_gather(first, level);
    }
  }
  // 3. All-gather the other levels, last to first.
  for (int32_t level = levels - 2; level >= 0; --level) {
    for (int32_t first : leaders(level)) all_gather(first, level);
  }
  return std::move(builder).Finish();
}

absl::StatusOr<Schedule> BuildRingReduceScatter(
    const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  const int32_t n = options.group_size;
  const int64_t count = options.count;
  ScheduleBuilder builder(CollectiveOp::kReduceScatter, Algorithm::kRing,
                          options);
  for (int32_t r = 0; r < n; ++r) {
    builder.SetBuffers(r, count, ShardOf(count, n, r).count, n > 1 ? count : 0);
  }
  RingReduceScatterPlan rs;
  rs.members = AllRanks(n);
  rs.length = count;
  rs.local = InputAt;
  // A rank accumulates its own shard straight into its output and the
  // partial sums it passes on in scratch, at their global positions.
  rs.acc = [count, n](int32_t rank, int64_t offset, int64_t size) {
    const Shard own = ShardOf(count, n, rank);
    if (offset >= own.offset && offset < own.offset + own.count) {
      return OutputRange(offset - own.offset, size);
    }
    return ScratchRange(offset, size);
  };
  AddRingReduceScatter(rs, options, &builder);
  return std::move(builder).Finish();
}

absl::StatusOr<Schedule> BuildRingAllGather(const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  const int32_t n = options.group_size;
  const int64_t count = options.count;
  ScheduleBuilder builder(CollectiveOp::kAllGather, Algorithm::kRing, options);
  // Every rank places its own shard in its output; the ring passes the
  // shards on from the input (first round) and then from the output.
  AllGatherBuffersAndOwnShards(options, builder);
  RingAllGatherPlan ag;
  ag.members = AllRanks(n);
  ag.length = count;
  ag.own = [count, n](int32_t rank, int64_t offset, int64_t size) {
    return InputRange(offset - ShardOf(count, n, rank).offset, size);
  };
  ag.dst = OutputAt;
  AddRingAllGather(ag, options, &builder);
  return std::move(builder).Finish();
}

absl::StatusOr<Schedule> BuildHierarchicalReduceScatter(
    const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  const int32_t n = options.group_size;
  const int64_t count = options.count;
  ASSIGN_OR_RETURN(std::vector<int32_t> grid_or,
                   GridOf(options, "reduce-scatter"));
  const std::vector<int32_t> grid = std::move(grid_or);
  const std::vector<int64_t> stride = Strides(grid);
  const int levels = static_cast<int>(grid.size());
  ScheduleBuilder builder(CollectiveOp::kReduceScatter,
                          Algorithm::kHierarchical, options);
  // Scratch: partial sums at their global positions, and (with more than
  // one level) what a ring receives before it is added in, after them.
  const int64_t scratch = n == 1 ? 0 : (levels > 1 ? 2 * count : count);
  for (int32_t r = 0; r < n; ++r) {
    builder.SetBuffers(r, count, ShardOf(count, n, r).count, scratch);
  }
  // The last dimension first: each level leaves a member the sum, over the
  // levels so far, of the shards of the ranks that share its coordinates
  // from that level up, so after level 0 it holds its own shard.
  for (int level = levels - 1; level >= 0; --level) {
    for (int32_t first :
         GridLeaders(grid, stride, static_cast<size_t>(level))) {
      GridGroup g =
          GridGroupOf(grid, stride, count, first, static_cast<size_t>(level));
      RingReduceScatterPlan rs;
      rs.base = g.range.offset;
      rs.length = g.range.count;
      rs.segment = g.segment;
      const bool first_level = level == levels - 1;
      rs.local = first_level ? InputAt : ScratchAt;
      if (level == 0) {
        // Sums of the member's own shard go to its output; the others it
        // passes on wait in the receive area (or, on one level, the sums).
        const int64_t spare = levels > 1 ? count : 0;
        rs.acc = [count, n, spare, members = g.members](
                     int32_t member, int64_t offset, int64_t size) {
          const Shard own =
              ShardOf(count, n, members[static_cast<size_t>(member)]);
          if (offset >= own.offset && offset < own.offset + own.count) {
            return OutputRange(offset - own.offset, size);
          }
          return ScratchRange(spare + offset, size);
        };
      } else if (first_level) {
        rs.acc = ScratchAt;
      } else {
        rs.acc = ScratchAt;
        rs.tmp = [count](int32_t, int64_t offset, int64_t size) {
          return ScratchRange(count + offset, size);
        };
      }
      rs.members = std::move(g.members);
      AddRingReduceScatter(rs, options, &builder);
    }
  }
  return std::move(builder).Finish();
}

absl::StatusOr<Schedule> BuildHierarchicalAllGather(
    const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  const int64_t count = options.count;
  ASSIGN_OR_RETURN(std::vector<int32_t> grid_or, GridOf(options, "all-gather"));
  const std::vector<int32_t> grid = std::move(grid_or);
  const std::vector<int64_t> stride = Strides(grid);
  ScheduleBuilder builder(CollectiveOp::kAllGather, Algorithm::kHierarchical,
                          options);
  AllGatherBuffersAndOwnShards(options, builder);
  // The first dimension first, in place in the output: each level leaves a
  // member the shards of every rank that shares its coordinates above it.
  for (size_t level = 0; level < grid.size(); ++level) {
    for (int32_t first : GridLeaders(grid, stride, level)) {
      GridGroup g = GridGroupOf(grid, stride, count, first, level);
      RingAllGatherPlan ag;
      ag.members = std::move(g.members);
      ag.base = g.range.offset;
      ag.length = g.range.count;
      ag.segment = g.segment;
      ag.own = OutputAt;
      ag.dst = OutputAt;
      AddRingAllGather(ag, options, &builder);
    }
  }
  return std::move(builder).Finish();
}

}  // namespace collective
}  // namespace distribute
