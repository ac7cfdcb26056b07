// `distsim validate`: the simulator's NCCL predictions against the
// published measurements of the validation set (simulator/validation/),
// point by point and per category (see simulator/validation/validation.h).
//
//   distsim validate                      # the built-in set, tables
//   distsim validate --split=holdout      # only the held-out points
//   distsim validate --points=FILE --json # your own measurements
//   distsim validate --fit=all --fit_out=constants.txt
//                                         # the model's constants fitted
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "devices/status_macros.h"
#include "distribute/cluster/json.h"
#include "simulator/nccl_model.h"
#include "simulator/validation/fit.h"
#include "simulator/validation/validation.h"
#include "tools/distsim/plot.h"
#include "tools/distsim/subcommands.h"
#include "tools/flags/flags.h"

namespace distsim {
namespace {

std::string ToJson(const simulator::ValidationReport& report) {
  using distribute::cluster::Json;
  Json points = Json::array();
  for (const simulator::PointResult& r : report.results) {
    points.push_back({{"id", r.point.id()},
                      {"split", r.point.split()},
                      {"op", r.point.op()},
                      {"topology", r.point.topology()},
                      {"nodes", r.point.nodes()},
                      {"gpus_per_node", r.point.gpus_per_node()},
                      {"bytes", r.point.bytes()},
                      {"algorithm", r.algorithm},
                      {"predicted_us", r.predicted_us},
                      {"measured_us", r.measured_us},
                      {"error", r.predicted_us / r.measured_us - 1},
                      {"source", r.point.source()}});
  }
  Json categories = Json::array();
  for (const simulator::CategoryError& c : report.categories) {
    categories.push_back({{"category", c.category},
                          {"points", c.points},
                          {"error", c.error},
                          {"bias", c.bias}});
  }
  Json out = {{"points", std::move(points)},
              {"categories", std::move(categories)}};
  return distribute::cluster::DumpJson(out) + "\n";
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
  tools_flags::FlagSet flags("distsim validate");
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
  std::string model_path;
  flags.String("nccl_model", &model_path,
               "a file of the NCCL model's constants, `name = value` lines as "
               "--fit_out writes them; constants it does not name keep their "
               "built-in values");
  std::string fit;
  flags.String("fit", &fit,
               "fit the NCCL model's constants on the points of split fit "
               "(starting from the built-in or --nccl_model values), then "
               "report every point with them: all, or constant names "
               "separated by commas (simple_efficiency.nvlink, "
               "hop_latency_us.simple.net, ...; a wrong name lists them)");
  std::string prior = "auto";
  flags.String("fit_prior", &prior,
               "with --fit: how far the constants may move from their "
               "sourced values, the weight W of a log-normal prior (the fit "
               "minimizes mean |ln(predicted/measured)| + W * mean "
               "ln(constant/start)^2); auto: the weight of 0, 0.01, 0.1, 1 "
               "and 10 that predicts each source best when fitted on the "
               "others (cross-validation on split fit), or none when the "
               "start constants predict better unfitted");
  std::string fit_out;
  flags.String("fit_out", &fit_out,
               "with --fit: write the fitted constants to this file, for "
               "--nccl_model of validate and collective");
  absl::Status parsed = flags.Parse(args);
  if (absl::IsCancelled(parsed)) return absl::OkStatus();
  RETURN_IF_ERROR(parsed);
  if (!fit_out.empty() && fit.empty()) {
    return absl::InvalidArgumentError(
        "--fit_out writes what --fit finds: add --fit=all (or the names of "
        "the constants to fit)");
  }
  if (split != "all" && split != "fit" && split != "holdout") {
    return absl::InvalidArgumentError(
        absl::StrCat("--split=", split, ": use all, fit or holdout"));
  }
  points_file = UserPath(std::move(points_file));
  plot_path = UserPath(std::move(plot_path));
  if (!plot_path.empty()) {
    RETURN_IF_ERROR(CheckPlotPath(plot_path));
  }
  // A path that cannot be written fails at once rather than after the
  // search; the file is only replaced once the fit has succeeded.
  fit_out = UserPath(std::move(fit_out));
  if (!fit_out.empty()) {
    const bool existed = std::ifstream(fit_out).good();
    if (!std::ofstream(fit_out, std::ios::app).is_open()) {
      return absl::PermissionDeniedError(
          absl::StrCat("--fit_out=", fit_out, ": cannot write the file"));
    }
    if (!existed) std::remove(fit_out.c_str());
  }
  ASSIGN_OR_RETURN(std::vector<simulator::ValidationPoint> points,
                   points_file.empty()
                       ? simulator::BuiltinValidationPoints()
                       : simulator::LoadValidationPoints(points_file));
  std::vector<simulator::ValidationPoint> chosen;
  for (const simulator::ValidationPoint& p : points) {
    if (split == "all" || p.split() == split) chosen.push_back(p);
  }
  if (chosen.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("no validation point has --split=", split));
  }
  simulator::NcclModelParams params;
  model_path = UserPath(std::move(model_path));
  if (!model_path.empty()) {
    ASSIGN_OR_RETURN(simulator::NcclModelParams loaded,
                     simulator::LoadNcclModelParams(model_path));
    params = loaded;
  }
  std::string fit_summary;
  if (!fit.empty()) {
    simulator::FitOptions fit_options;
    fit_options.start = params;
    if (fit != "all") {
      for (absl::string_view name : absl::StrSplit(fit, ',')) {
        name = absl::StripAsciiWhitespace(name);
        if (!name.empty()) fit_options.names.emplace_back(name);
      }
    }
    {
      // The names, checked before any search.
      simulator::FitOptions check = fit_options;
      check.prior_weight = std::numeric_limits<double>::infinity();
      absl::StatusOr<simulator::FitResult> checked =
          simulator::FitNcclModelParams(points, check);
      if (!checked.ok()) {
        return absl::Status(
            checked.status().code(),
            absl::StrCat("--fit=", fit, ": ", checked.status().message()));
      }
    }
    std::string prior_note;
    if (prior == "auto") {
      const std::vector<double> weights = {0, 0.01, 0.1, 1, 10};
      absl::StatusOr<simulator::PriorChoice> chosen_prior =
          simulator::ChoosePriorWeight(points, fit_options, weights);
      if (!chosen_prior.ok()) {
        return absl::Status(
            chosen_prior.status().code(),
            absl::StrCat("--fit_prior=auto: ", chosen_prior.status().message(),
                         "; give the prior's weight with --fit_prior=W "
                         "instead"));
      }
      fit_options.prior_weight = chosen_prior->weight;
      prior_note = "# prior weight by leave-one-source-out cross-validation:";
      for (size_t i = 0; i < weights.size(); ++i) {
        absl::StrAppendFormat(&prior_note, " %g: %.1f%%", weights[i],
                              100 * chosen_prior->errors[i]);
        absl::StrAppend(&prior_note, i + 1 < weights.size() ? "," : "");
      }
      absl::StrAppendFormat(&prior_note, "; unfitted: %.1f%%",
                            100 * chosen_prior->start_error);
      absl::StrAppend(
          &prior_note,
          std::isinf(fit_options.prior_weight)
              ? "; the constants stay (no weight beats them)\n"
              : absl::StrCat("; chose ", fit_options.prior_weight, "\n"));
    } else if (!absl::SimpleAtod(prior, &fit_options.prior_weight) ||
               !(fit_options.prior_weight >= 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--fit_prior=", prior, ": give auto or a weight of 0 or more"));
    }
    // Fitted on the fit split of every point given, whatever --split shows.
    absl::StatusOr<simulator::FitResult> fitted =
        simulator::FitNcclModelParams(points, fit_options);
    if (!fitted.ok()) {
      return absl::Status(
          fitted.status().code(),
          absl::StrCat("--fit=", fit, ": ", fitted.status().message()));
    }
    params = fitted->params;
    fit_summary = prior_note;
    absl::StrAppendFormat(
        &fit_summary,
        "# fitted on the %d points of split=fit: error %.1f%% -> %.1f%% "
        "(prior weight %g, %d evaluations); constants that moved:%s\n",
        fitted->points, 100 * fitted->error_before, 100 * fitted->error_after,
        fit_options.prior_weight, fitted->evaluations,
        fitted->moved.empty() ? " none" : "");
    simulator::NcclModelParams copy = params;
    for (const simulator::NcclModelParam& p :
         simulator::NcclModelParamList(copy)) {
      if (std::find(fitted->moved.begin(), fitted->moved.end(), p.name) !=
          fitted->moved.end()) {
        absl::StrAppend(&fit_summary, "#   ", p.name, " = ", *p.value, "\n");
      }
    }
    if (!fit_out.empty()) {
      std::ofstream fit_file(fit_out);
      fit_file << "# NCCL model constants fitted by `distsim validate --fit="
               << fit << "` on " << fitted->points << " points (error "
               << absl::StrFormat("%.1f%% -> %.1f%%",
                                  100 * fitted->error_before,
                                  100 * fitted->error_after)
               << ")\n"
               << simulator::NcclModelParamsToText(params);
      fit_file.close();
      if (!fit_file) {
        return absl::PermissionDeniedError(
            absl::StrCat("--fit_out=", fit_out, ": cannot write the file"));
      }
      absl::StrAppend(&fit_summary, "# constants written to ", fit_out, "\n");
    }
  }
  ASSIGN_OR_RETURN(simulator::ValidationReport report,
                   simulator::Validate(chosen, params));
  std::fputs(fit_summary.c_str(), json ? stderr : stdout);
  std::fputs(json ? ToJson(report).c_str() : ToText(report).c_str(), stdout);
  std::fflush(stdout);
  if (!plot_path.empty()) {
    RETURN_IF_ERROR(WritePlot(ValidationPlot(report), plot_path));
    std::fprintf(json ? stderr : stdout, "# plot written to %s\n",
                 plot_path.c_str());
  }
  return absl::OkStatus();
}

}  // namespace distsim
