// A simulated NCCL: the devices::Communicator that SimPlatform hands out for
// groups of simulated GPUs ("nccl(sim)"), so that code written for NCCL
// (distribute::NcclAllReduce) runs unchanged on a simulated DGX and is timed
// as NCCL would be there.
//
// Semantics (beyond devices/communicator.h):
//  - Matching: as in NCCL, the k-th collective call of every rank belongs to
//    one collective; all ranks must agree on the collective, its root, dtype,
//    reduce op and element counts (INVALID_ARGUMENT to every rank of the
//    call otherwise).
//  - Rendezvous: a call starts in simulated time when its last rank arrives
//    (start = the latest arrival) and ends, on every rank, after the time
//    that the NCCL model (nccl_model.h, PredictNccl) gives for the
//    operation, its size in nccl-tests' convention and the group's hardware,
//    with the algorithm and protocol NCCL would choose. That time is charged
//    to every rank's device as communication time and shows in the Chrome
//    trace as a span on the device's "collective" track, e.g.
//    "ncclAllReduce ring/ll128 4 MiB". The modeled collective crosses no
//    simulated link: it does not contend with concurrent transfers.
//  - Results (functional mode): a fixed, documented order, not NCCL's own
//    (which depends on its channels and is not knowable): reductions go in
//    rank order, ((x0 op x1) op x2) ..., kMean as a sum divided by size()
//    once at the end; they are computed when the call ends. Timing-only mode
//    moves no data (tensors are shapes only).
//  - Tensors: on the rank's device, or host tensors on no device (the
//    strategies compute with host kernels on the simulator); a tensor on
//    another device is INVALID_ARGUMENT.
//  - Send/Recv are messages over the simulated transport (sim_transport.h)
//    on the route between the two devices: the k-th Send from rank a to b
//    meets the k-th Recv on b from a, and takes the network model's time.
//  - Timeouts: options.timeout bounds the host time a rank waits (the
//    simulator's safety net). A rank whose peers never arrive (every thread
//    blocked and nothing left to simulate) gets DEADLINE_EXCEEDED naming the
//    missing ranks. A rank that gives up aborts the communicator, as
//    ncclCommAbort does: later calls fail with UNAVAILABLE.
//  - Faults: a rank's device (or host) that dies before the call ends fails
//    the call on every rank with UNAVAILABLE naming it.
//
// Example (each rank on its own thread bound to its GPU):
//   absl::StatusOr<std::unique_ptr<devices::Communicator>> nccl =
//       platform->CreateCommunicator({"GPU:0", "GPU:1", "GPU:2", "GPU:3"});
//   devices::CollectiveOptions options;
//   options.timeout = absl::Seconds(30);
//   absl::Status s = (*nccl)->AllReduce(rank, grads, grads, options);
//   // Every rank returns at start + PredictNccl(...)->time_us.
#ifndef SIMULATOR_SIM_NCCL_COMMUNICATOR_H_
#define SIMULATOR_SIM_NCCL_COMMUNICATOR_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "devices/communicator.h"
#include "simulator/sim_context.h"

namespace simulator {

// The communicator's name, as name() returns it.
inline constexpr char kSimNcclName[] = "nccl(sim)";

// A simulated NCCL communicator over the context's devices `devices`
// (indices into its topology's devices; rank i is devices[i]).
// INVALID_ARGUMENT for an empty list, an index out of range or a device
// listed twice; FAILED_PRECONDITION naming the first device that is not a
// GPU; the errors of describing the group's hardware (group_hardware.h).
absl::StatusOr<std::unique_ptr<devices::Communicator>>
CreateSimNcclCommunicator(std::shared_ptr<SimContext> context,
                          std::vector<int> devices);

}  // namespace simulator

#endif  // SIMULATOR_SIM_NCCL_COMMUNICATOR_H_
