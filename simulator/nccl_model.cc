#include "simulator/nccl_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "devices/status_macros.h"

namespace simulator {
namespace {

// ---------------------------------------------------------------------------
// Calibration. The model's constants (NcclModelParams) are set so that its
// large- and small-message predictions meet these published measurements
// (nccl-tests, float32 sum, out of place):
//  [1] 8 x H100 SXM on NVSwitch (DGX/HGX H100, NVLink 4 at 450 GB/s per GPU
//      each way), all-reduce at 2-4 GiB: ring busbw 365-370 GB/s on 2 to 8
//      GPUs; NVLS algbw 258, 265, 270 and 273 GB/s on 5, 6, 7 and 8 GPUs
//      (busbw 420-480 GB/s), and no better than the ring on 2-4 GPUs.
//      Sources: NVIDIA/nccl issue #1455 (2024-09, measurements on 8 x
//      H100 SXM); NVIDIA/nccl-tests issue #212 (2024-05, S. Jeaugey: "with
//      the protocol overhead (~20%) NCCL can get an effective NVLink
//      bandwidth of 370GB/s"; NVLS "peak busBw of ~480GB/s (algbw
//      ~275GB/s)" on 8 GPUs).
//  [2] 8 x A100 SXM on NVSwitch (DGX A100, NVLink 3 at 300 GB/s): all-reduce
//      busbw 230-250 GB/s at large sizes (the reference table of "NCCL-tests
//      in practice", docs.alayanew.com, 2026; NCCL 2.7's tuner capped
//      Ampere's all-reduce busbw at 235 GB/s).
//  [3] all-reduce of a few bytes on one NVLink node: 10-20 us.
//  [4] 2 or more nodes of 8 x H100 with 8 x 400 Gb/s NICs, ring all-reduce:
//      busbw 350-400 GB/s (the node's 400 GB/s of NICs less protocol
//      overhead; NVIDIA/nccl issue #1221 reports 320-330 GB/s on 4 nodes
//      over RoCE, below InfiniBand).
// What the model gives for one collective (nccl_model_test checks these):
// [1] ring busbw 358 GB/s and NVLS 464 GB/s at 1 GiB on 8 GPUs (368 and
// 476 at 8 GiB: the pipeline fill costs 2-3% at 1 GiB); [2] ring 241 GB/s
// at 1 GiB; [3] 16.7 us at 8 B on dgx_h100 and dgx_a100; [4] ring 366 GB/s
// at 8 GiB on dgx_h100_cluster:2.
// Beyond these, the validation set (simulator/validation/, `distsim
// validate`, docs/validation.md) checks the model on 165 published points;
// the constants of NcclModelParams (nccl_model.h) marked "fitted" were set
// on its fitted part only.
// Not calibrated against a measurement: NVLS with SHARP in the fabric (it
// combines the calibrated NVLink and network figures).
// ---------------------------------------------------------------------------

// Link classes of a hop.
enum HopClass { kNvlinkHop = 0, kPcieHop = 1, kNetHop = 2 };

// LL stores 4 data bytes with a 4-byte flag and polls every line: a quarter
// of the link for all-reduce and reduce, and for every operation across
// nodes; a third for the others within a node (NCCL's tuner: the ring's LL
// bandwidth is 1/4 when nNodes > 1 or the collective is AllReduce or Reduce,
// else 1/3).
// NCCL's ceiling on the LL protocol's bus bandwidth, GB/s, by the group's
// oldest GPU generation (Volta, Ampere, Hopper, Blackwell: compute
// capability below 80, from 80, 90, 100) and scale (one node, two, more):
// llMaxBws in NVIDIA/nccl src/graph/tuning.cc (NCCL 2.19 to 2.28; two
// nodes "avg of ring & tree"), which NCCL's tuner applies to ring and tree
// LL. Taken as published, set on no point of the validation set. A group
// whose compute capability is unknown (0) has no ceiling.
constexpr double kLLMaxBusBw[4][3] = {
    {39.0, 39.0, 20.4},
    {87.7, 22.5, 19.0},
    {141.0, 45.0, 35.0},
    {2 * 141.0, 2 * 45.0, 2 * 35.0},
};

// NVLS on Blackwell (compute capability 100 and up) against Hopper: NCCL's
// tuner gives NVLS an efficiency of 0.85 on Hopper and 0.74 on Blackwell
// (nvlsEfficiency in NVIDIA/nccl src/graph/tuning.cc, NCCL 2.23 to 2.28).
// nvls_efficiency is the Hopper figure; Blackwell gets it times this
// ratio. Taken as published.
constexpr double kBlackwellNvlsShare = 0.74 / 0.85;

// A tree's step across nodes against a ring's, per protocol (LL, LL128,
// simple): NCCL's tuner charges a tree's network hop 5.0 and 8.5 us on LL
// and LL128 against a ring's 2.7 and 4.0 (hwLat[NCCL_HW_NET] in
// NVIDIA/nccl src/graph/tuning.cc, NCCL 2.19 to 2.28: a tree node waits on
// two children and forwards to its parent); on simple 28 against 14 up to
// NCCL 2.2x, 14 against 14 since. LL128's ratio is taken as published.
// LL and simple keep 1, a choice made on the fitted part: LL's hop was set
// on its tiny all-reduces across nodes, which NCCL's LL ratio turns 30-38%
// slow (docs/validation.md), and simple's ratio changed between versions.
constexpr double kTreeNetHopRatio[3] = {1.0, 8.5 / 4.0, 1.0};

constexpr double kLLQuarterEfficiency = 0.25;
constexpr double kLLThirdEfficiency = 1.0 / 3.0;

// Relative difference below which two candidates' times count as equal.
constexpr double kTieTolerance = 1e-9;

constexpr NcclProtocol kProtocols[] = {NcclProtocol::kLL, NcclProtocol::kLL128,
                                       NcclProtocol::kSimple};

// The hardware, seen by the model.
class Model {
 public:
  Model(const GroupHardware& hw, NcclOp op, const NcclModelParams& params)
      : hw_(hw), op_(op), k_(params) {
    intra_class_ =
        hw.intra_link == IntraNodeLink::kNvlink ? kNvlinkHop : kPcieHop;
  }

  int n() const { return hw_.n; }
  int nodes() const { return hw_.nodes; }
  int per_node() const { return hw_.max_ranks_per_node; }
  bool multi_node() const { return hw_.nodes > 1; }

  // The share of the nodes' network bandwidth that a double binary tree
  // across nodes turns into algorithm bandwidth: the data over what the
  // busiest node's NICs carry in each direction. Each tree carries half of
  // the data up (reduce) and down (broadcast); the busiest node carries
  // twice the data where it is an inner node with two children and a
  // parent in one tree and a leaf in the other (4 nodes and more: 1/2,
  // NCCL's tuner's ratio for trees), 1.5 times with 3 nodes, whose trees
  // are chains of three (2/3), and once with 2, each node the other's only
  // peer in both trees (1). Checked on the fitted points: NVLS-tree
  // all-reduce busbw 469 GB/s on 2 x 8 H100 and 717 GB/s on 2 x 8 B200
  // (above the 368 GB/s a ring gets from 8 x 400 Gb/s NICs), 320 GB/s on
  // 10 x 8 H100; a forced tree on 3 x 8 and 3 x 4 GB200
  // (nccl-issue-1801-gb200) 1.23x and 1.19x the ring's busbw.
  double TreeShare() const {
    return hw_.nodes == 2 ? 1.0 : hw_.nodes == 3 ? 2.0 / 3.0 : 0.5;
  }

  // log2 of the node count, rounded down (NCCL's log2i): the depth NCCL's
  // tuner charges a tree over nodes.
  double TreeDepth() const {
    return std::floor(std::log2(static_cast<double>(hw_.nodes)));
  }

  bool Supports(NcclProtocol p) const {
    if (p != NcclProtocol::kLL128) return true;
    return per_node() == 1 || hw_.intra_link == IntraNodeLink::kNvlink;
  }

  double Efficiency(NcclProtocol p, int hop_class) const {
    switch (p) {
      case NcclProtocol::kLL:
        return multi_node() || op_ == NcclOp::kAllReduce ||
                       op_ == NcclOp::kReduce
                   ? kLLQuarterEfficiency
                   : kLLThirdEfficiency;
      case NcclProtocol::kLL128:
        return k_.ll128_efficiency[hop_class];
      case NcclProtocol::kSimple:
        return k_.simple_efficiency[hop_class];
    }
    return 0;
  }

  double Base(NcclProtocol p) const {
    return k_.base_latency_us[static_cast<int>(p)];
  }
  double IntraHop(NcclProtocol p) const {
    return k_.hop_latency_us[static_cast<int>(p)][intra_class_] +
           hw_.intra_latency_us;
  }
  double NetHop(NcclProtocol p) const {
    return k_.hop_latency_us[static_cast<int>(p)][kNetHop] + hw_.net_latency_us;
  }
  // A tree's hop across nodes: the ring's software cost times NCCL's
  // tree-to-ring ratio (kTreeNetHopRatio).
  double TreeNetHop(NcclProtocol p) const {
    return k_.hop_latency_us[static_cast<int>(p)][kNetHop] *
               kTreeNetHopRatio[static_cast<int>(p)] +
           hw_.net_latency_us;
  }

  // GB/s a rank moves through its intra-node link / its node's NICs.
  double IntraBw(NcclProtocol p) const {
    const double staged = hw_.intra_through_host && p != NcclProtocol::kLL
                              ? k_.host_staged_efficiency
                              : 1.0;
    // Both NVLink protocols lose the same share on Blackwell, so that LL128
    // stays below simple there as NCCL's tuner has it.
    const double blackwell = p != NcclProtocol::kLL &&
                                     intra_class_ == kNvlinkHop &&
                                     hw_.compute_capability >= 100
                                 ? k_.blackwell_nvlink_share
                                 : 1.0;
    return hw_.intra_bw_Bps / 1e9 * Efficiency(p, intra_class_) * staged *
           blackwell;
  }
  double NodeNetBw(NcclProtocol p) const {
    return hw_.node_net_bw_Bps / 1e9 * Efficiency(p, kNetHop);
  }
  // The bus bandwidth of rings and trees: the NVLink of each rank, and on
  // several nodes the node's NICs, which carry the node's share of every
  // channel's crossings.
  double BusBw(NcclProtocol p) const {
    const double bw = !multi_node()     ? IntraBw(p)
                      : per_node() == 1 ? NodeNetBw(p)
                                        : std::min(IntraBw(p), NodeNetBw(p));
    if (p != NcclProtocol::kLL || hw_.compute_capability <= 0) return bw;
    const int cc = hw_.compute_capability;
    const int generation = cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0;
    const int scale = hw_.nodes <= 1 ? 0 : hw_.nodes == 2 ? 1 : 2;
    return std::min(bw, kLLMaxBusBw[generation][scale]);
  }
  // NVLS inside one node.
  // Blackwell's NVSwitch reaches a smaller share than Hopper's, in NCCL's
  // tuner's ratio (kBlackwellNvlsShare).
  double NvlsBw() const {
    const double l = per_node();
    const double share =
        hw_.compute_capability >= 100 ? kBlackwellNvlsShare : 1.0;
    return share * k_.nvls_efficiency * hw_.intra_bw_Bps / 1e9 * l / (l + 1);
  }
  // A ring of `steps` steps, `net_steps` of them across nodes. Across
  // nodes every step of a ring (not of the chains of broadcast and reduce,
  // as in NCCL) pays at least the proxy's post (ring_net_overhead_us).
  double RingLatency(NcclProtocol p, double steps, double net_steps) const {
    double intra = IntraHop(p);
    if (multi_node() && op_ != NcclOp::kBroadcast && op_ != NcclOp::kReduce) {
      intra = std::max(intra, k_.ring_net_overhead_us[static_cast<int>(p)]);
    }
    return Base(p) + (steps - net_steps) * intra + net_steps * NetHop(p);
  }

 private:
  const GroupHardware& hw_;
  const NcclOp op_;
  const NcclModelParams& k_;
  int intra_class_ = kPcieHop;
};

void Add(std::vector<NcclCandidate>& out, const NcclModelParams& k,
         NcclAlgorithm a, NcclProtocol p, double latency_us, double algbw_GBps,
         double tuner_algbw_GBps = 0) {
  if (!(algbw_GBps > 0)) return;
  NcclCandidate c;
  c.algorithm = a;
  c.protocol = p;
  c.latency_us = latency_us;
  c.algbw_GBps = algbw_GBps;
  c.tuner_algbw_GBps = tuner_algbw_GBps;
  // NVLS reduces in the switch: its own fill, not a ring of steps.
  c.fill_us = a == NcclAlgorithm::kNvls
                  ? k.nvls_fill_us
                  : k.pipeline_fill_us[static_cast<int>(p)];
  out.push_back(c);
}

// Every candidate for `op` on the hardware, without times.
std::vector<NcclCandidate> Candidates(const GroupHardware& hw, NcclOp op,
                                      const NcclRunOptions& options) {
  const bool nvlink_sharp = hw.nvlink_sharp && options.nvls;
  const bool fabric_sharp = hw.fabric_sharp && options.sharp;
  std::vector<NcclCandidate> out;
  const NcclModelParams& k = options.params;
  const Model m(hw, op, k);
  const double n = m.n();
  const double nodes = m.nodes();
  const double l = m.per_node();

  if (m.n() == 1) {
    // A local copy: read and write every byte of device memory.
    for (NcclProtocol p : {NcclProtocol::kLL, NcclProtocol::kSimple}) {
      Add(out, k, NcclAlgorithm::kRing, p, m.Base(p), hw.memory_bw_Bps / 2e9);
    }
    return out;
  }

  // Ring (a chain for broadcast and reduce).
  if (op != NcclOp::kAllToAll) {
    for (NcclProtocol p : kProtocols) {
      if (!m.Supports(p)) continue;
      double steps = n - 1, net_steps = nodes - 1, algbw = m.BusBw(p);
      if (op == NcclOp::kAllReduce) {
        steps = 2 * (n - 1);
        net_steps = 2 * (nodes - 1);
        algbw = m.BusBw(p) * n / (2 * (n - 1));
      } else if (op == NcclOp::kAllGather || op == NcclOp::kReduceScatter) {
        algbw = m.BusBw(p) * n / (n - 1);
      }
      Add(out, k, NcclAlgorithm::kRing, p, m.RingLatency(p, steps, net_steps),
          algbw);
      if (op == NcclOp::kBroadcast || op == NcclOp::kReduce) {
        const double first_hop = m.multi_node() ? m.NetHop(p) : m.IntraHop(p);
        out.back().chain_overlap_us =
            std::max(0.0, out.back().latency_us - m.Base(p) - first_hop);
      }
    }
  }
  if (op == NcclOp::kAllReduce) {
    // Tree: a chain up and down each node, a double binary tree across.
    for (NcclProtocol p : kProtocols) {
      if (!m.Supports(p)) continue;
      const double latency = m.Base(p) + 2 * ((l - 1) * m.IntraHop(p) +
                                              m.TreeDepth() * m.TreeNetHop(p));
      // NCCL's tuner chooses as if every tree had a share of 1/2, and so
      // picks the ring on 2 and 3 nodes where the tree is faster
      // (nccl-issue-1801-gb200: "Tree beating the default Ring"). LL keeps
      // the tuner's share: its ceilings (kLLMaxBusBw) are the tuner's own
      // figures, which NVIDIA set for that share.
      const double tuner = k.tree_efficiency * 0.5 * m.BusBw(p);
      Add(out, k, NcclAlgorithm::kTree, p, latency,
          p == NcclProtocol::kLL
              ? tuner
              : k.tree_efficiency * m.TreeShare() * m.BusBw(p),
          tuner);
    }
    const NcclProtocol simple = NcclProtocol::kSimple;
    const double nvls_latency =
        m.Base(simple) + k.nvls_latency_us + 2 * hw.intra_latency_us;
    // NVLS: across nodes only with SHARP in the fabric, as in NCCL.
    if (nvlink_sharp && l > 1 && (!m.multi_node() || fabric_sharp)) {
      double latency = nvls_latency, algbw = m.NvlsBw();
      if (m.multi_node()) {
        latency += m.NetHop(simple) + k.sharp_latency_us;
        algbw = std::min(algbw, m.NodeNetBw(simple) * k.sharp_efficiency);
      }
      Add(out, k, NcclAlgorithm::kNvls, simple, latency, algbw);
    }
    if (nvlink_sharp && l > 1 && m.multi_node()) {
      Add(out, k, NcclAlgorithm::kNvlsTree, simple,
          nvls_latency + 2 * m.TreeDepth() * m.NetHop(simple),
          std::min(m.NvlsBw(),
                   k.tree_efficiency * m.TreeShare() * m.NodeNetBw(simple)));
    }
    // CollNet: reduce-scatter inside the node, SHARP across, all-gather.
    if (fabric_sharp && m.multi_node()) {
      double algbw = m.NodeNetBw(simple) * k.sharp_efficiency;
      if (l > 1) algbw = std::min(algbw, m.IntraBw(simple) * l / (2 * (l - 1)));
      Add(out, k, NcclAlgorithm::kCollNet, simple,
          m.Base(simple) + 2 * (l - 1) * m.IntraHop(simple) + m.NetHop(simple) +
              k.sharp_latency_us,
          algbw);
    }
  }
  if (op == NcclOp::kAllToAll) {
    // Per byte of a rank's buffer: (l-1)/n leaves through its NVLink, and
    // l (n-l)/n through its node's NICs.
    for (NcclProtocol p : {NcclProtocol::kLL, NcclProtocol::kSimple}) {
      double seconds_per_gb = 0;
      if (l > 1) seconds_per_gb = (l - 1) / n / m.IntraBw(p);
      if (m.multi_node()) {
        seconds_per_gb =
            std::max(seconds_per_gb, l * (n - l) / n / m.NodeNetBw(p));
      }
      const double hop = m.multi_node() ? m.NetHop(p) : m.IntraHop(p);
      Add(out, k, NcclAlgorithm::kP2p, p,
          m.Base(p) + hop + (n - 1) * k.per_peer_us, 1.0 / seconds_per_gb);
    }
  }
  return out;
}

// The share of a tree's bandwidth it reaches at mid sizes, per protocol
// (LL, LL128, simple), at 64 B * 2^k for k = 0 .. 22 (64 B to 256 MiB;
// 1 beyond): a tree's pipeline of chunks through its depth runs well below
// its asymptotic rate there. Source: NVIDIA's own tuner, which scales its
// tree bandwidth by these measured factors before it picks an algorithm
// (NVIDIA/nccl src/graph/tuning.cc, treeCorrectionFactor, NCCL 2.19 to
// 2.21: "Trees are not perfectly sticking to the model for medium sizes").
// Not fitted here.
constexpr double kTreeMidSizeFactor[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5,
     .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9},
};

double TreeMidSizeFactor(NcclProtocol p, int64_t bytes) {
  int k = 0;
  for (int64_t chunks = bytes >> 6; chunks > 1; chunks >>= 1) ++k;
  if (k >= 23) return 1.0;
  return kTreeMidSizeFactor[static_cast<int>(p)][k];
}

// NCCL's ring plateau (ncclTopoGetAlgoTime): a simple-protocol ring
// all-reduce across nodes whose every channel carries at least 64 bytes
// per rank takes its latency times a factor: 1.9 before Ampere (compute
// capability below 80), as published; ring_plateau_factor from Ampere on
// and where the compute capability is unknown.
constexpr double kVoltaRingPlateauFactor = 1.9;
// The channels of the plateau's condition: NCCL's most (MAXCHANNELS: 32
// up to NCCL 2.2x, 64 since), so that the model applies it from a size at
// which NCCL surely does.
constexpr double kPlateauChannels = 64;

bool RingPlateau(const GroupHardware& hw, NcclOp op, const NcclCandidate& c,
                 int64_t bytes) {
  return op == NcclOp::kAllReduce && c.algorithm == NcclAlgorithm::kRing &&
         c.protocol == NcclProtocol::kSimple && hw.nodes > 1 &&
         static_cast<double>(bytes) / (kPlateauChannels * hw.n) >= 64;
}

// One collective on the GPUs, from the moment every rank's kernel runs.
double GpuTimeUs(const NcclCandidate& c, int64_t bytes) {
  return c.latency_us + c.fill_us +
         static_cast<double>(bytes) / (c.algbw_GBps * c.size_factor * 1e3);
}

// The mean time of options.iters collectives issued back to back.
double MeanTime(NcclOp op, const NcclCandidate& c, int64_t bytes,
                const NcclRunOptions& options) {
  const double gpu = GpuTimeUs(c, bytes);
  // A thread driving several GPUs launches their kernels one after
  // another; the first collective ends after the last one starts.
  const double launch = options.params.launch_per_gpu_us;
  const double first = gpu + (options.gpus_per_thread - 1) * launch;
  if (options.iters <= 1) return first;
  // In steady state a collective starts every `period`: when the busiest
  // GPU is free again, or when the host has launched it, whichever is
  // later. A chain (broadcast, reduce) frees each GPU once it has passed
  // the data on, one hop after it began, so only the first collective
  // pays the chain's full depth.
  double gpu_period = gpu;
  if ((op == NcclOp::kBroadcast || op == NcclOp::kReduce) &&
      c.algorithm == NcclAlgorithm::kRing) {
    gpu_period = gpu - c.chain_overlap_us;
  }
  const double host_period = options.gpus_per_thread * launch;
  const double period = std::max(gpu_period, host_period);
  return (first + (options.iters - 1) * period) / options.iters;
}

}  // namespace

absl::string_view NcclOpName(NcclOp op) {
  switch (op) {
    case NcclOp::kAllReduce:
      return "all_reduce";
    case NcclOp::kAllGather:
      return "all_gather";
    case NcclOp::kReduceScatter:
      return "reduce_scatter";
    case NcclOp::kBroadcast:
      return "broadcast";
    case NcclOp::kReduce:
      return "reduce";
    case NcclOp::kAllToAll:
      return "all_to_all";
  }
  return "unknown";
}

absl::StatusOr<NcclOp> NcclOpFromName(absl::string_view name) {
  for (NcclOp op :
       {NcclOp::kAllReduce, NcclOp::kAllGather, NcclOp::kReduceScatter,
        NcclOp::kBroadcast, NcclOp::kReduce, NcclOp::kAllToAll}) {
    if (NcclOpName(op) == name) return op;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "NCCL has no collective '", name,
      "'; use all_reduce, all_gather, reduce_scatter, broadcast, reduce or "
      "all_to_all"));
}

absl::string_view NcclAlgorithmName(NcclAlgorithm algorithm) {
  switch (algorithm) {
    case NcclAlgorithm::kRing:
      return "ring";
    case NcclAlgorithm::kTree:
      return "tree";
    case NcclAlgorithm::kNvls:
      return "nvls";
    case NcclAlgorithm::kNvlsTree:
      return "nvls_tree";
    case NcclAlgorithm::kCollNet:
      return "collnet";
    case NcclAlgorithm::kP2p:
      return "p2p";
  }
  return "unknown";
}

absl::string_view NcclProtocolName(NcclProtocol protocol) {
  switch (protocol) {
    case NcclProtocol::kLL:
      return "ll";
    case NcclProtocol::kLL128:
      return "ll128";
    case NcclProtocol::kSimple:
      return "simple";
  }
  return "unknown";
}

std::vector<NcclModelParam> NcclModelParamList(NcclModelParams& params) {
  static constexpr const char* kProtocol[3] = {"ll", "ll128", "simple"};
  static constexpr const char* kHop[3] = {"nvlink", "pcie", "net"};
  std::vector<NcclModelParam> list;
  auto add = [&](std::string name, double* value) {
    list.push_back(NcclModelParam{std::move(name), value});
  };
  for (int h : {0, 1, 2}) {
    add(absl::StrCat("simple_efficiency.", kHop[h]),
        &params.simple_efficiency[h]);
  }
  // LL128 never runs over PCIe: its PCIe entry is not a constant.
  for (int h : {0, 2}) {
    add(absl::StrCat("ll128_efficiency.", kHop[h]),
        &params.ll128_efficiency[h]);
  }
  for (int p : {0, 1, 2}) {
    add(absl::StrCat("base_latency_us.", kProtocol[p]),
        &params.base_latency_us[p]);
  }
  for (int p : {0, 1, 2}) {
    for (int h : {0, 1, 2}) {
      if (p == 1 && h == 1) continue;  // LL128 over PCIe, as above.
      add(absl::StrCat("hop_latency_us.", kProtocol[p], ".", kHop[h]),
          &params.hop_latency_us[p][h]);
    }
  }
  add("nvls_efficiency", &params.nvls_efficiency);
  add("nvls_latency_us", &params.nvls_latency_us);
  add("nvls_fill_us", &params.nvls_fill_us);
  add("sharp_latency_us", &params.sharp_latency_us);
  add("sharp_efficiency", &params.sharp_efficiency);
  add("tree_efficiency", &params.tree_efficiency);
  add("launch_per_gpu_us", &params.launch_per_gpu_us);
  for (int p : {0, 1, 2}) {
    add(absl::StrCat("pipeline_fill_us.", kProtocol[p]),
        &params.pipeline_fill_us[p]);
  }
  add("host_staged_efficiency", &params.host_staged_efficiency);
  add("per_peer_us", &params.per_peer_us);
  for (int p : {0, 1, 2}) {
    add(absl::StrCat("ring_net_overhead_us.", kProtocol[p]),
        &params.ring_net_overhead_us[p]);
  }
  add("ring_plateau_factor", &params.ring_plateau_factor);
  add("blackwell_nvlink_share", &params.blackwell_nvlink_share);
  return list;
}

std::string NcclModelParamsToText(const NcclModelParams& params) {
  NcclModelParams copy = params;
  std::string text;
  for (const NcclModelParam& p : NcclModelParamList(copy)) {
    // %.17g reads back exactly; the shortest such form is tried first.
    std::string value;
    for (int digits = 6; digits <= 17; ++digits) {
      value = absl::StrFormat("%.*g", digits, *p.value);
      if (std::strtod(value.c_str(), nullptr) == *p.value) break;
    }
    absl::StrAppend(&text, p.name, " = ", value, "\n");
  }
  return text;
}

absl::StatusOr<NcclModelParams> NcclModelParamsFromText(
    absl::string_view text) {
  NcclModelParams params;
  std::vector<NcclModelParam> list = NcclModelParamList(params);
  std::set<std::string> seen;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    const size_t hash = line.find('#');
    if (hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    auto bad = [&](absl::string_view what) {
      return absl::InvalidArgumentError(
          absl::StrCat("NCCL model constants, line ", line_number, " ('", line,
                       "'): ", what));
    };
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return bad("write name = value");
    }
    const std::string name(absl::StripAsciiWhitespace(line.substr(0, eq)));
    const std::string value_text(
        absl::StripAsciiWhitespace(line.substr(eq + 1)));
    auto it =
        std::find_if(list.begin(), list.end(),
                     [&](const NcclModelParam& p) { return p.name == name; });
    if (it == list.end()) {
      std::string known;
      for (const NcclModelParam& p : list) {
        absl::StrAppend(&known, known.empty() ? "" : ", ", p.name);
      }
      return bad(
          absl::StrCat("no constant '", name, "'; the constants are ", known));
    }
    double value = 0;
    if (!absl::SimpleAtod(value_text, &value) || !std::isfinite(value) ||
        value < 0) {
      return bad(absl::StrCat("'", value_text,
                              "' is not a finite number of 0 or more"));
    }
    if (!seen.insert(name).second) return bad("the constant is given twice");
    *it->value = value;
  }
  return params;
}

absl::StatusOr<NcclModelParams> LoadNcclModelParams(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("cannot read the NCCL model constants file '", path, "'"));
  }
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<NcclModelParams> params = NcclModelParamsFromText(text.str());
  if (!params.ok()) {
    return absl::Status(params.status().code(),
                        absl::StrCat(path, ": ", params.status().message()));
  }
  return params;
}

std::string NcclPrediction::Label() const {
  return absl::StrCat(NcclAlgorithmName(algorithm), "/",
                      NcclProtocolName(protocol));
}

namespace {

// NCCL's parseList (src/graph/tuning.cc): comma-separated names compared
// without case; a leading '^' turns the list into the names to exclude.
// `names[i]` lists the spellings of item i.
template <size_t N>
absl::StatusOr<std::array<bool, N>> ParseNcclList(
    absl::string_view text, absl::string_view variable,
    const std::array<std::vector<absl::string_view>, N>& names) {
  std::array<bool, N> allowed;
  allowed.fill(true);
  if (text.empty()) return allowed;
  bool exclude = false;
  if (absl::ConsumePrefix(&text, "^")) exclude = true;
  allowed.fill(exclude);
  std::string known;
  for (const std::vector<absl::string_view>& spellings : names) {
    absl::StrAppend(&known, known.empty() ? "" : ", ", spellings.front());
  }
  for (absl::string_view token : absl::StrSplit(text, ',')) {
    token = absl::StripAsciiWhitespace(token);
    if (token.empty()) continue;
    bool found = false;
    for (size_t i = 0; i < N; ++i) {
      for (absl::string_view spelling : names[i]) {
        if (absl::EqualsIgnoreCase(token, spelling)) {
          allowed[i] = !exclude;
          found = true;
        }
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat(
          variable, "=", text, ": '", token, "' is not one of ", known,
          " (names separate with commas; a leading ^ excludes them)"));
    }
  }
  return allowed;
}

using AlgorithmSet = std::array<bool, 6>;
using ProtocolSet = std::array<bool, 3>;

absl::StatusOr<AlgorithmSet> ParseAlgorithms(absl::string_view text) {
  // In NcclAlgorithm's order.
  static const auto* names = new std::array<std::vector<absl::string_view>, 6>{
      std::vector<absl::string_view>{"ring"},
      {"tree"},
      {"nvls"},
      {"nvlstree", "nvls_tree"},
      {"collnet", "collnetdirect", "collnetchain"},
      {"p2p"}};
  absl::StatusOr<AlgorithmSet> set =
      ParseNcclList(text, "NCCL_ALGO (--nccl_algo)", *names);
  // All-to-all is point-to-point whatever NCCL_ALGO says.
  if (set.ok()) (*set)[static_cast<int>(NcclAlgorithm::kP2p)] = true;
  return set;
}

absl::StatusOr<ProtocolSet> ParseProtocols(absl::string_view text) {
  static const auto* names = new std::array<std::vector<absl::string_view>, 3>{
      std::vector<absl::string_view>{"ll"}, {"ll128"}, {"simple"}};
  return ParseNcclList(text, "NCCL_PROTO (--nccl_proto)", *names);
}

}  // namespace

absl::Status ValidateNcclRunOptions(const NcclRunOptions& options) {
  if (options.gpus_per_thread < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--gpus_per_thread=", options.gpus_per_thread,
                     ": a thread drives at least one GPU"));
  }
  if (options.iters < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--iters=", options.iters, ": time at least one iteration"));
  }
  if (options.warmup_iters < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--warmup_iters=", options.warmup_iters,
                     ": give 0 or more warm-up iterations"));
  }
  RETURN_IF_ERROR(ParseAlgorithms(options.algorithms).status());
  return ParseProtocols(options.protocols).status();
}

absl::StatusOr<NcclPrediction> PredictNcclOn(const GroupHardware& hardware,
                                             NcclOp op, int64_t bytes) {
  return PredictNcclOn(hardware, op, bytes, NcclRunOptions());
}

absl::StatusOr<NcclPrediction> PredictNcclOn(const GroupHardware& hardware,
                                             NcclOp op, int64_t bytes,
                                             const NcclRunOptions& options) {
  if (bytes < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a collective of ", bytes, " bytes: sizes cannot be negative"));
  }
  if (!hardware.all_gpus) {
    return absl::FailedPreconditionError(
        "the NCCL model covers groups of GPUs only; choose GPU devices (or a "
        "schedule algorithm for other devices)");
  }
  RETURN_IF_ERROR(ValidateNcclRunOptions(options));
  const AlgorithmSet algorithms = *ParseAlgorithms(options.algorithms);
  const ProtocolSet protocols = *ParseProtocols(options.protocols);
  if (options.sharp && hardware.nodes > 1 && !hardware.fabric_sharp) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--sharp: the switches between these nodes do not reduce in the "
        "network (",
        hardware.DebugString(),
        "); leave --sharp off or use a fabric with SHARP"));
  }
  NcclPrediction prediction;
  prediction.op = op;
  prediction.bytes = bytes;
  prediction.hardware = hardware;
  std::vector<NcclCandidate> all = Candidates(hardware, op, options);
  for (NcclCandidate& c : all) {
    if (algorithms[static_cast<int>(c.algorithm)] &&
        protocols[static_cast<int>(c.protocol)]) {
      prediction.candidates.push_back(c);
    }
  }
  if (prediction.candidates.empty()) {
    std::string why = all.empty() ? "" : " allowed by";
    if (!all.empty()) {
      if (!options.algorithms.empty())
        absl::StrAppend(&why, " NCCL_ALGO=", options.algorithms);
      if (!options.protocols.empty())
        absl::StrAppend(&why, " NCCL_PROTO=", options.protocols);
    }
    return absl::FailedPreconditionError(
        absl::StrCat("no NCCL algorithm", why, " applies to ", NcclOpName(op),
                     " on ", hardware.DebugString()));
  }
  const NcclCandidate* best = nullptr;
  for (NcclCandidate& c : prediction.candidates) {
    if (c.algorithm == NcclAlgorithm::kTree) {
      c.size_factor = TreeMidSizeFactor(c.protocol, bytes);
    }
    if (RingPlateau(hardware, op, c, bytes)) {
      c.latency_us *=
          hardware.compute_capability > 0 && hardware.compute_capability < 80
              ? kVoltaRingPlateauFactor
              : options.params.ring_plateau_factor;
    }
    c.time_us = MeanTime(op, c, bytes, options);
    c.tuner_time_us = c.time_us;
    if (c.tuner_algbw_GBps > 0 && c.tuner_algbw_GBps != c.algbw_GBps) {
      NcclCandidate seen = c;
      seen.algbw_GBps = c.tuner_algbw_GBps;
      c.tuner_time_us = MeanTime(op, seen, bytes, options);
    }
    // NCCL chooses by its tuner's times. Equal times (up to rounding: a
    // single-node tree and ring take the same latency) go to the earlier
    // candidate.
    if (best == nullptr ||
        c.tuner_time_us < best->tuner_time_us * (1 - kTieTolerance)) {
      best = &c;
    }
  }
  prediction.algorithm = best->algorithm;
  prediction.protocol = best->protocol;
  prediction.time_us = best->time_us;
  return prediction;
}

absl::StatusOr<NcclPrediction> PredictNccl(
    const Topology& topology, const std::vector<int>& device_indices, NcclOp op,
    int64_t bytes) {
  return PredictNccl(topology, device_indices, op, bytes, NcclRunOptions());
}

absl::StatusOr<NcclPrediction> PredictNccl(
    const Topology& topology, const std::vector<int>& device_indices, NcclOp op,
    int64_t bytes, const NcclRunOptions& options) {
  ASSIGN_OR_RETURN(GroupHardware hardware,
                   DescribeGroupHardware(topology, device_indices));
  return PredictNcclOn(hardware, op, bytes, options);
}

}  // namespace simulator
