// DescribeGroupHardware on the built-in machines and clusters: node counts,
// per-rank bandwidths from the routes, in-network reduction, and errors.
#include "simulator/group_hardware.h"

#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "simulator/builtin_topologies.h"
#include "simulator/topology.h"

namespace simulator {
namespace {

// The first `count` GPUs (all with count 0), in canonical order.
std::vector<int> Gpus(const Topology& topology, int count = 0) {
  std::vector<int> out;
  for (const DeviceInfo& d : topology.devices()) {
    if (d.kind != DeviceDef::GPU) continue;
    if (count > 0 && static_cast<int>(out.size()) == count) break;
    out.push_back(d.index);
  }
  return out;
}

TEST(GroupHardwareTest, DgxH100HasNvlinkSharp) {
  absl::StatusOr<Topology> t = BuiltinTopology("dgx_h100");
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<GroupHardware> hw = DescribeGroupHardware(*t, Gpus(*t));
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_EQ(hw->n, 8);
  EXPECT_EQ(hw->nodes, 1);
  EXPECT_EQ(hw->max_ranks_per_node, 8);
  EXPECT_EQ(hw->min_ranks_per_node, 8);
  EXPECT_EQ(hw->intra_link, IntraNodeLink::kNvlink);
  // 18 NVLinks of 25 GB/s; two hops of 250 ns through the NVSwitch.
  EXPECT_DOUBLE_EQ(hw->intra_bw_Bps, 450e9);
  EXPECT_DOUBLE_EQ(hw->intra_latency_us, 0.5);
  EXPECT_TRUE(hw->nvlink_sharp);
  EXPECT_TRUE(hw->all_gpus);
  EXPECT_EQ(hw->compute_capability, 90);
  EXPECT_DOUBLE_EQ(hw->memory_bw_Bps, 3.35e12);
  EXPECT_EQ(hw->rank_net_bw_Bps, 0);
  EXPECT_FALSE(hw->fabric_sharp);
}

TEST(GroupHardwareTest, DgxA100HasNoNvlinkSharp) {
  absl::StatusOr<Topology> t = BuiltinTopology("dgx_a100");
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<GroupHardware> hw = DescribeGroupHardware(*t, Gpus(*t));
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_DOUBLE_EQ(hw->intra_bw_Bps, 300e9);
  EXPECT_FALSE(hw->nvlink_sharp);
  EXPECT_EQ(hw->compute_capability, 80);
}

TEST(GroupHardwareTest, PcieMachine) {
  absl::StatusOr<Topology> t = BuiltinTopology("pcie_4gpu");
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<GroupHardware> hw = DescribeGroupHardware(*t, Gpus(*t));
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_EQ(hw->intra_link, IntraNodeLink::kPcie);
  EXPECT_NEAR(hw->intra_bw_Bps, 1.969e9 * 16, 1);
  EXPECT_DOUBLE_EQ(hw->intra_latency_us, 1.0);
  EXPECT_FALSE(hw->nvlink_sharp);
}

TEST(GroupHardwareTest, ClusterUsesEveryRailAndSeesSharp) {
  absl::StatusOr<Topology> t = BuiltinTopology("dgx_h100_cluster:2");
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<GroupHardware> hw = DescribeGroupHardware(*t, Gpus(*t));
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_EQ(hw->n, 16);
  EXPECT_EQ(hw->nodes, 2);
  EXPECT_EQ(hw->max_ranks_per_node, 8);
  // One NDR port per GPU: 50 GB/s per rank, 8 ports per node.
  EXPECT_DOUBLE_EQ(hw->rank_net_bw_Bps, 50e9);
  EXPECT_DOUBLE_EQ(hw->node_net_bw_Bps, 400e9);
  // gpu -> pcie -> nic -> leaf -> nic -> pcie -> gpu.
  EXPECT_NEAR(hw->net_latency_us, 4 * 0.5 + 2 * 0.6, 1e-9);
  EXPECT_TRUE(hw->fabric_sharp);
  EXPECT_TRUE(hw->nvlink_sharp);
}

TEST(GroupHardwareTest, UnevenGroupsAndSingleRanks) {
  absl::StatusOr<Topology> t = BuiltinTopology("dgx_h100_cluster:2");
  ASSERT_TRUE(t.ok()) << t.status();
  // 8 GPUs of node 0 and 2 of node 1.
  absl::StatusOr<GroupHardware> hw = DescribeGroupHardware(*t, Gpus(*t, 10));
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_EQ(hw->nodes, 2);
  EXPECT_EQ(hw->max_ranks_per_node, 8);
  EXPECT_EQ(hw->min_ranks_per_node, 2);
  // Node 1's two ranks leave through two ports.
  EXPECT_DOUBLE_EQ(hw->node_net_bw_Bps, 100e9);

  absl::StatusOr<GroupHardware> one = DescribeGroupHardware(*t, {Gpus(*t)[0]});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ(one->n, 1);
  EXPECT_EQ(one->intra_link, IntraNodeLink::kNone);
  EXPECT_EQ(one->intra_bw_Bps, 0);
}

TEST(GroupHardwareTest, CpusAreNotGpus) {
  absl::StatusOr<Topology> t = BuiltinTopology("dgx_h100");
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<int> devices = Gpus(*t, 2);
  devices.push_back(0);  // the CPU
  absl::StatusOr<GroupHardware> hw = DescribeGroupHardware(*t, devices);
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_FALSE(hw->all_gpus);
  EXPECT_EQ(hw->compute_capability, 0);  // the CPU has none
  EXPECT_EQ(hw->intra_link, IntraNodeLink::kPcie);
}

TEST(GroupHardwareTest, BadGroupsAreInvalidArguments) {
  absl::StatusOr<Topology> t = BuiltinTopology("dgx_h100");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(DescribeGroupHardware(*t, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DescribeGroupHardware(*t, {1, 99}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DescribeGroupHardware(*t, {-1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DescribeGroupHardware(*t, {1, 2, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GroupHardwareTest, DebugStringNamesTheLinks) {
  absl::StatusOr<Topology> t = BuiltinTopology("dgx_h100_cluster:2");
  ASSERT_TRUE(t.ok()) << t.status();
  absl::StatusOr<GroupHardware> hw = DescribeGroupHardware(*t, Gpus(*t));
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_EQ(hw->DebugString(),
            "16 ranks on 2 node(s) (8-8 per node); intra NVLink 450.0 GB/s "
            "0.50 us (NVLink SHARP); network 50.0 GB/s per rank, 400.0 GB/s "
            "per node, 3.20 us (SHARP)");
}

}  // namespace
}  // namespace simulator
