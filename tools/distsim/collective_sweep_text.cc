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
#include "tools/distsim/collective_sweep.h"

namespace distsim {
namespace {

constexpr SweepOp kOps[] = {SweepOp::kAllReduce,     SweepOp::kAllGather,
                            SweepOp::kReduceScatter, SweepOp::kBroadcast,
                            SweepOp::kReduce,        SweepOp::kAllToAll,
                            SweepOp::kBarrier};

std::string JsonString(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

std::string JsonNumber(double v) { return absl::StrFormat("%.9g", v); }

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

std::string FormatSweepHeader(const SweepResult& result, absl::string_view op) {
  std::string out;
  absl::StrAppendFormat(&out, "# %s on %s: %s\n", op, result.platform,
                        result.hardware);
  absl::StrAppend(&out, "#\n");
  absl::StrAppendFormat(&out, "# %12s  %12s  %8s  %12s  %8s  %8s  %s\n", "size",
                        "count", "type", "time", "algbw", "busbw", "algorithm");
  absl::StrAppendFormat(&out, "# %12s  %12s  %8s  %12s  %8s  %8s\n", "(B)",
                        "(elements)", "", "(us)", "(GB/s)", "(GB/s)");
  return out;
}

std::string FormatSweepRow(const SweepRow& row) {
  return absl::StrFormat("  %12d  %12d  %8s  %12.2f  %8.2f  %8.2f  %s\n",
                         row.bytes, row.count, row.dtype, row.time_us,
                         row.algbw, row.busbw, row.algorithm);
}

std::string FormatSweepTable(const SweepResult& result) {
  std::string out = FormatSweepHeader(
      result, result.rows.empty() ? "" : result.rows.front().op);
  for (const SweepRow& row : result.rows) {
    absl::StrAppend(&out, FormatSweepRow(row));
  }
  return out;
}

std::string SweepRowsToJson(const std::vector<SweepRow>& rows) {
  std::string out = "[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const SweepRow& r = rows[i];
    absl::StrAppend(&out, i == 0 ? "" : ",", "{\"op\":", JsonString(r.op),
                    ",\"bytes\":", r.bytes, ",\"count\":", r.count,
                    ",\"dtype\":", JsonString(r.dtype),
                    ",\"algorithm\":", JsonString(r.algorithm),
                    ",\"time_us\":", JsonNumber(r.time_us),
                    ",\"algbw\":", JsonNumber(r.algbw),
                    ",\"busbw\":", JsonNumber(r.busbw), "}");
  }
  absl::StrAppend(&out, "]\n");
  return out;
}

}  // namespace distsim
