// Tree- and chain-shaped schedules (builders.h): the double-binary-tree
// all-reduce, and broadcast and reduce along a chain or a heap binary tree.
// All are the same two passes over a RankTree: reduce towards the root
// (post-order), broadcast away from it (pre-order), pipelined in pieces.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "devices/status_macros.h"
#include "distribute/collective/builders.h"
#include "distribute/collective/issue_order.h"
#include "distribute/collective/rank_tree.h"
#include "distribute/collective/schedule.h"
#include "distribute/collective/schedule_builder.h"

namespace distribute {
namespace collective {

namespace {

// Where a rank keeps the elements [offset, offset + count) of the data.
using PlaceFn = std::function<BufferRange(int32_t, int64_t, int64_t)>;

// Reduces piece [offset, offset + count) towards the root of `tree`. A node
// with children receives its first child's partial sum into acc, adds its
// own input (acc = child0 + input), then receives the second into tmp and
// adds it (acc += tmp); a leaf sends its input itself. The root's acc ends
// with the reduction ((c0 + x) + c1) of the whole tree.
void ReduceUp(const RankTree& tree, int64_t offset, int64_t count,
              const PlaceFn& acc, const PlaceFn& tmp,
              ScheduleBuilder* builder) {
  const BufferRange input = InputRange(offset, count);
  for (int32_t node : tree.PostOrder()) {
    const std::vector<int32_t>& children = tree.nodes[node].children;
    if (children.empty()) {
      if (node == tree.root)
        builder->Copy(node, input, acc(node, offset, count));
      continue;
    }
    const BufferRange node_acc = acc(node, offset, count);
    for (size_t i = 0; i < children.size(); ++i) {
      const int32_t child = children[i];
      const BufferRange child_src = tree.nodes[child].children.empty()
                                        ? input
                                        : acc(child, offset, count);
      if (i == 0) {
        builder->Send(child, child_src, node, node_acc);
        builder->Reduce(node, input, node_acc);
      } else {
        const BufferRange node_tmp = tmp(node, offset, count);
        builder->Send(child, child_src, node, node_tmp);
        builder->Reduce(node, node_tmp, node_acc);
      }
    }
  }
}

// Sends piece [offset, offset + count) from the root (where it is at
// root_src) to every node's output, parents before children.
void BroadcastDown(const RankTree& tree, int64_t offset, int64_t count,
                   const BufferRange& root_src, ScheduleBuilder* builder) {
  const BufferRange output = OutputRange(offset, count);
  for (int32_t node : tree.PreOrder()) {
    const BufferRange src = node == tree.root ? root_src : output;
    for (int32_t child : tree.nodes[node].children) {
      builder->Send(node, src, child, output);
    }
  }
}

BufferRange OutputPlace(int32_t, int64_t offset, int64_t count) {
  return OutputRange(offset, count);
}
BufferRange ScratchPlace(int32_t, int64_t offset, int64_t count) {
  return ScratchRange(offset, count);
}

absl::StatusOr<Schedule> BuildTreeShapedBroadcast(
    const ScheduleOptions& options, Algorithm algorithm, const RankTree& tree) {
  ScheduleBuilder builder(CollectiveOp::kBroadcast, algorithm, options);
  for (int32_t r = 0; r < options.group_size; ++r) {
    builder.SetBuffers(r, r == options.root ? options.count : 0, options.count,
                       0);
  }
  const int64_t pieces = NumPieces(options, options.count);
  for (int64_t c = 0; c < pieces; ++c) {
    const Shard piece = ShardOf(options.count, pieces, c);
    const BufferRange input = InputRange(piece.offset, piece.count);
    builder.Copy(options.root, input, OutputRange(piece.offset, piece.count));
    BroadcastDown(tree, piece.offset, piece.count, input, &builder);
  }
  return std::move(builder).Finish();
}

absl::StatusOr<Schedule> BuildTreeShapedReduce(const ScheduleOptions& options,
                                               Algorithm algorithm,
                                               const RankTree& tree) {
  const int64_t count = options.count;
  const int32_t root = options.root;
  ScheduleBuilder builder(CollectiveOp::kReduce, algorithm, options);
  // The root accumulates in its output and receives its second child into
  // scratch[0, count); other interior nodes accumulate in scratch[0, count)
  // and receive their second child into scratch[count, 2 * count).
  for (int32_t r = 0; r < options.group_size; ++r) {
    const int64_t children =
        static_cast<int64_t>(tree.nodes[r].children.size());
    const int64_t scratch =
        r == root ? (children > 1 ? count : 0)
                  : (children == 0 ? 0 : (children > 1 ? 2 * count : count));
    builder.SetBuffers(r, count, r == root ? count : 0, scratch);
  }
  const PlaceFn acc = [root](int32_t rank, int64_t offset, int64_t size) {
    return rank == root ? OutputRange(offset, size)
                        : ScratchRange(offset, size);
  };
  const PlaceFn tmp = [root, count](int32_t rank, int64_t offset,
                                    int64_t size) {
    return ScratchRange(rank == root ? offset : count + offset, size);
  };
  const int64_t pieces = NumPieces(options, count);
  for (int64_t c = 0; c < pieces; ++c) {
    const Shard piece = ShardOf(count, pieces, c);
    ReduceUp(tree, piece.offset, piece.count, acc, tmp, &builder);
  }
  return std::move(builder).Finish();
}

}  // namespace

absl::StatusOr<Schedule> BuildDoubleBinaryTreeAllReduce(
    const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  const int32_t n = options.group_size;
  const int64_t count = options.count;
  const RankTree trees[2] = {InOrderBinaryTree(n), ComplementaryBinaryTree(n)};
  ScheduleBuilder builder(CollectiveOp::kAllReduce,
                          Algorithm::kDoubleBinaryTree, options);
  for (int32_t r = 0; r < n; ++r) {
    const bool two_children = trees[0].nodes[r].children.size() > 1 ||
                              trees[1].nodes[r].children.size() > 1;
    builder.SetBuffers(r, count, count, two_children ? count : 0);
  }
  // Tree t carries half t of the data, in pieces.
  Shard halves[2];
  int64_t pieces[2];
  for (int t = 0; t < 2; ++t) {
    halves[t] = ShardOf(count, 2, t);
    pieces[t] = NumPieces(options, halves[t].count);
  }
  auto piece_of = [&](int t, int64_t c, Shard* piece) {
    if (c < 0 || c >= pieces[t]) return false;
    const Shard p = ShardOf(halves[t].count, pieces[t], c);
    piece->offset = halves[t].offset + p.offset;
    piece->count = p.count;
    return piece->count > 0;
  };
  // Piece c goes up while piece c-1 comes down.
  Shard piece;
  const int64_t max_pieces = std::max(pieces[0], pieces[1]);
  for (int64_t c = 0; c <= max_pieces; ++c) {
    for (int t = 0; t < 2; ++t) {
      if (piece_of(t, c, &piece)) {
        ReduceUp(trees[t], piece.offset, piece.count, OutputPlace, ScratchPlace,
                 &builder);
      }
    }
    for (int t = 0; t < 2; ++t) {
      if (piece_of(t, c - 1, &piece)) {
        BroadcastDown(trees[t], piece.offset, piece.count,
                      OutputRange(piece.offset, piece.count), &builder);
      }
    }
  }
  // Listed tree by tree, a rank's steps of one tree would hold back its
  // independent steps of the other under in-order issue: interleave them
  // by when they can run.
  return OrderForInOrderIssue(std::move(builder).Finish());
}

absl::StatusOr<Schedule> BuildChainBroadcast(const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  return BuildTreeShapedBroadcast(options, Algorithm::kChain,
                                  ChainTree(options.group_size, options.root));
}

absl::StatusOr<Schedule> BuildTreeBroadcast(const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  return BuildTreeShapedBroadcast(
      options, Algorithm::kBinaryTree,
      HeapBinaryTree(options.group_size, options.root));
}

absl::StatusOr<Schedule> BuildChainReduce(const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  return BuildTreeShapedReduce(options, Algorithm::kChain,
                               ChainTree(options.group_size, options.root));
}

absl::StatusOr<Schedule> BuildTreeReduce(const ScheduleOptions& options) {
  RETURN_IF_ERROR(ValidateScheduleOptions(options));
  return BuildTreeShapedReduce(
      options, Algorithm::kBinaryTree,
      HeapBinaryTree(options.group_size, options.root));
}

}  // namespace collective
}  // namespace distribute
