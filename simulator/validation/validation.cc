#include "simulator/validation/validation.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "google/protobuf/text_format.h"
#include "simulator/builtin_topologies.h"
#include "simulator/group_hardware.h"
#include "simulator/nccl_model.h"
#include "simulator/topology.h"
#include "simulator/validation/embedded_points.h"

namespace simulator {
namespace {

constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * kKiB;

// nccl-tests' defaults for -n and -w.
constexpr int kDefaultIters = 20;
constexpr int kDefaultWarmupIters = 5;

absl::StatusOr<std::vector<ValidationPoint>> ParseSet(absl::string_view text,
                                                      absl::string_view where) {
  ValidationSet set;
  google::protobuf::TextFormat::Parser parser;
  if (!parser.ParseFromString(std::string(text), &set)) {
    return absl::InvalidArgumentError(
        absl::StrCat(where,
                     " is not a ValidationSet in protobuf text format "
                     "(simulator/validation/validation.proto)"));
  }
  return std::vector<ValidationPoint>(set.points().begin(), set.points().end());
}

// nccl-tests' factor from algorithm to bus bandwidth.
double BusFactor(absl::string_view op, int n) {
  if (n <= 1) return 1.0;
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "all_gather" || op == "reduce_scatter" || op == "all_to_all") {
    return static_cast<double>(n - 1) / n;
  }
  return 1.0;
}

int Ranks(const ValidationPoint& p) { return p.nodes() * p.gpus_per_node(); }

// "dgx_h100_cluster:4,fabric=roce" -> "dgx_h100".
std::string HardwareKind(absl::string_view topology) {
  absl::string_view kind = topology.substr(0, topology.find_first_of(":,"));
  const absl::string_view suffix = "_cluster";
  if (kind.size() > suffix.size() &&
      kind.substr(kind.size() - suffix.size()) == suffix) {
    kind.remove_suffix(suffix.size());
  }
  return std::string(kind);
}

NcclRunOptions RunOptionsOf(const ValidationPoint& p) {
  NcclRunOptions o;
  o.gpus_per_thread = p.gpus_per_thread() > 0 ? p.gpus_per_thread() : 1;
  o.iters = p.iters() > 0 ? p.iters() : kDefaultIters;
  o.warmup_iters =
      p.warmup_iters() > 0 ? p.warmup_iters() : kDefaultWarmupIters;
  o.algorithms = p.nccl_algo();
  o.protocols = p.nccl_proto();
  o.nvls = !p.nvls_disabled();
  o.sharp = p.sharp();
  return o;
}

// Topologies by name, loaded once per Validate.
class TopologyCache {
 public:
  absl::StatusOr<const Topology*> Get(const std::string& name) {
    auto it = cache_.find(name);
    if (it != cache_.end()) return it->second.get();
    ASSIGN_OR_RETURN(Topology t, BuiltinTopology(name));
    auto owned = std::make_unique<Topology>(std::move(t));
    const Topology* raw = owned.get();
    cache_.emplace(name, std::move(owned));
    return raw;
  }

 private:
  std::map<std::string, std::unique_ptr<Topology>> cache_;
};

absl::StatusOr<PreparedPoint> Prepare(const ValidationPoint& point,
                                      TopologyCache& cache) {
  auto fail = [&](const absl::Status& s) {
    return absl::Status(s.code(),
                        absl::StrCat("point ", point.id(), ": ", s.message()));
  };
  absl::StatusOr<NcclOp> op = NcclOpFromName(point.op());
  if (!op.ok()) return fail(op.status());
  absl::StatusOr<const Topology*> topology = cache.Get(point.topology());
  if (!topology.ok()) return fail(topology.status());
  absl::StatusOr<std::vector<int>> gpus =
      PlaceGpuRanks(**topology, Ranks(point), point.gpus_per_node());
  if (!gpus.ok()) return fail(gpus.status());
  absl::StatusOr<GroupHardware> hardware =
      DescribeGroupHardware(**topology, *gpus);
  if (!hardware.ok()) return fail(hardware.status());
  if (hardware->nodes != point.nodes()) {
    return fail(absl::InvalidArgumentError(absl::StrCat(
        "the run had ", point.nodes(), " node(s) but its ranks sit on ",
        hardware->nodes, " host(s) of ", point.topology())));
  }
  PreparedPoint prepared;
  prepared.point = point;
  prepared.op = *op;
  prepared.hardware = *std::move(hardware);
  prepared.options = RunOptionsOf(point);
  prepared.measured_us = MeasuredTimeUs(point);
  return prepared;
}

absl::StatusOr<PointResult> Predict(const ValidationPoint& point,
                                    const NcclModelParams& params,
                                    TopologyCache& cache) {
  ASSIGN_OR_RETURN(PreparedPoint prepared, Prepare(point, cache));
  return PredictPrepared(prepared, params);
}

struct Accumulator {
  int points = 0;
  double abs_sum = 0;
  double sum = 0;
};

}  // namespace

absl::StatusOr<std::vector<ValidationPoint>> BuiltinValidationPoints() {
  std::vector<ValidationPoint> all;
  for (const validation::EmbeddedFile& file :
       validation::EmbeddedValidationFiles()) {
    ASSIGN_OR_RETURN(
        std::vector<ValidationPoint> points,
        ParseSet(file.text, absl::StrCat("simulator/validation/", file.name)));
    all.insert(all.end(), points.begin(), points.end());
  }
  RETURN_IF_ERROR(CheckValidationPoints(all));
  return all;
}

absl::StatusOr<std::vector<ValidationPoint>> LoadValidationPoints(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read the validation file '", path, "'"));
  }
  std::stringstream text;
  text << in.rdbuf();
  ASSIGN_OR_RETURN(std::vector<ValidationPoint> points,
                   ParseSet(text.str(), path));
  RETURN_IF_ERROR(CheckValidationPoints(points));
  return points;
}

absl::Status CheckValidationPoints(const std::vector<ValidationPoint>& points) {
  std::set<std::string> ids;
  std::map<std::string, std::string> split_of_group;
  for (size_t i = 0; i < points.size(); ++i) {
    const ValidationPoint& p = points[i];
    const std::string name =
        p.id().empty() ? absl::StrCat("point #", i + 1) : p.id();
    auto bad = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat("validation point ", name, ": ", what));
    };
    if (p.id().empty()) return bad("needs an id");
    if (!ids.insert(p.id()).second) return bad("the id is used twice");
    if (p.split() != "fit" && p.split() != "holdout") {
      return bad("split must be \"fit\" or \"holdout\"");
    }
    if (p.source().empty()) return bad("needs a source");
    if (!NcclOpFromName(p.op()).ok()) {
      return bad(absl::StrCat("op '", p.op(), "' is not an NCCL collective"));
    }
    if (p.topology().empty()) return bad("needs a topology");
    if (p.nodes() < 1 || p.gpus_per_node() < 1) {
      return bad("nodes and gpus_per_node must be at least 1");
    }
    if (p.bytes() < 1) return bad("bytes must be positive");
    if (!(p.time_us() > 0) && !(p.busbw_gbps() > 0)) {
      return bad("needs a measured time_us or busbw_GBps");
    }
    if (p.gpus_per_thread() < 0 || p.iters() < 0 || p.warmup_iters() < 0) {
      return bad("gpus_per_thread, iters and warmup_iters cannot be negative");
    }
    const std::string group =
        p.source_group().empty() ? p.source() : p.source_group();
    auto [it, inserted] = split_of_group.try_emplace(group, p.split());
    if (!inserted && it->second != p.split()) {
      return bad(absl::StrCat("source group '", group,
                              "' has points in both splits; a source is "
                              "either fitted on or held out"));
    }
  }
  return absl::OkStatus();
}

double MeasuredTimeUs(const ValidationPoint& point) {
  if (point.time_us() > 0) return point.time_us();
  const double algbw =
      point.busbw_gbps() / BusFactor(point.op(), Ranks(point));  // GB/s
  return static_cast<double>(point.bytes()) / (algbw * 1e3);
}

std::string SizeClass(int64_t bytes) {
  if (bytes <= 64 * kKiB) return "latency";
  if (bytes < 256 * kMiB) return "mid";
  return "bandwidth";
}

absl::StatusOr<PointResult> PredictPoint(const ValidationPoint& point,
                                         const NcclModelParams& params) {
  TopologyCache cache;
  return Predict(point, params, cache);
}

absl::StatusOr<std::vector<PreparedPoint>> PreparePoints(
    const std::vector<ValidationPoint>& points) {
  TopologyCache cache;
  std::vector<PreparedPoint> prepared;
  prepared.reserve(points.size());
  for (const ValidationPoint& point : points) {
    ASSIGN_OR_RETURN(PreparedPoint p, Prepare(point, cache));
    prepared.push_back(std::move(p));
  }
  return prepared;
}

absl::StatusOr<PointResult> PredictPrepared(const PreparedPoint& prepared,
                                            const NcclModelParams& params) {
  const ValidationPoint& point = prepared.point;
  NcclRunOptions options = prepared.options;
  options.params = params;
  absl::StatusOr<NcclPrediction> prediction =
      PredictNcclOn(prepared.hardware, prepared.op, point.bytes(), options);
  if (!prediction.ok()) {
    return absl::Status(prediction.status().code(),
                        absl::StrCat("point ", point.id(), ": ",
                                     prediction.status().message()));
  }
  PointResult r;
  r.point = point;
  r.predicted_us = prediction->time_us;
  r.measured_us = prepared.measured_us;
  r.log_ratio = std::log(r.predicted_us / r.measured_us);
  r.algorithm = prediction->Label();
  return r;
}

const CategoryError* ValidationReport::Find(absl::string_view category) const {
  for (const CategoryError& c : categories) {
    if (c.category == category) return &c;
  }
  return nullptr;
}

absl::StatusOr<ValidationReport> Validate(
    const std::vector<ValidationPoint>& points, const NcclModelParams& params) {
  ValidationReport report;
  TopologyCache cache;
  // Categories in order of first appearance, "all" and the splits first.
  std::vector<std::string> order = {"all", "split=fit", "split=holdout"};
  std::map<std::string, Accumulator> acc;
  auto add = [&](const std::string& category, double log_ratio) {
    auto [it, inserted] = acc.try_emplace(category);
    if (inserted && category != "all" && category != "split=fit" &&
        category != "split=holdout") {
      order.push_back(category);
    }
    it->second.points += 1;
    it->second.abs_sum += std::fabs(log_ratio);
    it->second.sum += log_ratio;
  };
  for (const ValidationPoint& point : points) {
    ASSIGN_OR_RETURN(PointResult r, Predict(point, params, cache));
    const double x = r.log_ratio;
    const std::vector<std::string> facets = {
        absl::StrCat("size=", SizeClass(point.bytes())),
        absl::StrCat("nodes=", point.nodes() > 1 ? "multi" : "single"),
        absl::StrCat("op=", point.op()),
        absl::StrCat("gpu=", HardwareKind(point.topology()))};
    add("all", x);
    add(absl::StrCat("split=", point.split()), x);
    for (const std::string& f : facets) add(f, x);
    for (const std::string& f : facets) {
      add(absl::StrCat(point.split(), "/", f), x);
    }
    report.results.push_back(std::move(r));
  }
  // "all", the splits, then each facet over all points, then within the
  // fit and the held-out parts.
  auto rank = [](const std::string& c) {
    if (c == "all") return 0;
    if (c.rfind("split=", 0) == 0) return 1;
    if (c.rfind("fit/", 0) == 0) return 3;
    if (c.rfind("holdout/", 0) == 0) return 4;
    return 2;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](const std::string& a, const std::string& b) {
                     if (rank(a) != rank(b)) return rank(a) < rank(b);
                     return rank(a) >= 2 && a < b;
                   });
  for (const std::string& category : order) {
    auto it = acc.find(category);
    if (it == acc.end()) continue;
    const Accumulator& a = it->second;
    CategoryError c;
    c.category = category;
    c.points = a.points;
    c.error = std::exp(a.abs_sum / a.points) - 1;
    c.bias = std::exp(a.sum / a.points) - 1;
    report.categories.push_back(c);
  }
  return report;
}

}  // namespace simulator
