#include "distribute/collective/cost_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "devices/status_macros.h"
#include "distribute/collective/rank_tree.h"
#include "distribute/collective/schedule.h"

namespace distribute {
namespace collective {

namespace {

constexpr Algorithm kAllReduceAlgorithms[] = {
    Algorithm::kRing, Algorithm::kDoubleBinaryTree,
    Algorithm::kRecursiveHalvingDoubling, Algorithm::kDirect,
    Algorithm::kHierarchical};

// Chunk sizes the tuner tries besides "no chunking".
constexpr int64_t kMinChunkBytes = int64_t{16} << 10;
constexpr int64_t kMaxChunkBytes = int64_t{16} << 20;

struct Link {
  double alpha_us = 0;
  double beta_us_per_byte = 0;
};

// Derived quantities of a group's costs.
struct Model {
  int64_t n = 1;
  int64_t per_node = 1;  // L
  int64_t nodes = 1;     // M
  Link intra;            // neighbour links inside a node
  Link intra_far;        // non-neighbour links inside a node
  Link inter;
  double o = 0;
  double gamma = 0;
  std::vector<int64_t> grid;  // GroupCosts::grid without its 1s

  // The slower of two links.
  static Link Slowest(const Link& a, const Link& b) {
    return Link{std::max(a.alpha_us, b.alpha_us),
                std::max(a.beta_us_per_byte, b.beta_us_per_byte)};
  }
  // Links of an algorithm over all ranks: intra-node ones on one node.
  Link Flat(const Link& inside) const {
    return nodes > 1 ? Slowest(inside, inter) : inside;
  }
};

Model MakeModel(const GroupCosts& t) {
  Model m;
  m.n = t.n;
  m.per_node = t.ranks_per_node == 0 ? t.n : std::min(t.ranks_per_node, t.n);
  m.nodes = (m.n + m.per_node - 1) / m.per_node;
  m.intra = Link{t.intra_latency_us, 1e6 / t.intra_bw_Bps};
  m.intra_far =
      Link{t.intra_latency_us, 1e6 / (t.intra_bw_Bps * t.bisection_fraction)};
  m.inter = Link{t.inter_latency_us, 1e6 / t.inter_bw_Bps};
  m.o = t.step_overhead_us;
  m.gamma = t.reduce_bw_Bps > 0 ? 1e6 / t.reduce_bw_Bps : 0;
  for (int32_t d : t.grid) {
    if (d > 1) m.grid.push_back(d);
  }
  return m;
}

// Pieces a range of `bytes` is split into by chunks of `chunk` bytes.
double Pieces(double bytes, int64_t chunk) {
  if (chunk <= 0 || bytes <= chunk) return 1;
  return std::ceil(bytes / static_cast<double>(chunk));
}

// A ring all-reduce of S bytes over k ranks on `link`.
double RingUs(double s, double k, const Link& link, const Model& m,
              int64_t chunk) {
  if (k <= 1 || s <= 0) return 0;
  const double c = Pieces(s / k, chunk);
  return 2 * (k - 1) * (link.alpha_us + c * m.o) +
         2 * (k - 1) / k * s * link.beta_us_per_byte +
         (k - 1) / k * s * m.gamma / c;
}

double TreeUs(double s, const Model& m, int64_t chunk) {
  if (m.n <= 1 || s <= 0) return 0;
  const int32_t n = static_cast<int32_t>(m.n);
  const double h = std::max(InOrderBinaryTree(n).Depth(),
                            ComplementaryBinaryTree(n).Depth());
  const double c = Pieces(s / 2, chunk);
  const Link link = m.Flat(m.intra_far);
  const double stage = link.alpha_us + 2 * m.o +
                       2 * (s / c) * link.beta_us_per_byte + (s / c) * m.gamma;
  return (2 * h + c - 1) * stage;
}

double RhdUs(double s, const Model& m, int64_t chunk) {
  if (m.n <= 1 || s <= 0) return 0;
  int64_t p = 1;
  while (p * 2 <= m.n) p *= 2;
  double total = 0;
  if (p != m.n) {
    // Fold and unfold between neighbours 2i and 2i+1.
    const Link fold = m.per_node >= 2 ? m.intra : m.inter;
    const double c = Pieces(s, chunk);
    total += 2 * (fold.alpha_us + c * m.o + s * fold.beta_us_per_byte) +
             s * m.gamma / c;
  }
  double bytes = s;
  for (int64_t d = p / 2; d >= 1; d /= 2) {
    bytes /= 2;
    const Link link = d >= m.per_node ? m.inter : m.intra_far;
    const double c = Pieces(bytes, chunk);
    // The same message sizes appear once halving (with a reduction) and once
    // doubling.
    total += 2 * (link.alpha_us + c * m.o + bytes * link.beta_us_per_byte) +
             bytes * m.gamma / c;
  }
  return total;
}

double DirectUs(double s, const Model& m, int64_t chunk) {
  if (m.n <= 1 || s <= 0) return 0;
  const double c = Pieces(s, chunk);
  const double inside = static_cast<double>(m.per_node - 1);
  const double outside = static_cast<double>(m.n - m.per_node);
  const double alpha = m.nodes > 1
                           ? std::max(m.intra.alpha_us, m.inter.alpha_us)
                           : m.intra.alpha_us;
  return alpha + (m.n - 1) * c * m.o +
         s * (inside * m.intra_far.beta_us_per_byte +
              outside * m.inter.beta_us_per_byte) +
         (m.n - 1) * s * m.gamma / c;
}

double HierarchicalUs(double s, const Model& m, int64_t chunk) {
  if (!m.grid.empty()) {
    double total = 0;
    for (int64_t d : m.grid) {
      total += RingUs(s, static_cast<double>(d), m.Flat(m.intra), m, chunk);
      s /= static_cast<double>(d);
    }
    return total;
  }
  const double l = static_cast<double>(m.per_node);
  return RingUs(s, l, m.intra, m, chunk) +
         RingUs(s / l, static_cast<double>(m.nodes), m.inter, m, chunk);
}

absl::Status CheckAllReduceAlgorithm(Algorithm algorithm) {
  for (Algorithm known : kAllReduceAlgorithms) {
    if (known == algorithm) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "algorithm '", AlgorithmName(algorithm),
      "' is not an all-reduce algorithm; use ring, tree, rhd, direct or "
      "hierarchical"));
}

// Empty when the algorithm can run on the group, else why not.
std::string Infeasibility(Algorithm algorithm, const GroupCosts& t) {
  if (algorithm == Algorithm::kHierarchical && t.grid.empty() &&
      t.ranks_per_node > 0 && t.n % t.ranks_per_node != 0) {
    return absl::StrCat("group size ", t.n,
                        " is not a multiple of ranks_per_node ",
                        t.ranks_per_node);
  }
  return "";
}

double PredictUnchecked(Algorithm algorithm, double s, int64_t chunk,
                        const Model& m) {
  switch (algorithm) {
    case Algorithm::kRing:
      return RingUs(s, static_cast<double>(m.n), m.Flat(m.intra), m, chunk);
    case Algorithm::kDoubleBinaryTree:
      return TreeUs(s, m, chunk);
    case Algorithm::kRecursiveHalvingDoubling:
      return RhdUs(s, m, chunk);
    case Algorithm::kDirect:
      return DirectUs(s, m, chunk);
    case Algorithm::kHierarchical:
      return HierarchicalUs(s, m, chunk);
    default:
      return 0;
  }
}

}  // namespace

absl::Status ValidateGroupCosts(const GroupCosts& t) {
  if (t.n < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("GroupCosts n must be at least 1, got ", t.n));
  }
  if (t.ranks_per_node < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GroupCosts ranks_per_node must be >= 0 (0: one node), got ",
        t.ranks_per_node));
  }
  if (!(t.intra_bw_Bps > 0) || !(t.inter_bw_Bps > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GroupCosts bandwidths must be positive, got intra ", t.intra_bw_Bps,
        " and inter ", t.inter_bw_Bps, " bytes/s"));
  }
  if (!(t.intra_latency_us >= 0) || !(t.inter_latency_us >= 0) ||
      !(t.step_overhead_us >= 0) || !(t.reduce_bw_Bps >= 0)) {
    return absl::InvalidArgumentError(
        "GroupCosts latencies, step overhead and reduce bandwidth must be "
        "non-negative");
  }
  if (!(t.bisection_fraction > 0) || t.bisection_fraction > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("GroupCosts bisection_fraction must be in (0, 1], got ",
                     t.bisection_fraction));
  }
  if (!t.grid.empty()) {
    int64_t product = 1;
    for (int32_t d : t.grid) {
      if (d < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("GroupCosts grid ", absl::StrJoin(t.grid, "x"),
                         " has a dimension below 1"));
      }
      product *= d;
    }
    if (product != t.n) {
      return absl::InvalidArgumentError(
          absl::StrCat("GroupCosts grid ", absl::StrJoin(t.grid, "x"),
                       " holds ", product, " ranks, not n = ", t.n));
    }
  }
  if (t.max_chunk_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("GroupCosts max_chunk_bytes must be >= 0 (0: no limit), "
                     "got ",
                     t.max_chunk_bytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<Algorithm>> ParseAlgorithm(
    absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  if (lower == "auto") return std::optional<Algorithm>();
  for (Algorithm algorithm : kAllReduceAlgorithms) {
    if (AlgorithmName(algorithm) == lower) {
      return std::optional<Algorithm>(algorithm);
    }
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown all-reduce algorithm '", name,
                   "'; expected one of auto, ring, tree, rhd, direct, "
                   "hierarchical"));
}

absl::StatusOr<double> PredictAllReduceUs(Algorithm algorithm, int64_t bytes,
                                          int64_t chunk_bytes,
                                          const GroupCosts& costs) {
  RETURN_IF_ERROR(ValidateGroupCosts(costs));
  RETURN_IF_ERROR(CheckAllReduceAlgorithm(algorithm));
  if (bytes < 0 || chunk_bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sizes must be non-negative, got ", bytes,
                     " bytes in chunks of ", chunk_bytes));
  }
  const std::string why = Infeasibility(algorithm, costs);
  if (!why.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        AlgorithmName(algorithm), " all-reduce cannot run here: ", why));
  }
  return PredictUnchecked(algorithm, static_cast<double>(bytes), chunk_bytes,
                          MakeModel(costs));
}

absl::StatusOr<AlgorithmEstimate> EstimateAllReduce(Algorithm algorithm,
                                                    int64_t bytes,
                                                    const GroupCosts& costs) {
  RETURN_IF_ERROR(ValidateGroupCosts(costs));
  RETURN_IF_ERROR(CheckAllReduceAlgorithm(algorithm));
  if (bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bytes must be non-negative, got ", bytes));
  }
  AlgorithmEstimate estimate;
  estimate.algorithm = algorithm;
  estimate.reason = Infeasibility(algorithm, costs);
  if (!estimate.reason.empty()) {
    estimate.feasible = false;
    return estimate;
  }
  const Model model = MakeModel(costs);
  const double s = static_cast<double>(bytes);
  // Above the cap, pieces of the cap take the place of "no chunking".
  const int64_t cap = costs.max_chunk_bytes;
  if (cap > 0 && bytes > cap) estimate.chunk_bytes = cap;
  estimate.predicted_us =
      PredictUnchecked(algorithm, s, estimate.chunk_bytes, model);
  for (int64_t chunk = kMinChunkBytes; chunk <= kMaxChunkBytes; chunk *= 2) {
    if (chunk >= bytes) break;  // one piece: the same as no chunking
    if (cap > 0 && chunk >= cap) break;
    const double us = PredictUnchecked(algorithm, s, chunk, model);
    if (us < estimate.predicted_us) {
      estimate.predicted_us = us;
      estimate.chunk_bytes = chunk;
    }
  }
  return estimate;
}

absl::StatusOr<AllReduceSelection> SelectAllReduce(
    int64_t bytes, const GroupCosts& costs, std::optional<Algorithm> forced) {
  if (forced.has_value()) {
    RETURN_IF_ERROR(CheckAllReduceAlgorithm(*forced));
  }
  AllReduceSelection selection;
  const AlgorithmEstimate* best = nullptr;
  for (Algorithm algorithm : kAllReduceAlgorithms) {
    ASSIGN_OR_RETURN(AlgorithmEstimate estimate,
                     EstimateAllReduce(algorithm, bytes, costs));
    selection.candidates.push_back(estimate);
  }
  for (const AlgorithmEstimate& estimate : selection.candidates) {
    if (forced.has_value()) {
      if (estimate.algorithm != *forced) continue;
      if (!estimate.feasible) {
        return absl::FailedPreconditionError(absl::StrCat(
            "forced all-reduce algorithm '", AlgorithmName(estimate.algorithm),
            "' cannot run on this costs: ", estimate.reason));
      }
      best = &estimate;
      break;
    }
    if (estimate.feasible &&
        (best == nullptr || estimate.predicted_us < best->predicted_us)) {
      best = &estimate;
    }
  }
  selection.algorithm = best->algorithm;
  selection.chunk_bytes = best->chunk_bytes;
  selection.predicted_us = best->predicted_us;
  selection.forced = forced.has_value();
  return selection;
}

std::string AllReduceSelection::DebugString() const {
  std::string out = absl::StrFormat(
      "%s %s (chunk %d B): %.3f us;", forced ? "forced" : "auto picked",
      AlgorithmName(algorithm), chunk_bytes, predicted_us);
  for (const AlgorithmEstimate& c : candidates) {
    if (c.feasible) {
      absl::StrAppendFormat(&out, " %s %.3f us (chunk %d B);",
                            AlgorithmName(c.algorithm), c.predicted_us,
                            c.chunk_bytes);
    } else {
      absl::StrAppendFormat(&out, " %s infeasible (%s);",
                            AlgorithmName(c.algorithm), c.reason);
    }
  }
  return out;
}

absl::StatusOr<Algorithm> SelectShardedCollective(CollectiveOp op,
                                                  int64_t bytes,
                                                  const GroupCosts& costs) {
  RETURN_IF_ERROR(ValidateGroupCosts(costs));
  if (op != CollectiveOp::kReduceScatter && op != CollectiveOp::kAllGather) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SelectShardedCollective chooses for reduce-scatter and all-gather, "
        "not ",
        OpName(op)));
  }
  if (bytes < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sizes must be non-negative, got ", bytes, " bytes"));
  }
  const Model m = MakeModel(costs);
  if (m.grid.size() < 2) return Algorithm::kRing;
  const Link link = m.Flat(m.intra);
  auto rings = [&](double s, double k) {
    return (k - 1) * (link.alpha_us + m.o) +
           (k - 1) / k * s * link.beta_us_per_byte;
  };
  const double s = static_cast<double>(bytes);
  const double ring = rings(s, static_cast<double>(m.n));
  double grid = 0, range = s;
  for (size_t k = m.grid.size(); k-- > 0;) {
    const double d = static_cast<double>(m.grid[k]);
    grid += rings(range, d);
    range /= d;
  }
  return grid < ring ? Algorithm::kHierarchical : Algorithm::kRing;
}

ScheduleOptions ScheduleOptionsFor(const AllReduceSelection& selection,
                                   const GroupCosts& costs, int64_t count,
                                   int64_t element_size) {
  ScheduleOptions options;
  options.group_size = costs.n;
  options.count = count;
  options.ranks_per_node =
      costs.ranks_per_node == 0 ? costs.n : costs.ranks_per_node;
  if (selection.chunk_bytes > 0 && element_size > 0) {
    options.chunk_elements =
        std::max<int64_t>(1, selection.chunk_bytes / element_size);
  }
  return options;
}

}  // namespace collective
}  // namespace distribute
