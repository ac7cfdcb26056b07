// Runs one rank's program of a collective Schedule (schedule.h) over a
// devices::Transport: the only place where collective algorithms touch data.
// The same code moves bytes between host threads, simulated devices and (with
// the gRPC transport) processes.
//
// Example (every rank's thread calls this with its own transport endpoint):
//   absl::StatusOr<Schedule> s = BuildSchedule(CollectiveOp::kAllReduce,
//                                              Algorithm::kRing, options);
//   ExecuteOptions exec;
//   exec.dtype = devices::DType::kFloat32;
//   exec.op = devices::ReduceOp::kSum;
//   exec.timeout = absl::Seconds(30);
//   absl::Status st = ExecuteSchedule(*s, transport, input, output, exec);
//
// Contract:
//  * Steps are issued in program order; before a step is issued every step
//    in its `deps` has completed. On a transport that
//    prefers_early_receives(), receives without deps are posted first, all
//    of them, so that their data never waits for its buffer (schedule.h
//    allows both orders). Sends and receives are posted asynchronously, so many
//    are in flight at once in both directions; the schedule builders guarantee
//    this order cannot deadlock.
//  * Tags on the wire are exec.tag_base + step tag, so concurrent collectives
//    on one transport group must use tag bases far enough apart
//    (kTagStride per instance is always enough).
//  * Reductions follow the schedule's order, so results are bit-identical run
//    to run. kMean accumulates as a sum and is divided by the group size once
//    at the end, on the ranks that hold a full reduction.
//  * input/output may be null together (timing-only devices): messages still
//    carry their sizes, and reductions and copies are skipped.
//  * Every wait is bounded by the time left of exec.timeout; past it the call
//    returns DEADLINE_EXCEEDED naming the step and the peer, and aborts the
//    rank's transport endpoint so that peers fail fast too.
#ifndef DISTRIBUTE_COLLECTIVE_EXECUTOR_H_
#define DISTRIBUTE_COLLECTIVE_EXECUTOR_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "devices/dtype.h"
#include "devices/reduce_op.h"
#include "devices/transport.h"
#include "distribute/collective/schedule.h"

namespace distribute {
namespace collective {

// Wire tags of one collective instance lie in [tag_base, tag_base + stride).
inline constexpr uint64_t kTagStride = uint64_t{1} << 32;

struct ExecuteOptions {
  devices::DType dtype = devices::DType::kFloat32;
  devices::ReduceOp op = devices::ReduceOp::kSum;
  absl::Duration timeout = absl::Seconds(60);
  uint64_t tag_base = 0;
  // Abort the transport endpoint when this rank fails, so that its peers'
  // pending receives fail with UNAVAILABLE instead of waiting out their
  // timeouts.
  bool abort_on_error = true;
};

// Runs the program of rank transport.rank() of `schedule`.
// `input` holds RankProgram::input_count elements and `output`
// output_count elements of exec.dtype; they must not overlap.
// INVALID_ARGUMENT if the transport's group size differs from the
// schedule's, or if exactly one of input/output is null while its count is
// non-zero; DEADLINE_EXCEEDED past the timeout; UNAVAILABLE if the
// transport was aborted; otherwise what the transport or kernels return.
absl::Status ExecuteSchedule(const Schedule& schedule,
                             devices::Transport& transport, const void* input,
                             void* output, const ExecuteOptions& exec);

}  // namespace collective
}  // namespace distribute

#endif  // DISTRIBUTE_COLLECTIVE_EXECUTOR_H_
