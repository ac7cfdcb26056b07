// Helpers of the simulated NCCL communicator; see sim_nccl_call.h.
#include "simulator/sim_nccl_call.h"

#include <cmath>
#include <cstring>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/reduce_kernels.h"
#include "devices/status_macros.h"

namespace simulator {
namespace internal {

// "ncclAllReduce", as NCCL names its entry points.
const char* CallName(NcclOp op) {
  switch (op) {
    case NcclOp::kAllReduce:
      return "ncclAllReduce";
    case NcclOp::kAllGather:
      return "ncclAllGather";
    case NcclOp::kReduceScatter:
      return "ncclReduceScatter";
    case NcclOp::kBroadcast:
      return "ncclBroadcast";
    case NcclOp::kReduce:
      return "ncclReduce";
    case NcclOp::kAllToAll:
      return "ncclAllToAll";
  }
  return "nccl";
}

// "512 B", "4 KiB", "1.5 MiB": the size in a trace span's name.
std::string FormatSize(int64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return absl::StrCat(bytes, " B");
  const double rounded = std::round(value * 10) / 10;
  return absl::StrCat(rounded, " ", kUnits[unit]);
}

// Whether two ranks' arrivals describe the same collective.
absl::Status Agree(const Arrival& first, const Arrival& mine, int rank) {
  auto mismatch = [&](absl::string_view what, const std::string& a,
                      const std::string& b) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", rank, " called ", CallName(mine.op), " with ", what, " ", b,
        " but an earlier rank of the same call (call number k of every rank "
        "is one collective) used ",
        CallName(first.op), " with ", what, " ", a,
        "; every rank must make the same sequence of calls"));
  };
  if (first.op != mine.op) {
    return mismatch("collective", CallName(first.op), CallName(mine.op));
  }
  if (first.root != mine.root) {
    return mismatch("root", absl::StrCat(first.root), absl::StrCat(mine.root));
  }
  if (first.dtype != mine.dtype) {
    return mismatch("dtype", std::string(devices::DTypeName(first.dtype)),
                    std::string(devices::DTypeName(mine.dtype)));
  }
  if (first.reduce != mine.reduce) {
    return mismatch("reduce op",
                    std::string(devices::ReduceOpName(first.reduce)),
                    std::string(devices::ReduceOpName(mine.reduce)));
  }
  if (first.input_count != mine.input_count ||
      first.output_count != mine.output_count) {
    return mismatch(
        "element counts (input, output)",
        absl::StrCat("(", first.input_count, ", ", first.output_count, ")"),
        absl::StrCat("(", mine.input_count, ", ", mine.output_count, ")"));
  }
  return absl::OkStatus();
}

absl::Status ComputeResults(const std::vector<const Arrival*>& ranks,
                            std::vector<std::byte>& scratch_) {
  const int n_ = static_cast<int>(ranks.size());
  const Arrival& a = *ranks[0];
  const size_t elem = devices::DTypeSize(a.dtype);
  auto in = [&](int r) { return ranks[static_cast<size_t>(r)]->input; };
  auto out = [&](int r) { return ranks[static_cast<size_t>(r)]->output; };
  const devices::ReduceOp op =
      a.reduce == devices::ReduceOp::kMean ? devices::ReduceOp::kSum : a.reduce;
  // The reduction of every rank's `count` elements into scratch_.
  auto reduce_all = [&](int64_t count) -> absl::Status {
    const size_t bytes = static_cast<size_t>(count) * elem;
    scratch_.resize(bytes);
    if (bytes == 0) return absl::OkStatus();
    std::memcpy(scratch_.data(), in(0), bytes);
    for (int r = 1; r < n_; ++r) {
      ASSIGN_OR_RETURN(
          devices::KernelCost cost,
          devices::Accumulate(op, in(r), scratch_.data(), count, a.dtype));
    }
    if (a.reduce == devices::ReduceOp::kMean) {
      ASSIGN_OR_RETURN(
          devices::KernelCost cost,
          devices::FinalizeMean(scratch_.data(), count, a.dtype, n_));
    }
    return absl::OkStatus();
  };
  const size_t in_bytes = static_cast<size_t>(a.input_count) * elem;
  const size_t out_bytes = static_cast<size_t>(a.output_count) * elem;
  switch (a.op) {
    case NcclOp::kAllReduce:
    case NcclOp::kReduce: {
      RETURN_IF_ERROR(reduce_all(a.input_count));
      for (int r = 0; r < n_ && in_bytes > 0; ++r) {
        if (a.op == NcclOp::kReduce && r != a.root) continue;
        std::memcpy(out(r), scratch_.data(), in_bytes);
      }
      return absl::OkStatus();
    }
    case NcclOp::kReduceScatter: {
      RETURN_IF_ERROR(reduce_all(a.input_count));
      for (int r = 0; r < n_ && out_bytes > 0; ++r) {
        std::memcpy(out(r),
                    scratch_.data() + static_cast<size_t>(r) * out_bytes,
                    out_bytes);
      }
      return absl::OkStatus();
    }
    case NcclOp::kAllGather:
      for (int r = 0; r < n_ && in_bytes > 0; ++r) {
        for (int from = 0; from < n_; ++from) {
          std::memcpy(out(r) + static_cast<size_t>(from) * in_bytes, in(from),
                      in_bytes);
        }
      }
      return absl::OkStatus();
    case NcclOp::kBroadcast:
      for (int r = 0; r < n_ && out_bytes > 0; ++r) {
        if (r != a.root) std::memcpy(out(r), in(a.root), out_bytes);
      }
      return absl::OkStatus();
    case NcclOp::kAllToAll: {
      const size_t block = in_bytes / static_cast<size_t>(n_);
      for (int r = 0; r < n_ && block > 0; ++r) {
        for (int from = 0; from < n_; ++from) {
          std::memcpy(out(r) + static_cast<size_t>(from) * block,
                      in(from) + static_cast<size_t>(r) * block, block);
        }
      }
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unknown collective");
}

}  // namespace internal
}  // namespace simulator
