// The text side of collective_sweep.h: operation names, byte sizes with
// suffixes, bus bandwidth factors, the nccl-tests table and the JSON rows.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "distribute/cluster/json.h"
#include "tools/distsim/collective_sweep.h"

namespace distsim {
namespace {

constexpr SweepOp kOps[] = {SweepOp::kAllReduce,     SweepOp::kAllGather,
                            SweepOp::kReduceScatter, SweepOp::kBroadcast,
                            SweepOp::kReduce,        SweepOp::kAllToAll,
                            SweepOp::kBarrier};

// A number of a CSV row: nine significant digits.
std::string CsvNumber(double v) { return absl::StrFormat("%.9g", v); }

}  // namespace

absl::string_view SweepOpName(SweepOp op) {
  switch (op) {
    case SweepOp::kAllReduce:
      return "all_reduce";
    case SweepOp::kAllGather:
      return "all_gather";
    case SweepOp::kReduceScatter:
      return "reduce_scatter";
    case SweepOp::kBroadcast:
      return "broadcast";
    case SweepOp::kReduce:
      return "reduce";
    case SweepOp::kAllToAll:
      return "all_to_all";
    case SweepOp::kBarrier:
      return "barrier";
  }
  return "unknown";
}

absl::StatusOr<SweepOp> SweepOpFromName(absl::string_view name) {
  for (SweepOp op : kOps) {
    if (SweepOpName(op) == name) return op;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown --op=", name,
      "; use all_reduce, all_gather, reduce_scatter, broadcast, reduce, "
      "all_to_all or barrier"));
}

double BusBandwidthFactor(SweepOp op, int n) {
  if (n < 1) return 0;
  const double ranks = n;
  switch (op) {
    case SweepOp::kAllReduce:
      return 2 * (ranks - 1) / ranks;
    case SweepOp::kAllGather:
    case SweepOp::kReduceScatter:
    case SweepOp::kAllToAll:
      return (ranks - 1) / ranks;
    case SweepOp::kBroadcast:
    case SweepOp::kReduce:
      return 1;
    case SweepOp::kBarrier:
      return 0;
  }
  return 0;
}

absl::StatusOr<int64_t> ParseByteSize(absl::string_view text) {
  absl::string_view digits = text;
  int shift = 0;
  if (!digits.empty()) {
    switch (absl::ascii_tolower(digits.back())) {
      case 'k':
        shift = 10;
        break;
      case 'm':
        shift = 20;
        break;
      case 'g':
        shift = 30;
        break;
      default:
        break;
    }
    if (shift > 0) digits.remove_suffix(1);
  }
  int64_t value = 0;
  if (digits.empty() || !absl::ascii_isdigit(digits.front()) ||
      !absl::SimpleAtoi(digits, &value) || value < 1 ||
      value > (int64_t{1} << (62 - shift))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "size '", text,
        "' is not a byte count: write a whole number of at least 1, "
        "optionally followed by K, M or G (powers of 1024), e.g. 8, 64K, 8G"));
  }
  return value << shift;
}

namespace {

// nccl-tests' name of a dtype ("float", "half", ...); ours where it has
// none.
std::string NcclTypeName(absl::string_view dtype) {
  if (dtype == "float32") return "float";
  if (dtype == "float64") return "double";
  if (dtype == "float16") return "half";
  return std::string(dtype);
}

// nccl-tests' redop and root columns for an operation.
std::string RedOp(absl::string_view op) {
  return op == "all_reduce" || op == "reduce" || op == "reduce_scatter"
             ? "sum"
             : "none";
}
int Root(absl::string_view op) {
  return op == "broadcast" || op == "reduce" ? 0 : -1;
}

// nccl-tests' time column: fewer decimals as the time grows.
std::string TimeColumn(double us) {
  if (us >= 10000.0) return absl::StrFormat("%7.0f", us);
  if (us >= 100.0) return absl::StrFormat("%7.1f", us);
  return absl::StrFormat("%7.2f", us);
}

}  // namespace

std::string FormatSweepHeader(const SweepResult& result, absl::string_view op) {
  std::string out;
  absl::StrAppendFormat(&out, "# %s on %s: %s\n", op, result.platform,
                        result.hardware);
  absl::StrAppend(&out, "#\n");
  absl::StrAppend(&out, "#", std::string(62, ' '), "out-of-place",
                  std::string(23, ' '), "in-place\n");
  absl::StrAppendFormat(
      &out,
      "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  "
      "%6s  %s\n",
      "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
      "#wrong", "time", "algbw", "busbw", "#wrong", "algorithm");
  absl::StrAppendFormat(
      &out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s\n",
      "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)",
      "(GB/s)", "(GB/s)");
  return out;
}

std::string FormatSweepRow(const SweepRow& row) {
  // Out of place and in place are the same simulated collective; data is
  // not checked (nccl-tests -c 0 prints N/A).
  const std::string placed =
      absl::StrFormat("  %7s  %6.2f  %6.2f  %6s", TimeColumn(row.time_us),
                      row.algbw, row.busbw, "N/A");
  return absl::StrFormat("%12d  %12d  %8s  %6s  %6d%s%s  %s\n", row.bytes,
                         row.count, NcclTypeName(row.dtype), RedOp(row.op),
                         Root(row.op), placed, placed, row.algorithm);
}

std::string FormatSweepFooter(const SweepResult& result) {
  double busbw = 0;
  for (const SweepRow& row : result.rows) busbw += row.busbw;
  if (!result.rows.empty()) busbw /= static_cast<double>(result.rows.size());
  return absl::StrFormat(
      "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %g \n#\n",
      busbw);
}

std::string FormatSweepTable(const SweepResult& result) {
  std::string out = FormatSweepHeader(
      result, result.rows.empty() ? "" : result.rows.front().op);
  for (const SweepRow& row : result.rows) {
    absl::StrAppend(&out, FormatSweepRow(row));
  }
  absl::StrAppend(&out, FormatSweepFooter(result));
  return out;
}

std::string SweepRowsToJson(const std::vector<SweepRow>& rows) {
  distribute::cluster::Json out = distribute::cluster::Json::array();
  for (const SweepRow& r : rows) {
    out.push_back({{"op", r.op},
                   {"bytes", r.bytes},
                   {"count", r.count},
                   {"dtype", r.dtype},
                   {"algorithm", r.algorithm},
                   {"time_us", r.time_us},
                   {"algbw", r.algbw},
                   {"busbw", r.busbw}});
  }
  return distribute::cluster::DumpJson(out) + "\n";
}

std::string SweepCsvHeader() {
  return "op,bytes,count,dtype,time_us,algbw,busbw,algorithm\n";
}

std::string SweepRowToCsv(const SweepRow& row) {
  // Algorithm labels ("auto:ring", "nccl:nvls/simple") hold no comma.
  return absl::StrCat(row.op, ",", row.bytes, ",", row.count, ",", row.dtype,
                      ",", CsvNumber(row.time_us), ",", CsvNumber(row.algbw),
                      ",", CsvNumber(row.busbw), ",", row.algorithm, "\n");
}

}  // namespace distsim
