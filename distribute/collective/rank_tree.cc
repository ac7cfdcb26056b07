#include "distribute/collective/rank_tree.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace distribute {
namespace collective {

namespace {

int64_t LowestBit(int64_t p) { return p & -p; }

// Builds the tree over positions 1..n and maps position p to rank_of(p).
template <typename RankOf>
RankTree BuildInOrder(int32_t n, RankOf rank_of) {
  RankTree tree;
  tree.nodes.resize(n);
  int64_t root = 1;
  while (root * 2 <= n) root *= 2;
  tree.root = rank_of(root);
  std::vector<int64_t> stack = {root};
  while (!stack.empty()) {
    const int64_t p = stack.back();
    stack.pop_back();
    const int64_t half = LowestBit(p) / 2;
    if (half == 0) continue;
    int64_t right = p + half;
    while (right > n && LowestBit(right) > 1) right -= LowestBit(right) / 2;
    for (int64_t child : {p - half, right}) {
      if (child > n) continue;
      tree.nodes[rank_of(p)].children.push_back(rank_of(child));
      tree.nodes[rank_of(child)].parent = rank_of(p);
      stack.push_back(child);
    }
  }
  return tree;
}

}  // namespace

std::vector<int32_t> RankTree::PostOrder() const {
  // Reversing a pre-order that visits children last-first gives a post-order.
  std::vector<int32_t> result;
  result.reserve(nodes.size());
  std::vector<int32_t> stack = {root};
  while (!stack.empty()) {
    const int32_t rank = stack.back();
    stack.pop_back();
    result.push_back(rank);
    for (int32_t child : nodes[rank].children) stack.push_back(child);
  }
  std::reverse(result.begin(), result.end());
  return result;
}

std::vector<int32_t> RankTree::PreOrder() const {
  std::vector<int32_t> result;
  result.reserve(nodes.size());
  std::vector<int32_t> stack = {root};
  while (!stack.empty()) {
    const int32_t rank = stack.back();
    stack.pop_back();
    result.push_back(rank);
    const std::vector<int32_t>& children = nodes[rank].children;
    for (auto it = children.rbegin(); it != children.rend(); ++it) {
      stack.push_back(*it);
    }
  }
  return result;
}

int32_t RankTree::Depth() const {
  int32_t depth = 0;
  for (size_t rank = 0; rank < nodes.size(); ++rank) {
    int32_t d = 0;
    for (int32_t at = static_cast<int32_t>(rank); nodes[at].parent >= 0;
         at = nodes[at].parent) {
      ++d;
    }
    depth = std::max(depth, d);
  }
  return depth;
}

RankTree InOrderBinaryTree(int32_t n) {
  return BuildInOrder(n, [](int64_t p) { return static_cast<int32_t>(p - 1); });
}

RankTree ComplementaryBinaryTree(int32_t n) {
  if (n % 2 == 0) {
    return BuildInOrder(n,
                        [n](int64_t p) { return static_cast<int32_t>(n - p); });
  }
  return BuildInOrder(n,
                      [n](int64_t p) { return static_cast<int32_t>(p % n); });
}

RankTree HeapBinaryTree(int32_t n, int32_t root) {
  RankTree tree;
  tree.nodes.resize(n);
  tree.root = root;
  auto rank_of = [n, root](int64_t p) {
    return static_cast<int32_t>((p + root) % n);
  };
  for (int64_t p = 0; p < n; ++p) {
    for (int64_t child : {2 * p + 1, 2 * p + 2}) {
      if (child >= n) continue;
      tree.nodes[rank_of(p)].children.push_back(rank_of(child));
      tree.nodes[rank_of(child)].parent = rank_of(p);
    }
  }
  return tree;
}

RankTree ChainTree(int32_t n, int32_t root) {
  RankTree tree;
  tree.nodes.resize(n);
  tree.root = root;
  for (int32_t k = 1; k < n; ++k) {
    const int32_t rank = (root + k) % n;
    const int32_t parent = (root + k - 1) % n;
    tree.nodes[rank].parent = parent;
    tree.nodes[parent].children.push_back(rank);
  }
  return tree;
}

}  // namespace collective
}  // namespace distribute
