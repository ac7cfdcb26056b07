#include "distribute/collective/rank_tree.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"

namespace distribute {
namespace collective {
namespace {

// Every rank appears once, parent and child links agree, and the root
// reaches everyone.
void ExpectValidTree(const RankTree& tree, int32_t n, size_t max_children) {
  ASSERT_EQ(static_cast<int32_t>(tree.nodes.size()), n);
  ASSERT_GE(tree.root, 0);
  ASSERT_LT(tree.root, n);
  EXPECT_EQ(tree.nodes[tree.root].parent, -1);
  for (int32_t rank = 0; rank < n; ++rank) {
    EXPECT_LE(tree.nodes[rank].children.size(), max_children);
    for (int32_t child : tree.nodes[rank].children) {
      EXPECT_EQ(tree.nodes[child].parent, rank);
    }
    if (rank != tree.root) {
      EXPECT_GE(tree.nodes[rank].parent, 0);
    }
  }
  const std::vector<int32_t> pre = tree.PreOrder();
  const std::vector<int32_t> post = tree.PostOrder();
  ASSERT_EQ(static_cast<int32_t>(pre.size()), n);
  ASSERT_EQ(static_cast<int32_t>(post.size()), n);
  std::vector<int32_t> pre_index(n, -1), post_index(n, -1);
  for (int32_t i = 0; i < n; ++i) {
    pre_index[pre[i]] = i;
    post_index[post[i]] = i;
  }
  for (int32_t rank = 0; rank < n; ++rank) {
    ASSERT_GE(pre_index[rank], 0);
    ASSERT_GE(post_index[rank], 0);
    const int32_t parent = tree.nodes[rank].parent;
    if (parent >= 0) {
      EXPECT_LT(pre_index[parent], pre_index[rank]);
      EXPECT_GT(post_index[parent], post_index[rank]);
    }
  }
}

int32_t CeilLog2(int32_t n) {
  int32_t bits = 0;
  while ((int64_t{1} << bits) < n) ++bits;
  return bits;
}

TEST(TreeTopologyTest, BinaryTreesAreValidAndShallow) {
  for (int32_t n = 1; n <= 70; ++n) {
    SCOPED_TRACE(n);
    const RankTree a = InOrderBinaryTree(n);
    const RankTree b = ComplementaryBinaryTree(n);
    ExpectValidTree(a, n, 2);
    ExpectValidTree(b, n, 2);
    EXPECT_LE(a.Depth(), CeilLog2(n + 1));
    EXPECT_LE(b.Depth(), CeilLog2(n + 1));
    for (int32_t root = 0; root < n; root += 3) {
      const RankTree heap = HeapBinaryTree(n, root);
      ExpectValidTree(heap, n, 2);
      EXPECT_EQ(heap.root, root);
      EXPECT_LE(heap.Depth(), CeilLog2(n + 1));
      const RankTree chain = ChainTree(n, root);
      ExpectValidTree(chain, n, 1);
      EXPECT_EQ(chain.Depth(), n - 1);
    }
  }
}

TEST(TreeTopologyTest, DoubleTreeLeavesAreComplementary) {
  for (int32_t n = 2; n <= 70; ++n) {
    SCOPED_TRACE(n);
    const RankTree a = InOrderBinaryTree(n);
    const RankTree b = ComplementaryBinaryTree(n);
    int32_t leaf_in_both = 0;
    for (int32_t rank = 0; rank < n; ++rank) {
      if (a.nodes[rank].children.empty() && b.nodes[rank].children.empty()) {
        ++leaf_in_both;
      }
    }
    // Even n: no rank is a leaf twice. Odd n has (n+1)/2 leaves per tree, so
    // at least one rank must be; the shifted tree makes it exactly one.
    EXPECT_EQ(leaf_in_both, n % 2 == 0 ? 0 : 1);
  }
}

TEST(TreeTopologyTest, InOrderTreeShape) {
  // Positions 1..6: root 4, children 2 and 6; 2 has 1 and 3; 6 has 5.
  const RankTree t = InOrderBinaryTree(6);
  EXPECT_EQ(t.root, 3);
  EXPECT_EQ(t.nodes[3].children, (std::vector<int32_t>{1, 5}));
  EXPECT_EQ(t.nodes[1].children, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(t.nodes[5].children, (std::vector<int32_t>{4}));
}

}  // namespace
}  // namespace collective
}  // namespace distribute
