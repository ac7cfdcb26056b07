// `distsim validate`: the simulator's NCCL predictions against the
// published measurements of the validation set (simulator/validation/),
// point by point and per category (see simulator/validation/validation.h).
//
//   distsim validate                      # the built-in set, tables
//   distsim validate --split=holdout      # only the held-out points
//   distsim validate --points=FILE --json # your own measurements
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "distribute/cluster/json.h"
#include "simulator/validation/validation.h"
#include "tools/distsim/plot.h"
#include "tools/distsim/subcommands.h"

namespace distsim {
namespace {

std::string ToJson(const simulator::ValidationReport& report) {
  std::string out = "{\"points\":[";
  for (size_t i = 0; i < report.results.size(); ++i) {
    const simulator::PointResult& r = report.results[i];
    absl::StrAppendFormat(
        &out,
        "%s{\"id\":%s,\"split\":%s,\"op\":%s,\"topology\":%s,\"nodes\":%d,"
        "\"gpus_per_node\":%d,\"bytes\":%d,\"algorithm\":%s,"
        "\"predicted_us\":%.6g,\"measured_us\":%.6g,\"error\":%.6g,"
        "\"source\":%s}",
        i == 0 ? "" : ",", distribute::cluster::JsonQuote(r.point.id()),
        distribute::cluster::JsonQuote(r.point.split()),
        distribute::cluster::JsonQuote(r.point.op()),
        distribute::cluster::JsonQuote(r.point.topology()), r.point.nodes(),
        r.point.gpus_per_node(), r.point.bytes(),
        distribute::cluster::JsonQuote(r.algorithm), r.predicted_us,
        r.measured_us, r.predicted_us / r.measured_us - 1,
        distribute::cluster::JsonQuote(r.point.source()));
  }
  out += "],\"categories\":[";
  for (size_t i = 0; i < report.categories.size(); ++i) {
    const simulator::CategoryError& c = report.categories[i];
    absl::StrAppendFormat(&out,
                          "%s{\"category\":%s,\"points\":%d,\"error\":%.6g,"
                          "\"bias\":%.6g}",
                          i == 0 ? "" : ",",
                          distribute::cluster::JsonQuote(c.category), c.points,
                          c.error, c.bias);
  }
  return out + "]}\n";
}

std::string FormatSize(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return absl::StrFormat("%g %s", v, units[u]);
}

std::string ToText(const simulator::ValidationReport& report) {
  std::string out =
      absl::StrFormat("# %-34s %-7s %-14s %-44s %9s %-17s %12s %12s %8s\n",
                      "point", "split", "op", "topology", "size", "algorithm",
                      "predicted_us", "measured_us", "error");
  for (const simulator::PointResult& r : report.results) {
    absl::StrAppendFormat(
        &out, "  %-34s %-7s %-14s %-44s %9s %-17s %12.2f %12.2f %+7.1f%%\n",
        r.point.id(), r.point.split(), r.point.op(),
        absl::StrCat(r.point.topology(), " (", r.point.nodes(), "x",
                     r.point.gpus_per_node(), ")"),
        FormatSize(r.point.bytes()), r.algorithm, r.predicted_us, r.measured_us,
        100 * (r.predicted_us / r.measured_us - 1));
  }
  absl::StrAppendFormat(&out,
                        "\n# geometric-mean error exp(mean |ln(predicted / "
                        "measured)|) - 1, and bias exp(mean ln(...)) - 1\n");
  absl::StrAppendFormat(&out, "# %-36s %6s %8s %8s\n", "category", "points",
                        "error", "bias");
  for (const simulator::CategoryError& c : report.categories) {
    absl::StrAppendFormat(&out, "  %-36s %6d %7.1f%% %+7.1f%%\n", c.category,
                          c.points, 100 * c.error, 100 * c.bias);
  }
  return out;
}

// Predicted against measured microseconds, log-log, a series per split,
// over the line where they agree.
Plot ValidationPlot(const simulator::ValidationReport& report) {
  Plot plot;
  plot.title = "the NCCL model against published measurements";
  plot.x_label = "measured (us)";
  plot.y_label = "predicted (us)";
  plot.log_x = true;
  plot.log_y = true;
  plot.scatter = true;
  plot.diagonal = true;
  for (const simulator::PointResult& r : report.results) {
    const std::string label =
        r.point.split().empty() ? std::string("points") : r.point.split();
    auto it =
        std::find_if(plot.series.begin(), plot.series.end(),
                     [&](const PlotSeries& s) { return s.label == label; });
    if (it == plot.series.end()) {
      plot.series.push_back({label, {}});
      it = plot.series.end() - 1;
    }
    it->points.push_back({r.measured_us, r.predicted_us});
  }
  return plot;
}

}  // namespace

absl::Status RunValidate(const std::vector<std::string>& args) {
  std::string points_file;
  std::string split = "all";
  bool json = false;
  FlagSet flags("validate");
  flags.String("points", &points_file,
               "a ValidationSet text file of your own measurements "
               "(simulator/validation/validation.proto); default: the "
               "built-in set");
  flags.String("split", &split,
               "all, fit (the points the model's constants were fitted on) "
               "or holdout (never fitted on)");
  flags.Bool("json", &json,
             "print one JSON object {\"points\":[...],\"categories\":[...]}");
  std::string plot_path;
  flags.String("plot", &plot_path,
               "also draw predicted against measured times, a point per "
               "measurement, into this .png or .svg file (with gnuplot)");
  absl::Status parsed = flags.Parse(args);
  if (absl::IsCancelled(parsed)) return absl::OkStatus();
  if (!parsed.ok()) return parsed;
  if (split != "all" && split != "fit" && split != "holdout") {
    return absl::InvalidArgumentError(
        absl::StrCat("--split=", split, ": use all, fit or holdout"));
  }
  points_file = UserPath(std::move(points_file));
  plot_path = UserPath(std::move(plot_path));
  if (!plot_path.empty()) {
    absl::Status checked = CheckPlotPath(plot_path);
    if (!checked.ok()) return checked;
  }
  absl::StatusOr<std::vector<simulator::ValidationPoint>> points =
      points_file.empty() ? simulator::BuiltinValidationPoints()
                          : simulator::LoadValidationPoints(points_file);
  if (!points.ok()) return points.status();
  std::vector<simulator::ValidationPoint> chosen;
  for (const simulator::ValidationPoint& p : *points) {
    if (split == "all" || p.split() == split) chosen.push_back(p);
  }
  if (chosen.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no validation point has --split=", split));
  }
  absl::StatusOr<simulator::ValidationReport> report =
      simulator::Validate(chosen);
  if (!report.ok()) return report.status();
  std::fputs(json ? ToJson(*report).c_str() : ToText(*report).c_str(), stdout);
  std::fflush(stdout);
  if (!plot_path.empty()) {
    absl::Status drawn = WritePlot(ValidationPlot(*report), plot_path);
    if (!drawn.ok()) return drawn;
    std::fprintf(json ? stderr : stdout, "# plot written to %s\n",
                 plot_path.c_str());
  }
  return absl::OkStatus();
}

}  // namespace distsim
