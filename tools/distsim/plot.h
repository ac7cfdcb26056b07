// Pictures of distsim's results, drawn by gnuplot (Debian's gnuplot-nox,
// which tools/bazel installs): `distsim collective --plot=FILE` draws bus
// bandwidth against message size, one line per algorithm, and `distsim
// validate --plot=FILE` the predicted against the measured times.
//
//   Plot plot;
//   plot.title = "all_reduce on dgx_h100";
//   plot.x_label = "message size (bytes)";
//   plot.y_label = "busbw (GB/s)";
//   plot.log_x = true;
//   plot.series.push_back({"ring", {{8, 0.01}, {1 << 30, 360}}});
//   absl::Status s = WritePlot(plot, "busbw.png");   // or .svg
#ifndef TOOLS_DISTSIM_PLOT_H_
#define TOOLS_DISTSIM_PLOT_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace distsim {

struct PlotSeries {
  std::string label;
  std::vector<std::pair<double, double>> points;  // (x, y), drawn in order
};

struct Plot {
  std::string title;
  std::string x_label;
  std::string y_label;
  bool log_x = false;
  bool log_y = false;
  // x values are byte counts: tics read 1K, 1M, 1G.
  bool x_bytes = false;
  // Points only (a scatter), and the line y = x under them.
  bool scatter = false;
  bool diagonal = false;
  std::vector<PlotSeries> series;
};

// OK when `path` names a picture WritePlot can draw (.png or .svg);
// INVALID_ARGUMENT naming --plot otherwise. Commands check it before they
// compute anything.
absl::Status CheckPlotPath(absl::string_view path);

// The gnuplot script that draws `plot` into `path`, its data inline. The
// picture's format follows the extension: .png or .svg; INVALID_ARGUMENT
// for any other, and for a plot without points (or with a point that a log
// axis cannot show).
absl::StatusOr<std::string> GnuplotScript(const Plot& plot,
                                          absl::string_view path);

// Draws `plot` into `path` by running gnuplot on that script. NOT_FOUND
// (saying how to install it) when gnuplot is not on PATH; FAILED_PRECONDITION
// quoting gnuplot when it fails or writes nothing.
absl::Status WritePlot(const Plot& plot, absl::string_view path);

}  // namespace distsim

#endif  // TOOLS_DISTSIM_PLOT_H_
