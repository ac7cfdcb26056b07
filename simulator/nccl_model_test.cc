// The NCCL model: its choices (LL for tiny messages, simple for large ones,
// NVLS on a DGX H100, the ring on a DGX A100 and on PCIe), its large-message
// bandwidths against the published figures it is calibrated on (see the
// top of nccl_model.cc), monotonic times, and its errors.
#include "simulator/nccl_model.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/builtin_topologies.h"
#include "simulator/cluster_fabric.h"
#include "simulator/group_hardware.h"
#include "simulator/topology.h"
#include "simulator/topology.pb.h"

namespace simulator {
namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

std::vector<int> Gpus(const Topology& topology, int count = 0) {
  std::vector<int> out;
  for (const DeviceInfo& d : topology.devices()) {
    if (d.kind != DeviceDef::GPU) continue;
    if (count > 0 && static_cast<int>(out.size()) == count) break;
    out.push_back(d.index);
  }
  return out;
}

Topology Load(const std::string& name) {
  absl::StatusOr<Topology> t = BuiltinTopology(name);
  EXPECT_TRUE(t.ok()) << t.status();
  return *std::move(t);
}

// nccl-tests' bus bandwidth of an all-reduce, GB/s.
double AllReduceBusBw(int64_t bytes, double time_us, int n) {
  return static_cast<double>(bytes) / (time_us * 1e3) * 2.0 * (n - 1) / n;
}

const NcclCandidate* Find(const NcclPrediction& p, NcclAlgorithm a,
                          NcclProtocol proto) {
  for (const NcclCandidate& c : p.candidates) {
    if (c.algorithm == a && c.protocol == proto) return &c;
  }
  return nullptr;
}

NcclPrediction Predict(const Topology& t, const std::vector<int>& gpus,
                       NcclOp op, int64_t bytes) {
  absl::StatusOr<NcclPrediction> p = PredictNccl(t, gpus, op, bytes);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : NcclPrediction{};
}

TEST(NcclModelTest, TinyAllReduceUsesLLWithCalibratedLatency) {
  for (const std::string name : {"dgx_h100", "dgx_a100", "pcie_4gpu"}) {
    SCOPED_TRACE(name);
    const Topology t = Load(name);
    const NcclPrediction p = Predict(t, Gpus(t), NcclOp::kAllReduce, 8);
    EXPECT_EQ(p.protocol, NcclProtocol::kLL) << p.Label();
    EXPECT_EQ(p.algorithm, NcclAlgorithm::kRing) << p.Label();
    // [3]: 10-20 us on one node.
    EXPECT_GE(p.time_us, 10.0);
    EXPECT_LE(p.time_us, 20.0);
  }
}

TEST(NcclModelTest, LargeMessagesUseSimple) {
  for (const std::string name :
       {"dgx_h100", "dgx_a100", "pcie_4gpu", "dgx_h100_cluster:2"}) {
    SCOPED_TRACE(name);
    const Topology t = Load(name);
    for (NcclOp op :
         {NcclOp::kAllReduce, NcclOp::kAllGather, NcclOp::kReduceScatter,
          NcclOp::kBroadcast, NcclOp::kAllToAll}) {
      const NcclPrediction p = Predict(t, Gpus(t), op, kGiB);
      EXPECT_EQ(p.protocol, NcclProtocol::kSimple)
          << NcclOpName(op) << " " << p.Label();
    }
  }
}

TEST(NcclModelTest, DgxH100PicksNvlsForLargeAllReduce) {
  const Topology t = Load("dgx_h100");
  const NcclPrediction p = Predict(t, Gpus(t), NcclOp::kAllReduce, kGiB);
  EXPECT_EQ(p.Label(), "nvls/simple");
  // [1]: NVLS busbw about 480 GB/s (algbw about 275 GB/s) on 8 GPUs.
  const double busbw = AllReduceBusBw(kGiB, p.time_us, 8);
  EXPECT_GE(busbw, 460.0);
  EXPECT_LE(busbw, 490.0);
  // [1]: the ring reaches 365-370 GB/s.
  const NcclCandidate* ring =
      Find(p, NcclAlgorithm::kRing, NcclProtocol::kSimple);
  ASSERT_NE(ring, nullptr);
  const double ring_busbw = AllReduceBusBw(kGiB, ring->time_us, 8);
  EXPECT_GE(ring_busbw, 355.0);
  EXPECT_LE(ring_busbw, 380.0);
  // Mid sizes: LL gives way before 64 MiB.
  EXPECT_NE(Predict(t, Gpus(t), NcclOp::kAllReduce, 64 << 20).protocol,
            NcclProtocol::kLL);
}

TEST(NcclModelTest, NvlsBandwidthFollowsTheGroupSize) {
  // [1]: NVLS algbw 258, 265, 270, 273 GB/s on 5..8 H100s; on 4 GPUs it is
  // no better than the ring.
  const Topology t = Load("dgx_h100");
  const double measured[] = {258, 265, 270, 273};
  for (int n = 5; n <= 8; ++n) {
    SCOPED_TRACE(n);
    const NcclPrediction p =
        Predict(t, Gpus(t, n), NcclOp::kAllReduce, 4 * kGiB);
    const NcclCandidate* nvls =
        Find(p, NcclAlgorithm::kNvls, NcclProtocol::kSimple);
    ASSERT_NE(nvls, nullptr);
    EXPECT_NEAR(nvls->algbw_GBps, measured[n - 5], 0.02 * measured[n - 5]);
  }
  const NcclPrediction four =
      Predict(t, Gpus(t, 4), NcclOp::kAllReduce, 4 * kGiB);
  const double busbw = AllReduceBusBw(4 * kGiB, four.time_us, 4);
  EXPECT_GE(busbw, 355.0);
  EXPECT_LE(busbw, 380.0);
  // Two GPUs: the ring is clearly better.
  EXPECT_EQ(Predict(t, Gpus(t, 2), NcclOp::kAllReduce, 4 * kGiB).algorithm,
            NcclAlgorithm::kRing);
}

TEST(NcclModelTest, RingOnDgxA100AndPcie) {
  const Topology a100 = Load("dgx_a100");
  const NcclPrediction p = Predict(a100, Gpus(a100), NcclOp::kAllReduce, kGiB);
  EXPECT_EQ(p.Label(), "ring/simple");
  EXPECT_EQ(Find(p, NcclAlgorithm::kNvls, NcclProtocol::kSimple), nullptr);
  // [2]: 230-250 GB/s.
  const double busbw = AllReduceBusBw(kGiB, p.time_us, 8);
  EXPECT_GE(busbw, 230.0);
  EXPECT_LE(busbw, 250.0);

  const Topology pcie = Load("pcie_4gpu");
  const NcclPrediction q = Predict(pcie, Gpus(pcie), NcclOp::kAllReduce, kGiB);
  EXPECT_EQ(q.Label(), "ring/simple");
  // No LL128 over PCIe (NCCL enables it on NVLink only).
  for (const NcclCandidate& c : q.candidates) {
    EXPECT_NE(c.protocol, NcclProtocol::kLL128);
  }
  // Below the 31.5 GB/s of a Gen4 x16 link.
  const double pcie_busbw = AllReduceBusBw(kGiB, q.time_us, 4);
  EXPECT_GT(pcie_busbw, 20.0);
  EXPECT_LT(pcie_busbw, 31.5);
}

// The ring's LL bandwidth, as a share of its simple bandwidth: as NCCL's
// tuner, a quarter of the link for all-reduce and reduce and for every
// collective across nodes, a third for the others within a node.
// LL's bus bandwidth as NCCL's tuner has it: a quarter of the link for
// all-reduce and anything across nodes, a third otherwise, and never above
// llMaxBws (NVIDIA/nccl src/graph/tuning.cc) for the GPU generation and
// node count: Hopper 141 GB/s on one node, 45 on two, 35 on more.
TEST(NcclModelTest, LLBandwidthFollowsNcclsTuner) {
  auto ll_busbw = [](const Topology& t, NcclOp op) {
    const NcclPrediction p = Predict(t, Gpus(t), op, kGiB);
    const NcclCandidate* ll = Find(p, NcclAlgorithm::kRing, NcclProtocol::kLL);
    EXPECT_NE(ll, nullptr);
    if (ll == nullptr) return 0.0;
    const double n = static_cast<double>(Gpus(t).size());
    return op == NcclOp::kAllReduce ? ll->algbw_GBps * 2 * (n - 1) / n
                                    : ll->algbw_GBps * (n - 1) / n;
  };
  const Topology node = Load("dgx_h100");  // 450 GB/s of NVLink a GPU
  EXPECT_NEAR(ll_busbw(node, NcclOp::kAllReduce), 450.0 / 4, 1e-9);
  EXPECT_NEAR(ll_busbw(node, NcclOp::kAllGather), 141.0, 1e-9);  // not 150
  EXPECT_NEAR(ll_busbw(node, NcclOp::kReduceScatter), 141.0, 1e-9);
  const Topology two = Load("dgx_h100_cluster:2");
  EXPECT_NEAR(ll_busbw(two, NcclOp::kAllReduce), 45.0, 1e-9);
  EXPECT_NEAR(ll_busbw(two, NcclOp::kAllGather), 45.0, 1e-9);
  const Topology four = Load("dgx_h100_cluster:4");
  EXPECT_NEAR(ll_busbw(four, NcclOp::kAllReduce), 35.0, 1e-9);
  const Topology a100 = Load("dgx_a100");  // 300 GB/s; Ampere: 87.7
  EXPECT_NEAR(ll_busbw(a100, NcclOp::kAllReduce), 300.0 / 4, 1e-9);
  EXPECT_NEAR(ll_busbw(a100, NcclOp::kAllGather), 87.7, 1e-9);
}

TEST(NcclModelTest, ClusterRingMeetsTheNetworkFigure) {
  const Topology t = Load("dgx_h100_cluster:2");
  const NcclPrediction p = Predict(t, Gpus(t), NcclOp::kAllReduce, 8 * kGiB);
  const NcclCandidate* ring =
      Find(p, NcclAlgorithm::kRing, NcclProtocol::kSimple);
  ASSERT_NE(ring, nullptr);
  // [4]: 350-400 GB/s with 8 x 400 Gb/s per node.
  const double busbw = AllReduceBusBw(8 * kGiB, ring->time_us, 16);
  EXPECT_GE(busbw, 350.0);
  EXPECT_LE(busbw, 400.0);
  // Without the SHARP plugin (NCCL's default) the fabric does not reduce:
  // no CollNet, no NVLS across nodes. NVLS inside the nodes with a tree
  // across the two wins at large sizes, above the ring: its trees stream
  // at the NICs' full rate between two nodes (469 GB/s busbw measured on
  // 2 x 8 H100, the validation set's nccl-tests-309-xe9680).
  EXPECT_EQ(Find(p, NcclAlgorithm::kCollNet, NcclProtocol::kSimple), nullptr);
  EXPECT_EQ(Find(p, NcclAlgorithm::kNvls, NcclProtocol::kSimple), nullptr);
  EXPECT_EQ(p.Label(), "nvls_tree/simple");
  EXPECT_GT(AllReduceBusBw(8 * kGiB, p.time_us, 16), 450.0);
  // With it (--sharp), every algorithm is available.
  NcclRunOptions sharp;
  sharp.sharp = true;
  absl::StatusOr<NcclPrediction> q =
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, 8 * kGiB, sharp);
  ASSERT_TRUE(q.ok()) << q.status();
  for (NcclAlgorithm a : {NcclAlgorithm::kTree, NcclAlgorithm::kNvlsTree,
                          NcclAlgorithm::kCollNet, NcclAlgorithm::kNvls}) {
    EXPECT_NE(Find(*q, a, NcclProtocol::kSimple), nullptr)
        << NcclAlgorithmName(a);
  }
  EXPECT_EQ(q->Label(), "nvls_tree/simple");
}

// A ring across nodes pays the proxy's post on every step, inside a node
// too (ring_net_overhead_us); a ring inside one node does not.
TEST(NcclModelTest, RingsAcrossNodesPayTheProxyOnEveryStep) {
  auto ring_latency = [](const Topology& t, double overhead,
                         NcclOp op = NcclOp::kAllGather) {
    NcclRunOptions options;
    options.algorithms = "ring";
    options.protocols = "simple";
    options.params.ring_net_overhead_us[2] = overhead;
    absl::StatusOr<NcclPrediction> p =
        PredictNccl(t, Gpus(t), op, 1 << 20, options);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? p->candidates.front().latency_us : 0.0;
  };
  // 2 x 8 GPUs: 15 steps, 14 of them inside a node; with an overhead above
  // every hop's own cost, each of the 14 costs it.
  const Topology cluster = Load("dgx_h100_cluster:2");
  EXPECT_NEAR(ring_latency(cluster, 60) - ring_latency(cluster, 50), 140, 1e-6);
  const Topology node = Load("dgx_h100");
  EXPECT_EQ(ring_latency(node, 50), ring_latency(node, 0));
  // Broadcast's and reduce's chains are not charged it, as in NCCL.
  for (NcclOp op : {NcclOp::kBroadcast, NcclOp::kReduce}) {
    EXPECT_EQ(ring_latency(cluster, 50, op), ring_latency(cluster, 0, op));
  }
}

// NCCL's ring plateau: a simple ring all-reduce across nodes takes its
// latency times ring_plateau_factor once every channel carries 64 bytes
// per rank; not below that size, not for other operations or one node.
TEST(NcclModelTest, SimpleRingAllReduceAcrossNodesPlateaus) {
  auto latency = [](const std::string& topology, NcclOp op, int64_t bytes,
                    double factor) {
    const Topology t = Load(topology);
    NcclRunOptions options;
    options.algorithms = "ring";
    options.protocols = "simple";
    options.params.ring_plateau_factor = factor;
    absl::StatusOr<NcclPrediction> p =
        PredictNccl(t, Gpus(t), op, bytes, options);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? p->candidates.front().latency_us : 0.0;
  };
  const std::string cluster = "dgx_h100_cluster:2";
  // 16 ranks x 64 channels x 64 B = 64 KiB.
  EXPECT_NEAR(latency(cluster, NcclOp::kAllReduce, 64 << 10, 1.4) /
                  latency(cluster, NcclOp::kAllReduce, 64 << 10, 1.0),
              1.4, 1e-9);
  EXPECT_EQ(latency(cluster, NcclOp::kAllReduce, (64 << 10) - 1, 1.4),
            latency(cluster, NcclOp::kAllReduce, (64 << 10) - 1, 1.0));
  EXPECT_EQ(latency(cluster, NcclOp::kAllGather, kGiB, 1.4),
            latency(cluster, NcclOp::kAllGather, kGiB, 1.0));
  EXPECT_EQ(latency("dgx_h100", NcclOp::kAllReduce, kGiB, 1.4),
            latency("dgx_h100", NcclOp::kAllReduce, kGiB, 1.0));
}

// Rings of the simple and LL128 protocols on Blackwell's NVLink reach
// blackwell_nvlink_share of their Hopper shares of the link; LL128 stays
// below simple, so large messages still run simple.
TEST(NcclModelTest, BlackwellRingsReachLessOfTheirNvlink) {
  for (const std::string name : {"dgx_h100", "hgx_b200"}) {
    SCOPED_TRACE(name);
    const Topology t = Load(name);
    const NcclPrediction p = Predict(t, Gpus(t), NcclOp::kAllGather, 8 * kGiB);
    EXPECT_EQ(p.Label(), "ring/simple");
    const NcclModelParams k;
    const double share = name == "hgx_b200" ? k.blackwell_nvlink_share : 1.0;
    const double link = p.hardware.intra_bw_Bps / 1e9;
    const NcclCandidate* simple =
        Find(p, NcclAlgorithm::kRing, NcclProtocol::kSimple);
    const NcclCandidate* ll128 =
        Find(p, NcclAlgorithm::kRing, NcclProtocol::kLL128);
    ASSERT_NE(simple, nullptr);
    ASSERT_NE(ll128, nullptr);
    EXPECT_NEAR(simple->algbw_GBps * 7.0 / 8.0,
                share * k.simple_efficiency[0] * link, 1e-9);
    EXPECT_NEAR(ll128->algbw_GBps * 7.0 / 8.0,
                share * k.ll128_efficiency[0] * link, 1e-9);
  }
}

// NVLS on Blackwell reaches 0.74 / 0.85 of Hopper's share of the link
// (NCCL's nvlsEfficiency), on the same formula.
TEST(NcclModelTest, BlackwellNvlsReachesLessOfItsLink) {
  for (const std::string name : {"dgx_h100", "hgx_b200"}) {
    SCOPED_TRACE(name);
    const Topology t = Load(name);
    const NcclPrediction p = Predict(t, Gpus(t), NcclOp::kAllReduce, kGiB);
    const NcclCandidate* nvls =
        Find(p, NcclAlgorithm::kNvls, NcclProtocol::kSimple);
    ASSERT_NE(nvls, nullptr);
    const double hopper_share = NcclModelParams().nvls_efficiency *
                                p.hardware.intra_bw_Bps / 1e9 * 8.0 / 9.0;
    EXPECT_NEAR(nvls->algbw_GBps / hopper_share,
                name == "hgx_b200" ? 0.74 / 0.85 : 1.0, 1e-9);
  }
}

// A tree's LL128 hop across nodes costs NCCL's tree-to-ring ratio (8.5 /
// 4.0) of the ring's software cost; the wire's latency is paid once.
TEST(NcclModelTest, TreeHopsAcrossNodesCostMoreThanARingsOnLL128) {
  const Topology t = Load("dgx_h100_cluster:4");
  auto tree_latency = [&](double ll128_net_hop) {
    NcclRunOptions options;
    options.algorithms = "tree";
    options.protocols = "ll128";
    options.params.hop_latency_us[1][2] = ll128_net_hop;
    absl::StatusOr<NcclPrediction> p =
        PredictNccl(t, Gpus(t), NcclOp::kAllReduce, 1 << 20, options);
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? p->candidates.front().latency_us : 0.0;
  };
  // 4 nodes: two levels of the tree, each crossed up and down.
  EXPECT_NEAR(tree_latency(5.0) - tree_latency(4.0), 2 * 2 * 8.5 / 4.0, 1e-9);
  // The wire's latency is not scaled: with no software cost, a hop is the
  // route's latency alone, as a ring's.
  NcclRunOptions ring;
  ring.algorithms = "ring";
  ring.protocols = "ll128";
  ring.params.hop_latency_us[1][2] = 0;
  ring.params.hop_latency_us[1][0] = 0;
  ring.params.base_latency_us[1] = 0;
  ring.params.ring_net_overhead_us[1] = 0;
  NcclRunOptions tree = ring;
  tree.algorithms = "tree";
  absl::StatusOr<NcclPrediction> r =
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, 1 << 20, ring);
  absl::StatusOr<NcclPrediction> q =
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, 1 << 20, tree);
  ASSERT_TRUE(r.ok() && q.ok());
  const double intra = r->hardware.intra_latency_us;
  const double net = r->hardware.net_latency_us;
  // Ring all-reduce on 4 x 8: 62 steps, 6 of them across nodes.
  EXPECT_NEAR(r->candidates.front().latency_us, 56 * intra + 6 * net, 1e-9);
  // Tree: 7 steps up and down each node, 2 levels up and down across.
  EXPECT_NEAR(q->candidates.front().latency_us, 2 * (7 * intra + 2 * net),
              1e-9);
  // LL keeps the ring's cost on a tree's network hop.
  NcclRunOptions ll = tree;
  ll.protocols = "ll";
  ll.params.hop_latency_us[0][2] = 4.0;
  absl::StatusOr<NcclPrediction> a =
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, 1 << 20, ll);
  ll.params.hop_latency_us[0][2] = 5.0;
  absl::StatusOr<NcclPrediction> b =
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, 1 << 20, ll);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_NEAR(
      b->candidates.front().latency_us - a->candidates.front().latency_us,
      2 * 2 * 1.0, 1e-9);
}

// NCCL_ALGO / NCCL_PROTO lists, NVLS off, SHARP on a fabric without it.
TEST(NcclModelTest, RunOptionsRestrictTheChoice) {
  const Topology t = Load("dgx_h100");
  NcclRunOptions o;
  o.algorithms = "Ring";
  absl::StatusOr<NcclPrediction> p =
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, kGiB, o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->Label(), "ring/simple");
  for (const NcclCandidate& c : p->candidates) {
    EXPECT_EQ(c.algorithm, NcclAlgorithm::kRing);
  }
  o.algorithms = "^nvls";
  o.protocols = "LL,LL128";
  p = PredictNccl(t, Gpus(t), NcclOp::kAllReduce, kGiB, o);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_NE(p->algorithm, NcclAlgorithm::kNvls);
  EXPECT_NE(p->protocol, NcclProtocol::kSimple);
  NcclRunOptions off;
  off.nvls = false;
  p = PredictNccl(t, Gpus(t), NcclOp::kAllReduce, kGiB, off);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(Find(*p, NcclAlgorithm::kNvls, NcclProtocol::kSimple), nullptr);

  NcclRunOptions bad;
  bad.algorithms = "ring,hypercube";
  absl::Status s = PredictNccl(t, Gpus(t), NcclOp::kAllReduce, 8, bad).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("hypercube"), absl::string_view::npos) << s;
  EXPECT_NE(s.message().find("NCCL_ALGO"), absl::string_view::npos) << s;
  NcclRunOptions none;
  none.algorithms = "collnet";  // applies only across nodes with SHARP
  EXPECT_EQ(
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, 8, none).status().code(),
      absl::StatusCode::kFailedPrecondition);
  NcclRunOptions zero;
  zero.iters = 0;
  EXPECT_EQ(
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, 8, zero).status().code(),
      absl::StatusCode::kInvalidArgument);

  const Topology roce = Load("dgx_h100_cluster:2,fabric=roce");
  NcclRunOptions sharp;
  sharp.sharp = true;
  EXPECT_EQ(PredictNccl(roce, Gpus(roce), NcclOp::kAllReduce, 8, sharp)
                .status()
                .code(),
            absl::StatusCode::kFailedPrecondition);
}

// nccl-tests' timing: back-to-back broadcasts overlap the chain's depth, a
// thread driving 8 GPUs pays their launches.
TEST(NcclModelTest, RunModeAndIterations) {
  const Topology t = Load("dgx_h100");
  NcclRunOptions one;
  NcclRunOptions many;
  many.iters = 20;
  const double single =
      PredictNccl(t, Gpus(t), NcclOp::kBroadcast, 1024, one)->time_us;
  const double mean =
      PredictNccl(t, Gpus(t), NcclOp::kBroadcast, 1024, many)->time_us;
  EXPECT_LT(mean, single);
  // All-reduce keeps every GPU busy to the end: no overlap.
  EXPECT_DOUBLE_EQ(
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, 1024, one)->time_us,
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, 1024, many)->time_us);
  NcclRunOptions grouped = many;
  grouped.gpus_per_thread = 8;
  EXPECT_GT(PredictNccl(t, Gpus(t), NcclOp::kAllReduce, 8, grouped)->time_us,
            PredictNccl(t, Gpus(t), NcclOp::kAllReduce, 8, many)->time_us);
}

TEST(NcclModelTest, ClusterWithoutSharpUsesTreesForSmallMessages) {
  absl::StatusOr<TopologyDef> node = BuiltinTopologyDef("dgx_h100");
  ASSERT_TRUE(node.ok()) << node.status();
  RailFabricOptions fabric;
  fabric.nodes = 16;
  fabric.in_network_reduction = false;
  absl::StatusOr<TopologyDef> def = BuildRailOptimizedCluster(*node, fabric);
  ASSERT_TRUE(def.ok()) << def.status();
  absl::StatusOr<Topology> t = Topology::FromDef(*def, "no_sharp");
  ASSERT_TRUE(t.ok()) << t.status();
  const NcclPrediction small = Predict(*t, Gpus(*t), NcclOp::kAllReduce, 8);
  EXPECT_EQ(small.Label(), "tree/ll");
  EXPECT_EQ(Find(small, NcclAlgorithm::kCollNet, NcclProtocol::kSimple),
            nullptr);
  EXPECT_EQ(Find(small, NcclAlgorithm::kNvls, NcclProtocol::kSimple), nullptr);
  // NVLS inside the nodes still applies, with trees across them.
  EXPECT_NE(Find(small, NcclAlgorithm::kNvlsTree, NcclProtocol::kSimple),
            nullptr);
  const NcclPrediction large =
      Predict(*t, Gpus(*t), NcclOp::kAllReduce, 8 * kGiB);
  EXPECT_EQ(large.Label(), "ring/simple");
}

TEST(NcclModelTest, TimeGrowsWithSize) {
  for (const std::string name :
       {"dgx_h100", "dgx_a100", "pcie_4gpu", "dgx_h100_cluster:4"}) {
    const Topology t = Load(name);
    absl::StatusOr<GroupHardware> hw = DescribeGroupHardware(t, Gpus(t));
    ASSERT_TRUE(hw.ok()) << hw.status();
    for (NcclOp op :
         {NcclOp::kAllReduce, NcclOp::kAllGather, NcclOp::kReduceScatter,
          NcclOp::kBroadcast, NcclOp::kReduce, NcclOp::kAllToAll}) {
      SCOPED_TRACE(std::string(name) + " " + std::string(NcclOpName(op)));
      double previous = 0;
      for (int64_t bytes = 8; bytes <= 8 * kGiB; bytes *= 2) {
        absl::StatusOr<NcclPrediction> p = PredictNcclOn(*hw, op, bytes);
        ASSERT_TRUE(p.ok()) << p.status();
        EXPECT_GE(p->time_us, previous) << bytes << " B";
        EXPECT_GT(p->time_us, 0);
        previous = p->time_us;
      }
    }
  }
}

// NCCL takes the candidate its tuner finds fastest; the tuner's view is the
// model's except for trees on 2 and 3 nodes, which it charges a share of
// 1/2 of the network where they move more (TreeShare).
TEST(NcclModelTest, ChoiceIsTheTunersFastestCandidate) {
  const Topology t = Load("dgx_h100_cluster:2");
  for (int64_t bytes : {int64_t{8}, int64_t{1} << 16, int64_t{1} << 24, kGiB}) {
    const NcclPrediction p = Predict(t, Gpus(t), NcclOp::kAllReduce, bytes);
    double chosen_tuner_time = 0;
    for (const NcclCandidate& c : p.candidates) {
      if (c.algorithm == p.algorithm && c.protocol == p.protocol) {
        chosen_tuner_time = c.tuner_time_us;
        EXPECT_EQ(c.time_us, p.time_us);
      }
    }
    for (const NcclCandidate& c : p.candidates) {
      EXPECT_GE(c.tuner_time_us, chosen_tuner_time);
      EXPECT_DOUBLE_EQ(c.time_us, c.latency_us + c.fill_us +
                                      static_cast<double>(bytes) /
                                          (c.algbw_GBps * c.size_factor * 1e3));
      if (c.algorithm != NcclAlgorithm::kTree) {
        EXPECT_EQ(c.size_factor, 1);
        EXPECT_EQ(c.tuner_time_us, c.time_us);
      }
    }
  }
}

// A double binary tree across 3 nodes moves 1.5 times the data through the
// busiest node's NICs (2 times from 4 nodes up): NCCL's tuner charges it
// 2 and keeps the ring, which a forced tree beats (NVIDIA/nccl issue 1801:
// 16 GiB on 3 x 8 GB200, ring busbw 394 GB/s, tree 486).
TEST(NcclModelTest, TunerKeepsTheRingThatATreeBeatsOnThreeNodes) {
  const Topology t = Load("gb200_nvl72_cluster:3");
  NcclRunOptions no_nvls;
  no_nvls.nvls = false;
  const int64_t bytes = int64_t{16} << 30;
  absl::StatusOr<NcclPrediction> chosen =
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, bytes, no_nvls);
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  EXPECT_EQ(chosen->algorithm, NcclAlgorithm::kRing);
  NcclRunOptions tree = no_nvls;
  tree.algorithms = "tree";
  tree.protocols = "simple";
  absl::StatusOr<NcclPrediction> forced =
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, bytes, tree);
  ASSERT_TRUE(forced.ok()) << forced.status();
  EXPECT_LT(forced->time_us, chosen->time_us / 1.15);
  ASSERT_EQ(forced->candidates.size(), 1u);
  const NcclCandidate& c = forced->candidates[0];
  EXPECT_NEAR(c.algbw_GBps / c.tuner_algbw_GBps, 4.0 / 3.0, 1e-9);
  // From 4 nodes the tuner's share is the tree's.
  const Topology four = Load("gb200_nvl72_cluster:4");
  absl::StatusOr<NcclPrediction> on_four =
      PredictNccl(four, Gpus(four), NcclOp::kAllReduce, bytes, tree);
  ASSERT_TRUE(on_four.ok()) << on_four.status();
  EXPECT_DOUBLE_EQ(on_four->candidates[0].algbw_GBps,
                   on_four->candidates[0].tuner_algbw_GBps);
}

// Trees reach their rate only at the ends of the size range: at 1 MiB an
// LL tree runs at half of it, at 512 MiB and beyond at all of it (NVIDIA's
// tuner's factors).
TEST(NcclModelTest, TreesRunBelowTheirRateAtMidSizes) {
  const Topology t = Load("dgx_h100_cluster:2");
  NcclRunOptions tree_ll;
  tree_ll.algorithms = "tree";
  tree_ll.protocols = "ll";
  absl::StatusOr<NcclPrediction> mid =
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, int64_t{1} << 20, tree_ll);
  ASSERT_TRUE(mid.ok()) << mid.status();
  ASSERT_EQ(mid->candidates.size(), 1u);
  EXPECT_DOUBLE_EQ(mid->candidates[0].size_factor, 0.5);
  absl::StatusOr<NcclPrediction> large =
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, int64_t{1} << 29, tree_ll);
  ASSERT_TRUE(large.ok()) << large.status();
  EXPECT_DOUBLE_EQ(large->candidates[0].size_factor, 1.0);
}

TEST(NcclModelTest, OneRankIsALocalCopy) {
  const Topology t = Load("dgx_h100");
  const NcclPrediction p = Predict(t, Gpus(t, 1), NcclOp::kAllReduce, kGiB);
  EXPECT_EQ(p.algorithm, NcclAlgorithm::kRing);
  // Half the HBM bandwidth: read and write.
  EXPECT_NEAR(p.candidates.back().algbw_GBps, 3350.0 / 2, 1e-9);
}

TEST(NcclModelTest, Errors) {
  const Topology t = Load("dgx_h100");
  EXPECT_EQ(PredictNccl(t, Gpus(t), NcclOp::kAllReduce, -1).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Device 0 is the CPU.
  EXPECT_EQ(PredictNccl(t, {0, 1}, NcclOp::kAllReduce, 8).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(PredictNccl(t, {}, NcclOp::kAllReduce, 8).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PredictNccl(t, {1, 1}, NcclOp::kAllReduce, 8).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(NcclModelTest, Names) {
  for (NcclOp op :
       {NcclOp::kAllReduce, NcclOp::kAllGather, NcclOp::kReduceScatter,
        NcclOp::kBroadcast, NcclOp::kReduce, NcclOp::kAllToAll}) {
    absl::StatusOr<NcclOp> parsed = NcclOpFromName(NcclOpName(op));
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    EXPECT_EQ(*parsed, op);
  }
  EXPECT_EQ(NcclOpFromName("barrier").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NcclAlgorithmName(NcclAlgorithm::kNvlsTree), "nvls_tree");
  EXPECT_EQ(NcclProtocolName(NcclProtocol::kLL128), "ll128");
}

}  // namespace
}  // namespace simulator

namespace simulator {
namespace {

TEST(NcclModelParamsTest, TextRoundTripsEveryConstant) {
  NcclModelParams params;
  std::vector<NcclModelParam> list = NcclModelParamList(params);
  ASSERT_GE(list.size(), 20u);
  // Give every constant a value of its own, some without a short form.
  for (size_t i = 0; i < list.size(); ++i) *list[i].value = 0.1 + i / 3.0;
  absl::StatusOr<NcclModelParams> read =
      NcclModelParamsFromText(NcclModelParamsToText(params));
  ASSERT_TRUE(read.ok()) << read.status();
  NcclModelParams copy = *read;
  std::vector<NcclModelParam> read_list = NcclModelParamList(copy);
  ASSERT_EQ(read_list.size(), list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    EXPECT_EQ(read_list[i].name, list[i].name);
    EXPECT_EQ(*read_list[i].value, *list[i].value) << list[i].name;
  }
}

TEST(NcclModelParamsTest, ConstantsNotNamedKeepTheirDefaults) {
  absl::StatusOr<NcclModelParams> read = NcclModelParamsFromText(
      "# my cluster\n\n  simple_efficiency.net = 0.5  # measured\n"
      "hop_latency_us.ll.nvlink=1\n");
  ASSERT_TRUE(read.ok()) << read.status();
  const NcclModelParams defaults;
  EXPECT_EQ(read->simple_efficiency[2], 0.5);
  EXPECT_EQ(read->hop_latency_us[0][0], 1.0);
  EXPECT_EQ(read->simple_efficiency[0], defaults.simple_efficiency[0]);
  EXPECT_EQ(read->launch_per_gpu_us, defaults.launch_per_gpu_us);
}

TEST(NcclModelParamsTest, BadLinesAreRefusedWithTheirNumber) {
  for (const char* text :
       {"nope = 1", "simple_efficiency.net", "simple_efficiency.net = -1",
        "simple_efficiency.net = nan", "simple_efficiency.net = fast",
        "per_peer_us = 1\nper_peer_us = 2",
        // LL128 never crosses PCIe: no constant of its own there.
        "hop_latency_us.ll128.pcie = 1"}) {
    absl::StatusOr<NcclModelParams> read = NcclModelParamsFromText(text);
    EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(read.status().message()),
                ::testing::HasSubstr("line "))
        << text;
  }
  EXPECT_EQ(LoadNcclModelParams("/nonexistent/constants.txt").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(NcclModelParamsTest, PredictionsFollowTheConstants) {
  const Topology t = Load("dgx_h100");
  NcclRunOptions options;
  options.algorithms = "ring";
  options.protocols = "simple";
  absl::StatusOr<NcclPrediction> base =
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, int64_t{1} << 30, options);
  ASSERT_TRUE(base.ok()) << base.status();
  options.params.simple_efficiency[0] = 0.41;  // half the NVLink share
  absl::StatusOr<NcclPrediction> slow =
      PredictNccl(t, Gpus(t), NcclOp::kAllReduce, int64_t{1} << 30, options);
  ASSERT_TRUE(slow.ok()) << slow.status();
  // Bandwidth-bound: about twice the time.
  EXPECT_NEAR(slow->time_us / base->time_us, 2.0, 0.05);
}

}  // namespace
}  // namespace simulator
