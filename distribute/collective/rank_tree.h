// Trees over the ranks of a group, as pure functions: the in-order binary
// tree and its complement used by the double-binary-tree all-reduce, and the
// heap-shaped binary tree rooted at any rank used by tree broadcast/reduce.
//
// Example:
//   RankTree a = InOrderBinaryTree(8);
//   RankTree b = ComplementaryBinaryTree(8);  // a's leaves are b's interiors
//   for (int32_t child : a.nodes[a.root].children) { ... }
//   RankTree c = ChainTree(5, 2);             // 2 -> 3 -> 4 -> 0 -> 1
#ifndef DISTRIBUTE_COLLECTIVE_RANK_TREE_H_
#define DISTRIBUTE_COLLECTIVE_RANK_TREE_H_

#include <cstdint>
#include <vector>

namespace distribute {
namespace collective {

struct RankTree {
  struct Node {
    int32_t parent = -1;            // -1 at the root
    std::vector<int32_t> children;  // at most two, in a fixed order
  };
  int32_t root = 0;
  std::vector<Node> nodes;  // indexed by rank

  // Ranks with every child before its parent (the root last).
  std::vector<int32_t> PostOrder() const;
  // Ranks with every parent before its children (the root first).
  std::vector<int32_t> PreOrder() const;
  // Number of edges on the longest root-to-leaf path.
  int32_t Depth() const;
};

// The in-order binary tree over ranks 0..n-1 (n >= 1): with positions
// p = rank + 1, the root is the largest power of two <= n, a node with lowest
// set bit b has children p - b/2 and p + b/2 (the latter replaced by its
// left descendants while beyond n). Odd positions (even ranks) are leaves;
// depth is about log2(n).
RankTree InOrderBinaryTree(int32_t n);

// The second tree of a double binary tree: the in-order tree with rank
// r' = n - 1 - r (n even: every leaf of the first tree is an interior node
// of this one and vice versa) or r' = (r + 1) mod n (n odd).
RankTree ComplementaryBinaryTree(int32_t n);

// The heap-shaped binary tree rooted at `root`: position p = (rank - root)
// mod n has children 2p + 1 and 2p + 2.
RankTree HeapBinaryTree(int32_t n, int32_t root);

// The chain root -> root+1 -> ... -> root+n-1 (mod n) as a tree: rank
// root+k has parent root+k-1 and child root+k+1.
RankTree ChainTree(int32_t n, int32_t root);

}  // namespace collective
}  // namespace distribute

#endif  // DISTRIBUTE_COLLECTIVE_RANK_TREE_H_
