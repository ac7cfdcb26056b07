// An analytical model of what NCCL does for a collective on a group of GPUs
// of a topology, in the spirit of NCCL's own tuner (src/graph/tuning.cc):
// every (algorithm, protocol) pair that NCCL could run is given a latency
// and a bandwidth from the group's hardware (group_hardware.h), its time on
// the GPUs is
//   latency_us + pipeline fill (per protocol) + bytes / algorithm bandwidth,
// and NCCL's choice is the fastest pair. NcclRunOptions adds how the
// collective is launched and timed (nccl-tests' -g, -n) and what NCCL's
// environment allows. Used by `distsim collective --algorithm=nccl`,
// `distsim validate` and wherever a simulated NCCL is timed.
//
// Example:
//   absl::StatusOr<Topology> topology = BuiltinTopology("dgx_h100");
//   std::vector<int> gpus = {1, 2, 3, 4, 5, 6, 7, 8};  // device indices
//   absl::StatusOr<NcclPrediction> p =
//       PredictNccl(*topology, gpus, NcclOp::kAllReduce, int64_t{1} << 30);
//   // p->algorithm == NcclAlgorithm::kNvls, p->protocol ==
//   // NcclProtocol::kSimple, p->Label() == "nvls/simple",
//   // p->time_us about 4050 (busbw about 464 GB/s).
//
// Sizes are those of nccl-tests: the buffer of an all-reduce, broadcast or
// reduce; the whole (gathered) output of an all-gather and the whole input of
// a reduce-scatter; the per-rank buffer of an all-to-all.
//
// Algorithms (which ones apply is stated per operation):
//  ring       all operations but all-to-all; broadcast and reduce run as a
//             pipelined chain along the ring.
//  tree       all-reduce: a chain inside each node, a double binary tree
//             across nodes.
//  nvls       all-reduce with NVLink SHARP (every node's NVSwitch reduces);
//             across nodes it also needs SHARP in the fabric, as in NCCL.
//  nvls_tree  all-reduce on several nodes: NVLink SHARP inside each node, a
//             tree across nodes.
//  collnet    all-reduce on several nodes with SHARP in the fabric: a
//             reduce-scatter inside each node, the in-network all-reduce of
//             each rank's share through its NIC, an all-gather inside.
//  p2p        all-to-all: every rank sends a block to every other at once.
// Protocols: ll (8-byte stores with a flag, lowest latency, a quarter to a
// third of the link), ll128 (128-byte lines with a flag, NVLink only) and
// simple (large chunks with fences, the highest bandwidth); nvls, nvls_tree
// and collnet run simple only.
#ifndef SIMULATOR_NCCL_MODEL_H_
#define SIMULATOR_NCCL_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/group_hardware.h"
#include "simulator/topology.h"

namespace simulator {

enum class NcclOp {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
};

enum class NcclAlgorithm { kRing, kTree, kNvls, kNvlsTree, kCollNet, kP2p };

enum class NcclProtocol { kLL, kLL128, kSimple };

// "all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
// "all_to_all".
absl::string_view NcclOpName(NcclOp op);
// The inverse of NcclOpName; INVALID_ARGUMENT listing the names otherwise.
absl::StatusOr<NcclOp> NcclOpFromName(absl::string_view name);
// "ring", "tree", "nvls", "nvls_tree", "collnet", "p2p".
absl::string_view NcclAlgorithmName(NcclAlgorithm algorithm);
// "ll", "ll128", "simple".
absl::string_view NcclProtocolName(NcclProtocol protocol);

// One (algorithm, protocol) pair NCCL could run, and what it would take.
struct NcclCandidate {
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
  double latency_us = 0;
  // Algorithm bandwidth (bytes / time at large sizes), GB/s (1e9 B/s).
  double algbw_GBps = 0;
  // The share of algbw_GBps reached at this size: below 1 for trees at
  // mid sizes, whose pipeline through their depth runs below its rate.
  double size_factor = 1;
  // The time the pipeline takes to fill before it runs at algbw_GBps.
  double fill_us = 0;
  // The part of the latency that back-to-back collectives overlap: the
  // depth of a chain (broadcast, reduce) beyond its first hop.
  double chain_overlap_us = 0;
  // The mean time under the run options (NcclRunOptions).
  double time_us = 0;
};

// How the collective is launched, timed and restricted, as nccl-tests and
// NCCL's environment set it. The defaults describe one collective issued by
// a process that drives one GPU, as a training program issues it.
struct NcclRunOptions {
  // GPUs one host thread drives, launching their kernels one after another
  // in a group call (nccl-tests -g; 1: a process or thread per GPU, as
  // under mpirun).
  int gpus_per_thread = 1;
  // Collectives issued back to back on the stream; the time is their mean
  // (nccl-tests -n: it times -n iterations after -w warm-ups). With more
  // than one, a GPU that is done with its part of a rooted collective
  // (broadcast, reduce) starts the next one while the last ranks still
  // finish the previous, and the host's launches overlap the GPUs' work.
  int iters = 1;
  // Untimed collectives before them (nccl-tests -w); they change nothing
  // in the model but must not be negative.
  int warmup_iters = 0;
  // NCCL_ALGO and NCCL_PROTO: comma-separated names, case-insensitive, a
  // leading '^' to exclude instead ("" allows all). Algorithms: ring,
  // tree, nvls, nvlstree (or nvls_tree), collnet (also collnetdirect,
  // collnetchain), p2p (all-to-all, always allowed); protocols: ll, ll128,
  // simple.
  std::string algorithms;
  std::string protocols;
  // NCCL_NVLS_ENABLE: NVLink SHARP where the NVSwitches have it.
  bool nvls = true;
  // In-network reduction across nodes (the SHARP plugin, CollNet and NVLS
  // with SHARP); off by default, as in NCCL without the plugin. The fabric
  // must have it (FAILED_PRECONDITION otherwise).
  bool sharp = false;
};

struct NcclPrediction {
  NcclOp op = NcclOp::kAllReduce;
  int64_t bytes = 0;
  NcclAlgorithm algorithm = NcclAlgorithm::kRing;
  NcclProtocol protocol = NcclProtocol::kSimple;
  double time_us = 0;
  // Every pair that applies to the operation and the hardware, in the order
  // ring, tree, nvls, nvls_tree, collnet, p2p and ll, ll128, simple; ties
  // go to the earliest.
  std::vector<NcclCandidate> candidates;
  GroupHardware hardware;

  // "nvls/simple".
  std::string Label() const;
};

// NCCL's predicted choice and time for `op` of `bytes` on the GPUs
// `device_indices` (indices into topology.devices(), rank i being
// device_indices[i]). INVALID_ARGUMENT for negative sizes and the errors of
// DescribeGroupHardware; FAILED_PRECONDITION when a device is not a GPU.
absl::StatusOr<NcclPrediction> PredictNccl(
    const Topology& topology, const std::vector<int>& device_indices, NcclOp op,
    int64_t bytes);

// The same from an already described group (no routing): for sweeps.
absl::StatusOr<NcclPrediction> PredictNcclOn(const GroupHardware& hardware,
                                             NcclOp op, int64_t bytes);

// With run options: INVALID_ARGUMENT for an unknown name in
// options.algorithms / protocols (the message names the flag's NCCL
// variable), gpus_per_thread or iters below 1, warmup_iters below 0;
// FAILED_PRECONDITION when the lists leave no candidate for the operation
// or sharp is asked of a fabric whose switches do not reduce.
absl::StatusOr<NcclPrediction> PredictNcclOn(const GroupHardware& hardware,
                                             NcclOp op, int64_t bytes,
                                             const NcclRunOptions& options);
absl::StatusOr<NcclPrediction> PredictNccl(
    const Topology& topology, const std::vector<int>& device_indices, NcclOp op,
    int64_t bytes, const NcclRunOptions& options);

// Checks options.algorithms and options.protocols and the counts, as
// PredictNcclOn does, without a group (for flags).
absl::Status ValidateNcclRunOptions(const NcclRunOptions& options);

}  // namespace simulator

#endif  // SIMULATOR_NCCL_MODEL_H_
