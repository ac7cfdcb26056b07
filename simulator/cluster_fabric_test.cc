#include "simulator/cluster_fabric.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "gtest/gtest.h"
#include "simulator/routing.h"
#include "simulator/topology.h"

namespace simulator {
namespace {

using ::testing::HasSubstr;

constexpr char kNode[] = R"pb(
  name: "box"
  hosts { name: "box" }
  device_specs {
    name: "g"
    spec {
      peak_flops { key: "float32" value: 1e12 }
      memory_bandwidth_bytes_per_second: 1e12
      memory_capacity_bytes: 1000
    }
  }
  devices { name: "gpu0" kind: GPU host: "box" spec_name: "g" }
  devices { name: "gpu1" kind: GPU host: "box" spec_name: "g" }
  switches { name: "sw" kind: PCIE_SWITCH host: "box" }
  nics { name: "nic0" host: "box" device: "gpu0" }
  nics { name: "nic1" host: "box" device: "gpu1" }
  links { a: "gpu0" b: "sw" kind: PCIE bandwidth_bytes_per_second: 1e9 }
  links { a: "gpu1" b: "sw" kind: PCIE bandwidth_bytes_per_second: 1e9 }
  links { a: "nic0" b: "sw" kind: PCIE bandwidth_bytes_per_second: 1e9 }
  links { a: "nic1" b: "sw" kind: PCIE bandwidth_bytes_per_second: 1e9 }
)pb";

TopologyDef Node() {
  TopologyDef def;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kNode, &def));
  return def;
}

TEST(ClusterFabricTest, ReplicatesNodesAndBuildsRailsAndSpines) {
  RailFabricOptions options;
  options.nodes = 3;
  options.nodes_per_leaf = 2;
  options.spines = 3;
  options.port_bandwidth_bytes_per_second = 25e9;
  absl::StatusOr<TopologyDef> def = BuildRailOptimizedCluster(Node(), options);
  ASSERT_TRUE(def.ok()) << def.status();
  EXPECT_EQ(def->name(), "box_cluster:3");
  EXPECT_EQ(def->routing().policy(), RoutingDef::D_MOD_K);
  // Ethernet hashes flows (ECMP) unless told otherwise.
  RailFabricOptions ethernet = options;
  ethernet.ethernet = true;
  EXPECT_EQ(BuildRailOptimizedCluster(Node(), ethernet)->routing().policy(),
            RoutingDef::ECMP);
  ethernet.routing = RoutingDef::D_MOD_K;
  EXPECT_EQ(BuildRailOptimizedCluster(Node(), ethernet)->routing().policy(),
            RoutingDef::D_MOD_K);
  absl::StatusOr<Topology> topology = Topology::FromDef(*def, def->name());
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->num_hosts(), 3);
  EXPECT_EQ(topology->num_devices(), 6);
  // 2 rails x 2 groups of leaves, 3 spines.
  for (const char* name : {"ib_leaf_r0_g0", "ib_leaf_r1_g0", "ib_leaf_r0_g1",
                           "ib_leaf_r1_g1", "ib_spine0", "ib_spine2"}) {
    EXPECT_TRUE(topology->FindNode(name).ok()) << name;
  }
  EXPECT_FALSE(topology->FindNode("ib_spine3").ok());
  // Node 2 is in the second group of rail 1.
  const int nic = *topology->FindNode("node2/nic1");
  const int leaf = *topology->FindNode("ib_leaf_r1_g1");
  ASSERT_GE(topology->LinkBetween(nic, leaf), 0);
  EXPECT_DOUBLE_EQ(topology->link(topology->LinkBetween(nic, leaf))
                       .capacity_bytes_per_second,
                   25e9);
  EXPECT_LT(topology->LinkBetween(nic, *topology->FindNode("ib_leaf_r1_g0")),
            0);
  EXPECT_EQ(topology->node(nic).paired_device,
            *topology->FindNode("node2/gpu1"));
  // Every leaf reaches every spine.
  EXPECT_GE(topology->LinkBetween(*topology->FindNode("ib_leaf_r0_g1"),
                                  *topology->FindNode("ib_spine2")),
            0);
}

TEST(ClusterFabricTest, ThreeLevelsJoinPodsThroughCores) {
  RailFabricOptions options;
  options.nodes = 8;
  options.nodes_per_leaf = 2;
  options.spines = 2;
  options.nodes_per_pod = 4;  // 2 pods of 2 leaf groups
  absl::StatusOr<TopologyDef> def = BuildRailOptimizedCluster(Node(), options);
  ASSERT_TRUE(def.ok()) << def.status();
  absl::StatusOr<Topology> topology = Topology::FromDef(*def, def->name());
  ASSERT_TRUE(topology.ok()) << topology.status();
  auto id = [&](const char* name) {
    absl::StatusOr<int> found = topology->FindNode(name);
    EXPECT_TRUE(found.ok()) << name;
    return found.ok() ? *found : -1;
  };
  // A pod has 2 groups x 2 rails = 4 leaves, so a non-blocking spine layer
  // has 4 cores per plane: 8 cores over 2 planes.
  EXPECT_TRUE(topology->FindNode("ib_core7").ok());
  EXPECT_FALSE(topology->FindNode("ib_core8").ok());
  EXPECT_FALSE(topology->FindNode("ib_spine0").ok());
  // Leaves reach the spines of their own pod only.
  EXPECT_GE(topology->LinkBetween(id("ib_leaf_r1_g1"), id("ib_spine_p0_1")), 0);
  EXPECT_LT(topology->LinkBetween(id("ib_leaf_r1_g2"), id("ib_spine_p0_1")), 0);
  EXPECT_GE(topology->LinkBetween(id("ib_leaf_r1_g2"), id("ib_spine_p1_1")), 0);
  // Spine s of every pod reaches the cores of plane s.
  EXPECT_GE(topology->LinkBetween(id("ib_spine_p1_1"), id("ib_core3")), 0);
  EXPECT_LT(topology->LinkBetween(id("ib_spine_p1_1"), id("ib_core2")), 0);
  // Between pods a route climbs to a core: nic, leaf, spine, core, spine,
  // leaf, nic.
  Router router(*topology);
  absl::StatusOr<std::vector<int>> route =
      router.Route(id("node0/nic0"), id("node7/nic0"));
  ASSERT_TRUE(route.ok()) << route.status();
  ASSERT_EQ(route->size(), 6u);
  EXPECT_EQ(
      topology->node(topology->link((*route)[2]).dst).name.rfind("ib_core", 0),
      0u);
  // Inside a pod it turns at a spine.
  route = router.Route(id("node0/nic0"), id("node3/nic0"));
  ASSERT_TRUE(route.ok()) << route.status();
  EXPECT_EQ(route->size(), 4u);
  EXPECT_THAT(def->description(), HasSubstr("three-level"));

  options.nodes_per_pod = 3;  // not whole leaf groups
  EXPECT_EQ(BuildRailOptimizedCluster(Node(), options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.nodes_per_pod = 4;
  options.cores = 3;  // not whole planes
  EXPECT_EQ(BuildRailOptimizedCluster(Node(), options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ClusterFabricTest, RejectsUnsuitableNodes) {
  RailFabricOptions options;
  TopologyDef two_hosts = Node();
  two_hosts.add_hosts()->set_name("other");
  EXPECT_EQ(BuildRailOptimizedCluster(two_hosts, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  TopologyDef no_nics = Node();
  no_nics.clear_nics();
  EXPECT_EQ(BuildRailOptimizedCluster(no_nics, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.nodes = 0;
  EXPECT_EQ(BuildRailOptimizedCluster(Node(), options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.nodes = 2;
  options.spines = 0;
  EXPECT_EQ(BuildRailOptimizedCluster(Node(), options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace simulator
