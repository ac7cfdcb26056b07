#include "tools/distsim/plot.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "devices/status_macros.h"
#include "distribute/cluster/child_process.h"

namespace distsim {
namespace {

// gnuplot's single-quoted strings take a quote as two.
std::string Quoted(absl::string_view text) {
  return absl::StrCat("'", absl::StrReplaceAll(text, {{"'", "''"}}), "'");
}

// How long gnuplot may take; a plot of a few hundred points takes well
// under a second.
constexpr absl::Duration kGnuplotTimeout = absl::Seconds(60);

}  // namespace

absl::Status CheckPlotPath(absl::string_view path) {
  const std::string lower = absl::AsciiStrToLower(path);
  if (absl::EndsWith(lower, ".png") || absl::EndsWith(lower, ".svg")) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--plot=", path,
                   ": the picture's format follows the extension; end the "
                   "file name with .png or .svg"));
}

absl::StatusOr<std::string> GnuplotScript(const Plot& plot,
                                          absl::string_view path) {
  RETURN_IF_ERROR(CheckPlotPath(path));
  const std::string terminal =
      absl::EndsWith(absl::AsciiStrToLower(path), ".png")
          ? "pngcairo size 1000,650 noenhanced"
          : "svg size 1000,650 dynamic noenhanced";
  int points = 0;
  for (const PlotSeries& series : plot.series) {
    for (const auto& [x, y] : series.points) {
      if (!std::isfinite(x) || !std::isfinite(y) || (plot.log_x && x <= 0) ||
          (plot.log_y && y <= 0)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "cannot plot the point (", x, ", ", y, ") of ", series.label,
            plot.log_x || plot.log_y ? " on a logarithmic axis" : ""));
      }
      ++points;
    }
  }
  if (points == 0) {
    return absl::InvalidArgumentError("nothing to plot: no rows");
  }
  std::string script = absl::StrCat("set terminal ", terminal, "\n",
                                    "set output ", Quoted(path), "\n");
  absl::StrAppend(&script, "set title ", Quoted(plot.title), "\n",
                  "set xlabel ", Quoted(plot.x_label), "\n", "set ylabel ",
                  Quoted(plot.y_label), "\n", "set grid\n",
                  "set key left top\n");
  // Byte sizes step by powers of two, everything else by powers of ten.
  if (plot.log_x) {
    absl::StrAppend(&script, "set logscale x ", plot.x_bytes ? 2 : 10, "\n");
  }
  if (plot.log_y) absl::StrAppend(&script, "set logscale y 10\n");
  if (plot.x_bytes) {
    // A tic every 2^5: 1, 32, 1Ki, 32Ki, 1Mi, ... (gnuplot's %b%B).
    absl::StrAppend(&script, "set format x '%.0b%B'\n", "set xtics 32\n");
  }
  std::string plots;
  if (plot.diagonal) {
    // Over the data's range; the points set it.
    plots = "x with lines dashtype 2 linecolor 'gray' title 'y = x'";
  }
  for (const PlotSeries& series : plot.series) {
    if (series.points.empty()) continue;
    if (!plots.empty()) absl::StrAppend(&plots, ", ");
    absl::StrAppend(&plots, "'-' using 1:2 with ",
                    plot.scatter ? "points pointtype 7" : "linespoints",
                    " title ", Quoted(series.label));
  }
  absl::StrAppend(&script, "plot ", plots, "\n");
  for (const PlotSeries& series : plot.series) {
    if (series.points.empty()) continue;
    for (const auto& [x, y] : series.points) {
      absl::StrAppend(&script, absl::StrFormat("%.17g %.17g\n", x, y));
    }
    absl::StrAppend(&script, "e\n");
  }
  return script;
}

absl::Status WritePlot(const Plot& plot, absl::string_view path) {
  RETURN_IF_ERROR(CheckPlotPath(path));
  // gnuplot draws into a file of its own beside `path`, renamed over it
  // only once drawn: a picture already at `path` is lost only to a new one.
  const std::string out(path);
  const size_t dot = out.rfind('.');
  const std::string partial =
      absl::StrCat(out.substr(0, dot), ".partial", out.substr(dot));
  ASSIGN_OR_RETURN(std::string script, GnuplotScript(plot, partial));
  const char* tmp = std::getenv("TMPDIR");
  std::string name = absl::StrCat(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp",
                                  "/distsim_plot_XXXXXX");
  const int fd = mkstemp(name.data());
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot make a temporary file for gnuplot's script in ",
        name.substr(0, name.rfind('/')), ": ", std::strerror(errno),
        "; set TMPDIR to a writable directory"));
  }
  absl::Cleanup remove = [&name] { unlink(name.c_str()); };
  std::FILE* file = fdopen(fd, "w");
  if (file == nullptr) {
    close(fd);
    return absl::InternalError(
        absl::StrCat("fdopen ", name, ": ", std::strerror(errno)));
  }
  const bool written =
      std::fwrite(script.data(), 1, script.size(), file) == script.size();
  if (std::fclose(file) != 0 || !written) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot write gnuplot's script to ", name));
  }
  absl::Cleanup remove_partial = [&partial] { unlink(partial.c_str()); };
  absl::StatusOr<distribute::cluster::ChildResult> ran =
      distribute::cluster::RunChild({"gnuplot", name}, kGnuplotTimeout);
  if (absl::IsNotFound(ran.status())) {
    return absl::NotFoundError(
        "--plot draws with gnuplot, which is not installed: on Debian, "
        "`apt-get install gnuplot-nox` (tools/bazel installs it)");
  }
  RETURN_IF_ERROR(ran.status());
  const std::string said(absl::StripAsciiWhitespace(ran->output));
  if (!WIFEXITED(ran->wait_status) || WEXITSTATUS(ran->wait_status) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("gnuplot could not draw ", out, ": ",
                     said.empty() ? std::string("it printed nothing") : said));
  }
  struct stat info;
  if (stat(partial.c_str(), &info) != 0 || info.st_size == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("gnuplot wrote nothing to ", partial,
                     said.empty() ? std::string() : absl::StrCat(": ", said),
                     "; is its directory writable?"));
  }
  if (std::rename(partial.c_str(), out.c_str()) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot move the drawn picture to ", out, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace distsim
