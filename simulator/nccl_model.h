// An analytical model of what NCCL does for a collective on a group of GPUs
// of a topology, in the spirit of NCCL's own tuner (src/graph/tuning.cc):
// every (algorithm, protocol) pair that NCCL could run is given a latency
// and a bandwidth from the group's hardware (group_hardware.h), its time on
// the GPUs is
//   latency_us + pipeline fill (per protocol) + bytes / algorithm bandwidth,
// and NCCL's choice is the pair its own tuner finds fastest (which differs
// from the model's times only for trees on 2 and 3 nodes: the tuner charges
// every tree half of the network, where those move more; see
// NcclCandidate::tuner_algbw_GBps). NcclRunOptions adds how the
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
  // The algorithm bandwidth NCCL's own tuner assumes, by which it chooses
  // among the candidates, where it differs from algbw_GBps (0: the same).
  double tuner_algbw_GBps = 0;
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
  // The same with tuner_algbw_GBps: what NCCL compares when it chooses.
  double tuner_time_us = 0;
};

// The model's constants. The defaults are the calibrated model that every
// prediction uses unless told otherwise; each cites its source (a spec
// sheet, NCCL's tuner, a published measurement, or "fitted": set on the
// fitted part of the validation set, simulator/validation/, never on the
// held-out part). FitNcclModelParams (simulator/validation/fit.h, `distsim
// validate --fit`) fits them to a set of measurements, such as a user's
// own cluster; NcclModelParamsFromText reads what it prints.
//
// Arrays indexed by protocol are {LL, LL128, simple}; by hop class,
// {NVLink, PCIe, network}.
struct NcclModelParams {
  // Share of a link's bandwidth that the simple protocol turns into bus
  // bandwidth: NVLink 0.82 (8 x H100: ring busbw 365-370 of 450 GB/s,
  // NVIDIA/nccl issue #1455 and NVIDIA/nccl-tests issue #212, S. Jeaugey:
  // "with the protocol overhead (~20%) NCCL can get an effective NVLink
  // bandwidth of 370GB/s"; 8 x A100: 230-250 of 300 GB/s), PCIe 0.78 (an
  // estimate: TLP headers cost about 10% at 256-byte payloads, and flow
  // control more), network 0.92 (8 x 400 Gb/s NICs per node: ring busbw
  // 350-400 GB/s across nodes of 8 x H100).
  double simple_efficiency[3] = {0.82, 0.78, 0.92};
  // LL128 puts 120 data bytes in every 128-byte line; its per-thread
  // throughput keeps it below simple at large sizes, as NCCL measures. NCCL
  // enables it only over NVLink, so PCIe gets none (the middle entry is
  // unused).
  double ll128_efficiency[3] = {0.74, 0.0, 0.85};
  // Launch, setup and completion of one collective, microseconds. With the
  // per-hop figures below they give an all-reduce of a few bytes on one
  // NVLink node 10-20 us (published nccl-tests runs on DGX A100 and H100).
  double base_latency_us[3] = {4.5, 6.0, 8.0};
  // Software cost of one step on a hop (flag polling, fences, a network
  // proxy's post and completion), [protocol][hop class]; the route's wire
  // latency is added. Estimates of the order of NCCL's tuning tables
  // (hwLat in NVIDIA/nccl src/graph/tuning.cc). LL128 never crosses PCIe:
  // its entry there is unused.
  double hop_latency_us[3][3] = {
      {0.3, 0.8, 2.5},  // LL
      {1.0, 1.5, 4.0},  // LL128
      {2.5, 4.0, 8.0},  // simple
  };
  // NVLS: each GPU sends S + S/n and receives as much through its NVLink
  // (the loads of the reduction and the multicast of the results), so the
  // ideal algorithm bandwidth is B n / (n + 1); the NVSwitch reaches this
  // share of it: 256-273 GB/s on 5 to 8 H100s against 258-273 measured
  // (NVIDIA/nccl issue #1455), and on 4 no better than the ring.
  double nvls_efficiency = 0.683;
  // Multimem load-reduce and multicast-store round trips through the
  // NVSwitch and the synchronisation around them (estimate).
  double nvls_latency_us = 12.0;
  // Pipeline fill of NVLS inside a node (and across nodes with SHARP): the
  // switch reduces, so there is no ring of steps to fill, only NVLS's own
  // chunks in flight. Fitted (`distsim validate --fit=nvls_fill_us`, prior
  // chosen by cross-validation: none) on the fitted part, where the
  // azure-h200-nvls points (8 x H200, NCCL_ALGO=NVLS) measure 31-35 us at
  // 64 KiB and 1 MiB and 122 us at 16 MiB; NVLS used to be charged the
  // simple ring's 100 us.
  double nvls_fill_us = 9.6;
  // One in-network all-reduce through the fabric's SHARP aggregation tree,
  // up and down (estimate), and the share of the network bandwidth it
  // reaches. Fitted on the two SHARP sources of the fitted part, which
  // disagree: CollNet on 2 x 8 A100 with 4 HDR ports (abci-a100-sharp,
  // NCCL 2.8) reaches 0.61 of the ports, on 8 x 8 B200 with 8 NDR ports
  // (together-b200-use3a) 0.85; 0.72 is off by about 15% on each.
  double sharp_latency_us = 10.0;
  double sharp_efficiency = 0.72;
  // Trees overlap their reduce and broadcast phases imperfectly (estimate).
  double tree_efficiency = 0.9;
  // Host time to launch one GPU's kernel of a collective (cudaLaunchKernel
  // and NCCL's enqueue): a thread driving g GPUs spends g of these per
  // collective, and back-to-back collectives of small messages are bound
  // by it. Fitted: the superbench-a100-g8 latency points (-g 8, 1 KiB
  // broadcast, reduce, all-gather, reduce-scatter and 8 B all-reduce all
  // measure 34.7-35.4 us, the launch rate, whatever their GPU time).
  double launch_per_gpu_us = 4.3;
  // Pipeline fill, microseconds: a collective's data moves through a
  // pipeline of steps in chunks, per channel, and the first chunks cross
  // every step before the pipeline runs at its full rate; chunks grow with
  // the protocol (LL lines, LL128 lines, simple's 512 KiB steps). Fitted on
  // the mid-size points of the fitted part (e.g. 8 x A100 all-gather of 32
  // MiB: 266 us measured against 160 us at full bandwidth).
  double pipeline_fill_us[3] = {1.0, 60.0, 100.0};
  // NCCL's SHM transport between GPUs without peer-to-peer: every byte is
  // written to pinned host memory by one GPU and read by the other, through
  // the root complex, so a ring reaches this share of the PCIe link.
  // Fitted: the chlc-4090-nop2p points (8 x RTX 4090, all-reduce busbw 14.4
  // GB/s at 128 MiB over Gen4 x16).
  double host_staged_efficiency = 0.55;
  // All-to-all posts one send and one receive per peer (estimate).
  double per_peer_us = 0.2;
  // A ring across nodes posts every step of every channel through the
  // network proxy, so each of its steps, inside a node too, takes at least
  // this long, per protocol (the chains of broadcast and reduce are not
  // charged it, as in NCCL): NCCL's tuner charges 1 us (x86 Intel hosts; 2
  // on AMD), three times that for simple ("Inter-node rings still have to
  // launch nsteps * net overhead", getNetOverhead in NVIDIA/nccl
  // src/graph/tuning.cc, NCCL 2.19 to 2.28). Taken as published.
  double ring_net_overhead_us[3] = {1.0, 1.0, 3.0};
  // The latency of a simple-protocol ring all-reduce across nodes, base
  // included, is this many times the sum once every channel carries data (the
  // "plateau effect of ring" in ncclTopoGetAlgoTime, NVIDIA/nccl
  // src/graph/tuning.cc: 1.4 from Ampere on, 1.9 before). Taken as
  // published for compute capability 80 and up.
  double ring_plateau_factor = 1.4;
  // The share of NVLink 5 (Blackwell, compute capability 100 and up) that
  // the simple and LL128 protocols reach, against their Hopper figures
  // above. Fitted (`distsim validate --fit=blackwell_nvlink_share`) on the
  // fitted part, whose bandwidth-bound GB200 points (rings and all-to-all
  // on 4 to 64 GPUs of a rack) run below Hopper's shares: 0.902, with the
  // prior that cross-validation chose (0.01); kept as 0.90. NCCL's own
  // tuner gives NVLS on Blackwell 0.74 / 0.85 = 0.87 of Hopper's efficiency
  // (nvlsEfficiency).
  double blackwell_nvlink_share = 0.90;
};

// Every constant of NcclModelParams by name ("simple_efficiency.nvlink",
// "hop_latency_us.ll128.net", "nvls_latency_us", ...), in declaration
// order, with its address in `params`; the unused LL128-over-PCIe entries
// are not listed.
struct NcclModelParam {
  std::string name;
  double* value = nullptr;
};
std::vector<NcclModelParam> NcclModelParamList(NcclModelParams& params);

// "name = value" lines, one per constant, in NcclModelParamList's order,
// with the shortest decimal that reads back to the same double.
std::string NcclModelParamsToText(const NcclModelParams& params);
// Reads such lines ('#' starts a comment; blank lines are skipped) over
// the defaults: constants not named keep their default. INVALID_ARGUMENT
// naming the line for an unknown name, a value that is not a finite number
// or is negative, or a name given twice.
absl::StatusOr<NcclModelParams> NcclModelParamsFromText(absl::string_view text);
// NcclModelParamsFromText of a file: NOT_FOUND when it cannot be read; its
// errors name the file.
absl::StatusOr<NcclModelParams> LoadNcclModelParams(const std::string& path);

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
  // The model's constants (the calibrated defaults unless a fit is given).
  NcclModelParams params;
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
