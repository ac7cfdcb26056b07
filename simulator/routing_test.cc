#include "simulator/routing.h"

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/builtin_topologies.h"
#include "simulator/topology.h"

namespace simulator {
namespace {

using ::testing::ElementsAre;

int NodeId(const Topology& topology, const std::string& name) {
  absl::StatusOr<int> id = topology.FindNode(name);
  EXPECT_TRUE(id.ok()) << id.status();
  return id.ok() ? *id : -1;
}

// Names of the nodes a route visits, source first.
std::vector<std::string> Hops(const Topology& topology, int src,
                              const std::vector<int>& route) {
  std::vector<std::string> names = {topology.node(src).name};
  for (int id : route)
    names.push_back(topology.node(topology.link(id).dst).name);
  return names;
}

std::vector<std::string> RouteByName(const Topology& topology,
                                     const Router& router,
                                     const std::string& src,
                                     const std::string& dst) {
  const int from = NodeId(topology, src);
  absl::StatusOr<std::vector<int>> route =
      router.Route(from, NodeId(topology, dst));
  EXPECT_TRUE(route.ok()) << route.status();
  if (!route.ok()) return {};
  // A route is a chain of links.
  int at = from;
  for (int id : *route) {
    EXPECT_EQ(topology.link(id).src, at);
    at = topology.link(id).dst;
  }
  return Hops(topology, from, *route);
}

TEST(RoutingTest, WithinDgxGoesThroughTheNvSwitch) {
  absl::StatusOr<Topology> dgx = BuiltinTopology("dgx_h100");
  ASSERT_TRUE(dgx.ok()) << dgx.status();
  Router router(*dgx);
  EXPECT_THAT(RouteByName(*dgx, router, "gpu0", "gpu1"),
              ElementsAre("gpu0", "nvswitch", "gpu1"));
  EXPECT_THAT(RouteByName(*dgx, router, "gpu7", "gpu2"),
              ElementsAre("gpu7", "nvswitch", "gpu2"));
  // Host traffic goes over the GPU's own PCIe switch.
  EXPECT_THAT(RouteByName(*dgx, router, "cpu", "gpu5"),
              ElementsAre("cpu", "pcie5", "gpu5"));
  absl::StatusOr<std::vector<int>> route =
      router.Route(NodeId(*dgx, "gpu0"), NodeId(*dgx, "gpu1"));
  ASSERT_TRUE(route.ok());
  EXPECT_DOUBLE_EQ(dgx->link((*route)[0]).capacity_bytes_per_second, 450e9);
}

TEST(RoutingTest, PcieOnlyMachineGoesThroughTheSwitch) {
  absl::StatusOr<Topology> box = BuiltinTopology("pcie_4gpu");
  ASSERT_TRUE(box.ok()) << box.status();
  Router router(*box);
  EXPECT_THAT(RouteByName(*box, router, "gpu0", "gpu3"),
              ElementsAre("gpu0", "pcie_switch", "gpu3"));
}

class ClusterRoutingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<Topology> cluster = BuiltinTopology("dgx_h100_cluster:16");
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    cluster_ = new Topology(*std::move(cluster));
  }
  static void TearDownTestSuite() {
    delete cluster_;
    cluster_ = nullptr;
  }
  static Topology* cluster_;
};

Topology* ClusterRoutingTest::cluster_ = nullptr;

TEST_F(ClusterRoutingTest, SameRailAcrossNodesStaysOnTheRail) {
  Router router(*cluster_);
  EXPECT_EQ(router.policy(), RoutingDef::D_MOD_K);  // InfiniBand's default
  EXPECT_THAT(
      RouteByName(*cluster_, router, "node0/gpu3", "node9/gpu3"),
      ElementsAre("node0/gpu3", "node0/pcie3", "node0/nic3", "ib_leaf_r3_g0",
                  "node9/nic3", "node9/pcie3", "node9/gpu3"));
}

TEST_F(ClusterRoutingTest, CrossRailGoesThroughASpine) {
  Router router(*cluster_);
  const std::vector<std::string> hops =
      RouteByName(*cluster_, router, "node0/gpu3", "node1/gpu5");
  ASSERT_EQ(hops.size(), 9u);
  EXPECT_EQ(hops[2], "node0/nic3");
  EXPECT_EQ(hops[3], "ib_leaf_r3_g0");
  EXPECT_TRUE(absl::StartsWith(hops[4], "ib_spine")) << hops[4];
  EXPECT_EQ(hops[5], "ib_leaf_r5_g0");
  EXPECT_EQ(hops[6], "node1/nic5");
  EXPECT_EQ(hops[8], "node1/gpu5");
}

// The spines used by cross-rail flows from node 0 to every other node.
std::set<std::string> SpinesUsed(const Topology& topology,
                                 const Router& router) {
  std::set<std::string> spines;
  for (int node = 1; node < 16; ++node) {
    for (int rail = 0; rail < 8; ++rail) {
      const std::vector<std::string> hops =
          RouteByName(topology, router, absl::StrCat("node0/gpu", rail),
                      absl::StrCat("node", node, "/gpu", (rail + 1) % 8));
      for (const std::string& hop : hops) {
        if (absl::StartsWith(hop, "ib_spine")) spines.insert(hop);
      }
    }
  }
  return spines;
}

TEST_F(ClusterRoutingTest, EcmpIsDeterministicAndSpreadsOverSpines) {
  RouterOptions ecmp;
  ecmp.policy = RoutingDef::ECMP;
  Router first(*cluster_, ecmp);
  Router second(*cluster_, ecmp);
  const int src = NodeId(*cluster_, "node2/gpu1");
  const int dst = NodeId(*cluster_, "node7/gpu6");
  absl::StatusOr<std::vector<int>> a = first.Route(src, dst);
  absl::StatusOr<std::vector<int>> again = first.Route(src, dst);
  absl::StatusOr<std::vector<int>> b = second.Route(src, dst);
  ASSERT_TRUE(a.ok() && again.ok() && b.ok());
  EXPECT_EQ(*a, *again);
  EXPECT_EQ(*a, *b);
  const std::set<std::string> spines = SpinesUsed(*cluster_, first);
  EXPECT_GE(spines.size(), 16u);
  EXPECT_EQ(spines, SpinesUsed(*cluster_, second));
  // Another seed spreads the flows differently.
  RouterOptions reseeded = ecmp;
  reseeded.ecmp_seed = 12345;
  Router third(*cluster_, reseeded);
  bool differs = false;
  for (int node = 1; node < 16 && !differs; ++node) {
    const int from = NodeId(*cluster_, "node0/gpu0");
    const int to = NodeId(*cluster_, absl::StrCat("node", node, "/gpu4"));
    differs = *first.Route(from, to) != *third.Route(from, to);
  }
  EXPECT_TRUE(differs);
}

// D-mod-k: a shift across leaves (node k to node k + 32, on one rail) takes
// spine (destination host mod 32), so the 32 flows leaving a leaf use its
// 32 uplinks once each, where ECMP's hash piles some onto one spine.
TEST(DModKRoutingTest, AShiftAcrossLeavesUsesEverySpineOnce) {
  absl::StatusOr<Topology> cluster = BuiltinTopology("dgx_h100_cluster:64");
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Router router(*cluster);
  ASSERT_EQ(router.policy(), RoutingDef::D_MOD_K);
  RouterOptions ecmp_options;
  ecmp_options.policy = RoutingDef::ECMP;
  Router ecmp(*cluster, ecmp_options);
  std::set<std::string> spines, ecmp_spines;
  for (int k = 0; k < 32; ++k) {
    const std::string src = absl::StrCat("node", k, "/gpu2");
    const std::string dst = absl::StrCat("node", k + 32, "/gpu2");
    const std::vector<std::string> hops =
        RouteByName(*cluster, router, src, dst);
    ASSERT_EQ(hops.size(), 9u);
    EXPECT_EQ(hops[3], "ib_leaf_r2_g0");
    EXPECT_EQ(hops[4], absl::StrCat("ib_spine", (k + 32) % 32));
    EXPECT_EQ(hops[5], "ib_leaf_r2_g1");
    spines.insert(hops[4]);
    for (const std::string& hop : RouteByName(*cluster, ecmp, src, dst)) {
      if (absl::StartsWith(hop, "ib_spine")) ecmp_spines.insert(hop);
    }
  }
  EXPECT_EQ(spines.size(), 32u);
  EXPECT_LT(ecmp_spines.size(), 32u);
  // Ethernet fabrics hash; routing= chooses either way.
  for (const auto& [spec, policy] :
       std::vector<std::pair<std::string, RoutingDef::Policy>>{
           {"dgx_h100_cluster:4,fabric=roce", RoutingDef::ECMP},
           {"dgx_h100_cluster:4,routing=ecmp", RoutingDef::ECMP},
           {"dgx_h100_cluster:4,fabric=roce,routing=dmodk",
            RoutingDef::D_MOD_K}}) {
    absl::StatusOr<Topology> topology = BuiltinTopology(spec);
    ASSERT_TRUE(topology.ok()) << topology.status();
    EXPECT_EQ(Router(*topology).policy(), policy) << spec;
  }
  EXPECT_FALSE(BuiltinTopology("dgx_h100_cluster:4,routing=random").ok());
}

TEST_F(ClusterRoutingTest, ShortestPathBreaksTiesTowardsTheLowestLinkId) {
  RouterOptions options;
  options.policy = RoutingDef::SHORTEST_PATH;
  Router router(*cluster_, options);
  EXPECT_EQ(SpinesUsed(*cluster_, router),
            std::set<std::string>({"ib_spine0"}));
}

TEST_F(ClusterRoutingTest, ConcurrentCallersGetTheSameRoutes) {
  Router router(*cluster_);
  std::vector<std::vector<int>> results(4);
  std::vector<std::thread> threads;
  const int src = NodeId(*cluster_, "node3/gpu0");
  const int dst = NodeId(*cluster_, "node12/gpu7");
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] { results[t] = *router.Route(src, dst); });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 1; t < 4; ++t) EXPECT_EQ(results[t], results[0]);
  EXPECT_FALSE(results[0].empty());
}

class TorusRoutingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<Topology> slice = BuiltinTopology("tpu_v4:4x4x4");
    ASSERT_TRUE(slice.ok()) << slice.status();
    slice_ = new Topology(*std::move(slice));
  }
  static void TearDownTestSuite() {
    delete slice_;
    slice_ = nullptr;
  }
  // Chips whose routers the route's ICI links enter, as "x,y,z".
  static std::vector<std::string> IciSteps(const std::vector<int>& route) {
    std::vector<std::string> steps;
    for (int id : route) {
      const Link& link = slice_->link(id);
      if (link.kind != LinkDef::ICI) continue;
      const MeshCoordinates& c = *slice_->node(link.dst).coordinates;
      steps.push_back(absl::StrCat(c.x, ",", c.y, ",", c.z));
    }
    return steps;
  }
  static Topology* slice_;
};

Topology* TorusRoutingTest::slice_ = nullptr;

TEST_F(TorusRoutingTest, WrapsAroundTheShorterWay) {
  Router router(*slice_);
  EXPECT_EQ(router.policy(), RoutingDef::DIMENSION_ORDER);
  const int from = NodeId(*slice_, "chip(0,0,0)/core0");
  const int to = NodeId(*slice_, "chip(3,0,0)/core0");
  absl::StatusOr<std::vector<int>> route = router.Route(from, to);
  ASSERT_TRUE(route.ok()) << route.status();
  EXPECT_THAT(Hops(*slice_, from, *route),
              ElementsAre("chip(0,0,0)/core0", "chip(0,0,0)/ici",
                          "chip(3,0,0)/ici", "chip(3,0,0)/core0"));
  EXPECT_THAT(IciSteps(*route), ElementsAre("3,0,0"));
  // Router to router: exactly the one wraparound link.
  absl::StatusOr<std::vector<int>> direct = router.Route(
      NodeId(*slice_, "chip(0,0,0)/ici"), NodeId(*slice_, "chip(3,0,0)/ici"));
  ASSERT_TRUE(direct.ok());
  ASSERT_EQ(direct->size(), 1u);
  EXPECT_EQ(slice_->link((*direct)[0]).kind, LinkDef::ICI);
}

TEST_F(TorusRoutingTest, GoesXThenYThenZ) {
  Router router(*slice_);
  absl::StatusOr<std::vector<int>> route =
      router.Route(NodeId(*slice_, "chip(0,0,0)/core1"),
                   NodeId(*slice_, "chip(1,3,2)/core0"));
  ASSERT_TRUE(route.ok()) << route.status();
  // x: 0 -> 1; y: 0 -> 3 the short way (-1); z: 0 -> 2, a tie, goes +.
  EXPECT_THAT(IciSteps(*route),
              ElementsAre("1,0,0", "1,3,0", "1,3,1", "1,3,2"));
}

TEST_F(TorusRoutingTest, CoresOfOneChipMeetAtTheRouter) {
  Router router(*slice_);
  const int from = NodeId(*slice_, "chip(2,1,3)/core0");
  absl::StatusOr<std::vector<int>> route =
      router.Route(from, NodeId(*slice_, "chip(2,1,3)/core1"));
  ASSERT_TRUE(route.ok());
  EXPECT_THAT(
      Hops(*slice_, from, *route),
      ElementsAre("chip(2,1,3)/core0", "chip(2,1,3)/ici", "chip(2,1,3)/core1"));
}

TEST_F(TorusRoutingTest, HostCpuFallsBackToShortestPath) {
  Router router(*slice_);
  const int cpu = NodeId(*slice_, "host0/cpu");
  absl::StatusOr<std::vector<int>> route =
      router.Route(cpu, NodeId(*slice_, "chip(1,1,0)/core1"));
  ASSERT_TRUE(route.ok()) << route.status();
  EXPECT_THAT(Hops(*slice_, cpu, *route),
              ElementsAre("host0/cpu", "chip(1,1,0)/ici", "chip(1,1,0)/core1"));
}

TEST(RoutingTest, MeshWithoutWraparoundTakesTheDirectWay) {
  absl::StatusOr<Topology> slice = BuiltinTopology("tpu_v4:2x2x1");
  ASSERT_TRUE(slice.ok()) << slice.status();
  Router router(*slice);
  const int from = NodeId(*slice, "chip(1,1,0)/core0");
  absl::StatusOr<std::vector<int>> route =
      router.Route(from, NodeId(*slice, "chip(0,0,0)/core0"));
  ASSERT_TRUE(route.ok());
  EXPECT_THAT(
      Hops(*slice, from, *route),
      ElementsAre("chip(1,1,0)/core0", "chip(1,1,0)/ici", "chip(0,1,0)/ici",
                  "chip(0,0,0)/ici", "chip(0,0,0)/core0"));
}

TEST(RoutingTest, BadNodesAndUnroutablePairs) {
  absl::StatusOr<Topology> dgx = BuiltinTopology("dgx_a100");
  ASSERT_TRUE(dgx.ok()) << dgx.status();
  Router router(*dgx);
  EXPECT_EQ(router.Route(-1, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(router.Route(0, static_cast<int>(dgx->num_nodes())).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::vector<int>> same = router.Route(3, 3);
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->empty());
  // A single DGX has no fabric: nic0 leads only into the node, and from
  // nic0 to nic1 the way passes through the CPU, which does not forward.
  EXPECT_EQ(
      router.Route(NodeId(*dgx, "nic0"), NodeId(*dgx, "nic1")).status().code(),
      absl::StatusCode::kNotFound);
  RouterOptions options;
  options.policy = RoutingDef::DIMENSION_ORDER;
  Router dor(*dgx, options);
  // No node of a DGX has mesh coordinates: shortest path is used.
  EXPECT_THAT(RouteByName(*dgx, dor, "gpu0", "gpu4"),
              ElementsAre("gpu0", "nvswitch", "gpu4"));
}

// A router finds the first routes to a destination by a search from the
// source and later ones from the destination's cost table; both must give
// the same route. Router `a` asks each destination's sources in order, `b`
// in reverse order, so the first and last sources of every destination are
// searched by one router and looked up in a table by the other.
void ExpectSearchedRoutesMatchTables(const Topology& topology,
                                     RouterOptions options) {
  Router a(topology, options);
  Router b(topology, options);
  const int n = static_cast<int>(topology.num_nodes());
  int compared = 0;
  for (int dst = 0; dst < n; ++dst) {
    std::vector<absl::StatusOr<std::vector<int>>> from_a;
    for (int src = 0; src < n; ++src) from_a.push_back(a.Route(src, dst));
    for (int src = n - 1; src >= 0; --src) {
      absl::StatusOr<std::vector<int>> route = b.Route(src, dst);
      const absl::StatusOr<std::vector<int>>& expected =
          from_a[static_cast<size_t>(src)];
      ASSERT_EQ(route.status().code(), expected.status().code())
          << topology.node(src).name << " -> " << topology.node(dst).name;
      if (route.ok()) {
        ASSERT_EQ(*route, *expected)
            << topology.node(src).name << " -> " << topology.node(dst).name;
        ++compared;
      }
    }
  }
  EXPECT_GT(compared, n);
}

TEST(RoutingTest, SearchedRoutesMatchCostTableRoutes) {
  for (const char* name : {"dgx_h100_cluster:3", "dgx_a100_cluster:2,nics=4",
                           "pcie_8gpu_nop2p", "tpu_v4:2x2x2"}) {
    SCOPED_TRACE(name);
    absl::StatusOr<Topology> topology = BuiltinTopology(name);
    ASSERT_TRUE(topology.ok()) << topology.status();
    for (RoutingDef::Policy policy :
         {RoutingDef::SHORTEST_PATH, RoutingDef::ECMP, RoutingDef::D_MOD_K}) {
      RouterOptions options;
      options.policy = policy;
      ExpectSearchedRoutesMatchTables(*topology, options);
    }
  }
}

// Random graphs of switches whose links cost 1 or 2 units, so that routes
// tie often and the searches' ball boundaries fall on nodes of every kind.
TEST(RoutingTest, SearchedRoutesMatchCostTableRoutesOnRandomGraphs) {
  uint64_t state = 12345;
  auto next = [&state](uint64_t bound) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % bound;
  };
  for (int trial = 0; trial < 40; ++trial) {
    SCOPED_TRACE(absl::StrCat("trial ", trial));
    TopologyDef def;
    def.set_name("random");
    def.add_hosts()->set_name("h");
    const int switches = 3 + static_cast<int>(next(10));
    const int devices = 2 + static_cast<int>(next(5));
    for (int s = 0; s < switches; ++s) {
      SwitchDef* sw = def.add_switches();
      sw->set_name(absl::StrCat("s", s));
      sw->set_kind(SwitchDef::ETHERNET_SWITCH);
    }
    auto link = [&](const std::string& a, const std::string& b) {
      LinkDef* l = def.add_links();
      l->set_a(a);
      l->set_b(b);
      l->set_kind(LinkDef::ETHERNET);
      // 1 MiB takes 1 or 2 ps (LinkCost), so costs are tiny integers.
      l->set_bandwidth_bytes_per_second(next(2) == 0 ? 1048576e12 : 524288e12);
      l->set_latency_ns(0);
    };
    for (int d = 0; d < devices; ++d) {
      DeviceDef* device = def.add_devices();
      device->set_name(absl::StrCat("d", d));
      device->set_kind(DeviceDef::GPU);
      device->set_host("h");
      DeviceSpec* spec = device->mutable_spec();
      (*spec->mutable_peak_flops())["float32"] = 1e12;
      spec->set_memory_bandwidth_bytes_per_second(1e12);
      spec->set_memory_capacity_bytes(1000000);
      const int first = static_cast<int>(next(switches));
      link(device->name(), absl::StrCat("s", first));
      const int second = static_cast<int>(next(switches));
      if (second != first && next(2) == 0) {
        link(device->name(), absl::StrCat("s", second));
      }
    }
    std::set<std::pair<int, int>> joined;
    for (int b = 1; b < switches; ++b) {  // a spanning tree, then more
      const int a = static_cast<int>(next(static_cast<uint64_t>(b)));
      joined.insert({a, b});
      link(absl::StrCat("s", a), absl::StrCat("s", b));
    }
    for (int e = 0; e < switches; ++e) {
      const int a = static_cast<int>(next(switches));
      const int b = static_cast<int>(next(switches));
      if (a == b || !joined.insert({std::min(a, b), std::max(a, b)}).second) {
        continue;
      }
      link(absl::StrCat("s", a), absl::StrCat("s", b));
    }
    absl::StatusOr<Topology> topology = Topology::FromDef(def, "random");
    ASSERT_TRUE(topology.ok()) << topology.status();
    for (RoutingDef::Policy policy :
         {RoutingDef::SHORTEST_PATH, RoutingDef::ECMP, RoutingDef::D_MOD_K}) {
      RouterOptions options;
      options.policy = policy;
      options.ecmp_seed = static_cast<uint64_t>(trial);
      ExpectSearchedRoutesMatchTables(*topology, options);
    }
  }
}

TEST(RoutingTest, LinkCostPrefersFastLinks) {
  Link fast;
  fast.capacity_bytes_per_second = 450e9;
  fast.latency_ps = 250000;
  Link slow = fast;
  slow.capacity_bytes_per_second = 63e9;
  EXPECT_LT(Router::LinkCost(fast), Router::LinkCost(slow));
  EXPECT_EQ(Router::LinkCost(fast), 250000 + 2330169);
}

}  // namespace
}  // namespace simulator
