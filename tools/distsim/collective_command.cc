// `distsim collective`: predicts a collective's time over a range of
// message sizes on a simulated topology and prints it as nccl-tests does
// (see collective_sweep.h for how each row is measured).
//
//   distsim collective --topology=dgx_h100 --op=all_reduce --algorithm=auto
//       --min_bytes=8 --max_bytes=8G --step_factor=2
//   distsim collective --topology=dgx_h100_cluster:16 --algorithm=nccl --json
//
// With --json, stdout holds exactly one JSON array of rows, with --csv a
// header line and a line per row (each as it is computed); the host time the
// sweep took goes to stderr either way.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "devices/status_macros.h"
#include "simulator/nccl_model.h"
#include "tools/distsim/collective_sweep.h"
#include "tools/distsim/plot.h"
#include "tools/distsim/subcommands.h"
#include "tools/flags/flags.h"

namespace distsim {
namespace {

// Bus bandwidth against size, a line per algorithm (AUTO's picks are lines
// of their own: "auto:ring", "auto:rhd", ...).
Plot SweepPlot(const SweepOptions& options, const std::vector<SweepRow>& rows) {
  Plot plot;
  plot.title = absl::StrCat(rows.empty() ? options.op : rows[0].op, " on ",
                            options.topology, ", ",
                            rows.empty() ? options.dtype : rows[0].dtype);
  plot.x_label = "message size (bytes)";
  plot.y_label = "bus bandwidth (GB/s)";
  plot.log_x = true;
  plot.log_y = true;
  plot.x_bytes = true;
  for (const SweepRow& row : rows) {
    // A barrier, or a size too small to move a byte, has no bandwidth.
    if (row.bytes <= 0 || !(row.busbw > 0)) continue;
    auto it = std::find_if(
        plot.series.begin(), plot.series.end(),
        [&](const PlotSeries& s) { return s.label == row.algorithm; });
    if (it == plot.series.end()) {
      plot.series.push_back({row.algorithm, {}});
      it = plot.series.end() - 1;
    }
    it->points.push_back({static_cast<double>(row.bytes), row.busbw});
  }
  return plot;
}

}  // namespace

absl::Status RunCollective(const std::vector<std::string>& args) {
  SweepOptions options;
  std::string min_bytes = "8";
  std::string max_bytes = "8G";
  bool json = false;
  std::string dims;
  // The NCCL model's counts are ints; flags parse 64-bit values.
  int64_t gpus_per_thread = options.nccl.gpus_per_thread;
  int64_t iters = options.nccl.iters;
  int64_t warmup_iters = options.nccl.warmup_iters;
  tools_flags::FlagSet flags("distsim collective");
  flags.String("topology", &options.topology,
               "built-in topology (dgx_a100, dgx_h100, hgx_h200, hgx_b200, "
               "gb200_nvl72, pcie_4gpu, pcie_4gpu_nop2p, pcie_8gpu_nop2p, "
               "h100_pcie_nvlink_pair; clusters "
               "{dgx_a100,dgx_h100,hgx_h200,hgx_b200,gb200_nvl72}_cluster:N"
               "[,nics=K][,nic_gbps=G][,fabric=ib|roce|efa]; `distsim "
               "devices` lists them) or a topology .textproto file");
  flags.String("op", &options.op,
               "all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
               "all_to_all or barrier");
  flags.String("algorithm", &options.algorithm,
               "auto (the cost model picks; the row shows the pick), a "
               "schedule algorithm of the op (ring, tree, rhd, direct, "
               "hierarchical; chain, binary_tree; pairwise; dissemination), "
               "or nccl (the NCCL model)");
  flags.String("min_bytes", &min_bytes,
               "smallest size; K, M, G suffixes are powers of 1024");
  flags.String("max_bytes", &max_bytes, "largest size");
  flags.Int("step_factor", &options.step_factor,
            "each size is the previous times this");
  flags.Int("gpus", &options.gpus, "use the first N GPUs (0: all)");
  flags.String("dtype", &options.dtype,
               "element type: float32, float16, bfloat16, float64, int32, "
               "int64, uint8");
  flags.String("trace", &options.trace_path,
               "write the Chrome trace of the largest size to this file");
  flags.Int("message_budget", &options.message_budget,
            "most messages one simulated collective may send; chunks grow "
            "to stay within it");
  flags.Bool("symmetry", &options.symmetry,
             "schedule algorithms: simulate one rank of each class of ranks "
             "that a symmetric network keeps in lockstep (the same times); "
             "--symmetry=false simulates every rank");
  flags.Int("gpus_per_node", &options.gpus_per_node,
            "place the ranks N per node (0: fill each node's GPUs)");
  flags.Int("channels", &options.channels,
            "schedule algorithms: split all_reduce, broadcast and reduce "
            "into N channels, each crossing nodes through other NICs (0: one "
            "per NIC of a node across nodes, as NCCL; 1 inside a node)");
  flags.String("dims", &dims,
               "hierarchical all-reduce: the grid of ranks, first dimension "
               "fastest, e.g. 8,32,64 (GPUs a node, nodes a pod, pods); "
               "default: GPUs per node, nodes");
  flags.Int("gpus_per_thread", &gpus_per_thread,
            "nccl: GPUs one thread drives in a group call, as nccl-tests -g "
            "(1: a process per GPU, as under mpirun)");
  flags.Int("iters", &iters,
            "nccl: collectives timed back to back, as nccl-tests -n; times "
            "are their mean");
  flags.Int("warmup_iters", &warmup_iters,
            "nccl: untimed collectives before them, as nccl-tests -w");
  flags.String("nccl_algo", &options.nccl.algorithms,
               "nccl: NCCL_ALGO, e.g. Ring,Tree or ^NVLS (ring, tree, nvls, "
               "nvlstree, collnet)");
  flags.String("nccl_proto", &options.nccl.protocols,
               "nccl: NCCL_PROTO, e.g. Simple or ^LL128 (ll, ll128, simple)");
  flags.Bool("nvls", &options.nccl.nvls,
             "nccl: NVLink SHARP where the NVSwitches have it "
             "(NCCL_NVLS_ENABLE); --nvls=false turns it off");
  flags.Bool("sharp", &options.nccl.sharp,
             "nccl: in-network reduction across nodes (the SHARP plugin: "
             "CollNet, NVLS with SHARP); off as in NCCL without the plugin");
  flags.Bool("json", &json, "print one JSON array of rows and nothing else");
  std::string plot_path;
  flags.String("plot", &plot_path,
               "also draw busbw against size, a line per algorithm, into "
               "this .png or .svg file (with gnuplot)");
  bool csv = false;
  flags.Bool("csv", &csv,
             "print comma-separated rows under a header line and nothing "
             "else");
  std::string model_path;
  flags.String("nccl_model", &model_path,
               "with --algorithm=nccl: a file of the NCCL model's constants "
               "(`name = value` lines, as `distsim validate --fit_out` writes "
               "them); constants it does not name keep their built-in values");
  absl::Status parsed = flags.Parse(args);
  if (absl::IsCancelled(parsed)) return absl::OkStatus();
  RETURN_IF_ERROR(parsed);
  model_path = UserPath(std::move(model_path));
  if (!model_path.empty() && options.algorithm != "nccl") {
    return absl::InvalidArgumentError(absl::StrCat(
        "--nccl_model sets the constants of the NCCL model, which only "
        "--algorithm=nccl uses (not --algorithm=",
        options.algorithm, ")"));
  }
  if (!model_path.empty()) {
    absl::StatusOr<simulator::NcclModelParams> loaded =
        simulator::LoadNcclModelParams(model_path);
    if (!loaded.ok()) {
      return absl::Status(
          loaded.status().code(),
          absl::StrCat("--nccl_model: ", loaded.status().message()));
    }
    options.nccl.params = *loaded;
  }
  if (json && csv) {
    return absl::InvalidArgumentError(
        "--json and --csv both choose the output; give one of them");
  }
  options.trace_path = UserPath(std::move(options.trace_path));
  plot_path = UserPath(std::move(plot_path));
  if (!plot_path.empty()) {
    RETURN_IF_ERROR(CheckPlotPath(plot_path));
  }
  for (auto [value, field] :
       {std::pair{gpus_per_thread, &options.nccl.gpus_per_thread},
        std::pair{iters, &options.nccl.iters},
        std::pair{warmup_iters, &options.nccl.warmup_iters}}) {
    // Out-of-range values become ones ValidateNcclRunOptions refuses or
    // that stay huge; none wraps to a small positive count.
    *field = static_cast<int>(std::clamp<int64_t>(value, -1, int64_t{1} << 30));
  }
  for (absl::string_view part : absl::StrSplit(dims, ',', absl::SkipEmpty())) {
    int32_t d = 0;
    if (!absl::SimpleAtoi(part, &d) || d < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--dims=", dims,
                       ": give positive sizes separated by commas, e.g. "
                       "--dims=8,32,64"));
    }
    options.dims.push_back(d);
  }
  ASSIGN_OR_RETURN(int64_t min, ParseByteSize(min_bytes));
  ASSIGN_OR_RETURN(int64_t max, ParseByteSize(max_bytes));
  options.min_bytes = min;
  options.max_bytes = max;

  const absl::Time start = absl::Now();
  // The table is printed a row at a time, as rows are computed, so that a
  // long sweep shows its progress; JSON is one array at the end.
  SweepRowCallback print_row;
  if (csv) {
    std::fputs(SweepCsvHeader().c_str(), stdout);
    print_row = [](const SweepResult&, const SweepRow& row) {
      std::fputs(SweepRowToCsv(row).c_str(), stdout);
      std::fflush(stdout);
    };
  } else if (!json) {
    print_row = [](const SweepResult& so_far, const SweepRow& row) {
      if (so_far.rows.size() == 1) {
        std::fputs(FormatSweepHeader(so_far, row.op).c_str(), stdout);
      }
      std::fputs(FormatSweepRow(row).c_str(), stdout);
      std::fflush(stdout);
    };
  }
  ASSIGN_OR_RETURN(SweepResult result, RunCollectiveSweep(options, print_row));
  const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (json) {
    std::fputs(SweepRowsToJson(result.rows).c_str(), stdout);
  } else if (!csv) {
    if (result.rows.empty()) {
      std::fputs(FormatSweepTable(result).c_str(), stdout);
    } else {
      std::fputs(FormatSweepFooter(result).c_str(), stdout);
    }
    if (!options.trace_path.empty()) {
      std::printf("# trace of the largest size written to %s\n",
                  options.trace_path.c_str());
    }
  }
  std::fflush(stdout);
  // Rows replayed by symmetry, and the most classes one of them simulated.
  int64_t classes = 0;
  int rows_by_symmetry = 0;
  for (const SweepRow& row : result.rows) {
    classes = std::max(classes, row.rank_classes);
    if (row.rank_classes > 0) ++rows_by_symmetry;
  }
  const std::string symmetry =
      rows_by_symmetry == 0
          ? ""
          : absl::StrCat("; ", rows_by_symmetry, " by symmetry, simulating ",
                         classes == 1 ? "one rank" : "at most ",
                         classes == 1 ? "" : absl::StrCat(classes, " ranks"),
                         " for ", result.ranks);
  std::fprintf(stderr, "distsim collective: %zu size(s) in %.2f s%s\n",
               result.rows.size(), seconds, symmetry.c_str());
  if (!plot_path.empty()) {
    RETURN_IF_ERROR(WritePlot(SweepPlot(options, result.rows), plot_path));
    std::fprintf(json || csv ? stderr : stdout, "# plot written to %s\n",
                 plot_path.c_str());
  }
  return absl::OkStatus();
}

}  // namespace distsim
