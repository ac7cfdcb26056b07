// Internal helpers of the simulated NCCL communicator
// (sim_nccl_communicator.h): what a rank brings to a call, the check that
// the ranks agree, and the results computed in rank order.
//
// Example:
//   internal::Arrival mine = ...;  // one per rank
//   absl::Status same = internal::Agree(first, mine, rank);
//   std::vector<std::byte> scratch;
//   absl::Status done = internal::ComputeResults({&a0, &a1}, scratch);
#ifndef SIMULATOR_SIM_NCCL_CALL_H_
#define SIMULATOR_SIM_NCCL_CALL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "devices/dtype.h"
#include "devices/reduce_op.h"
#include "simulator/nccl_model.h"

namespace simulator {
namespace internal {

// "ncclAllReduce", as NCCL names its entry points.
const char* CallName(NcclOp op);

// "512 B", "4 KiB", "1.5 MiB": the size in a trace span's name.
std::string FormatSize(int64_t bytes);

// What one rank brought to a collective call.
struct Arrival {
  NcclOp op = NcclOp::kAllReduce;
  int root = 0;
  devices::DType dtype = devices::DType::kFloat32;
  devices::ReduceOp reduce = devices::ReduceOp::kSum;
  int64_t input_count = 0;
  int64_t output_count = 0;
  const std::byte* input = nullptr;  // null in timing-only mode
  std::byte* output = nullptr;
};

// OK if `mine` (of `rank`) describes the same collective as `first`;
// INVALID_ARGUMENT saying what differs otherwise.
absl::Status Agree(const Arrival& first, const Arrival& mine, int rank);

// Writes the results of one call into the ranks' outputs (functional mode):
// reductions in rank order, ((x0 op x1) op x2) ..., kMean as a sum divided
// by the number of ranks once at the end. `ranks[i]` is rank i's arrival;
// all agree (Agree) and hold data. `scratch` is reused working memory.
absl::Status ComputeResults(const std::vector<const Arrival*>& ranks,
                            std::vector<std::byte>& scratch);

}  // namespace internal
}  // namespace simulator

#endif  // SIMULATOR_SIM_NCCL_CALL_H_
