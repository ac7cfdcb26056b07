#include "simulator/builtin_topologies.h"

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/group_hardware.h"
#include "simulator/topology.h"

namespace simulator {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

struct Expected {
  const char* name;
  int64_t hosts;
  int64_t cpus;
  int64_t gpus;
  int64_t tpu_cores;
};

class BuiltinTest : public ::testing::TestWithParam<Expected> {};

TEST_P(BuiltinTest, LoadsWithTheExpectedDevices) {
  const Expected& expected = GetParam();
  absl::StatusOr<Topology> topology = BuiltinTopology(expected.name);
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->num_hosts(), expected.hosts);
  EXPECT_EQ(topology->CountDevices(DeviceDef::CPU), expected.cpus);
  EXPECT_EQ(topology->CountDevices(DeviceDef::GPU), expected.gpus);
  EXPECT_EQ(topology->CountDevices(DeviceDef::TPU_CORE), expected.tpu_cores);
  EXPECT_EQ(topology->name(), expected.name);
  // Every device has a usable spec and a unique TF name.
  std::set<std::string> names;
  for (const DeviceInfo& device : topology->devices()) {
    EXPECT_FALSE(device.spec.peak_flops().empty()) << device.name;
    EXPECT_GT(device.spec.memory_capacity_bytes(), 0) << device.name;
    EXPECT_TRUE(names.insert(topology->TfDeviceName(device.index)).second);
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, BuiltinTest,
    ::testing::Values(Expected{"laptop", 1, 1, 0, 0},
                      Expected{"pcie_4gpu", 1, 1, 4, 0},
                      Expected{"dgx_a100", 1, 1, 8, 0},
                      Expected{"dgx_h100", 1, 1, 8, 0},
                      Expected{"dgx_h100_cluster:1", 1, 1, 8, 0},
                      Expected{"dgx_h100_cluster:16", 16, 16, 128, 0},
                      Expected{"dgx_a100_cluster:3", 3, 3, 24, 0},
                      Expected{"tpu_v4:2x2x1", 1, 1, 0, 8},
                      Expected{"tpu_v4:4x4x4", 16, 16, 0, 128},
                      Expected{"tpu_v4:8x8x8", 128, 128, 0, 1024},
                      Expected{"tpu_v5e:2x4", 1, 1, 0, 8},
                      Expected{"tpu_v5e:16x16", 32, 32, 0, 256}),
    [](const ::testing::TestParamInfo<Expected>& info) {
      std::string name = info.param.name;
      for (char& c : name) {
        if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) c = '_';
      }
      return name;
    });

TEST(BuiltinTopologiesTest, DgxH100FiguresMatchTheDatasheets) {
  absl::StatusOr<Topology> dgx = BuiltinTopology("dgx_h100");
  ASSERT_TRUE(dgx.ok()) << dgx.status();
  EXPECT_EQ(dgx->source_name(), "simulator/topologies/dgx_h100.textproto");
  const DeviceInfo& gpu = dgx->device(*dgx->FindDevice(0, DeviceDef::GPU, 3));
  EXPECT_EQ(gpu.name, "gpu3");
  EXPECT_DOUBLE_EQ(gpu.spec.peak_flops().at("bfloat16"), 989.4e12);
  EXPECT_DOUBLE_EQ(gpu.spec.peak_flops().at("float32"), 67e12);
  EXPECT_DOUBLE_EQ(gpu.spec.memory_bandwidth_bytes_per_second(), 3.35e12);
  EXPECT_EQ(gpu.spec.memory_capacity_bytes(), int64_t{80} << 30);
  const int nvswitch = *dgx->FindNode("nvswitch");
  EXPECT_TRUE(dgx->HasInNetworkReduction(nvswitch));
  const Link& nvlink = dgx->link(dgx->LinkBetween(gpu.node, nvswitch));
  EXPECT_DOUBLE_EQ(nvlink.capacity_bytes_per_second, 450e9);
  const Link& nic = dgx->link(
      dgx->LinkBetween(*dgx->FindNode("nic3"), *dgx->FindNode("pcie3")));
  EXPECT_NEAR(nic.capacity_bytes_per_second, 63e9, 0.1e9);
  EXPECT_EQ(dgx->node(*dgx->FindNode("nic3")).paired_device, gpu.node);
}

TEST(BuiltinTopologiesTest, DgxA100FiguresMatchTheDatasheets) {
  absl::StatusOr<Topology> dgx = BuiltinTopology("dgx_a100");
  ASSERT_TRUE(dgx.ok()) << dgx.status();
  const DeviceInfo& gpu = dgx->device(*dgx->FindDevice(0, DeviceDef::GPU, 0));
  EXPECT_DOUBLE_EQ(gpu.spec.peak_flops().at("bfloat16"), 312e12);
  EXPECT_DOUBLE_EQ(gpu.spec.peak_flops().at("float32"), 19.5e12);
  EXPECT_DOUBLE_EQ(gpu.spec.peak_flops().at("tf32"), 156e12);
  EXPECT_DOUBLE_EQ(gpu.spec.memory_bandwidth_bytes_per_second(), 2.039e12);
  const int nvswitch = *dgx->FindNode("nvswitch");
  EXPECT_FALSE(dgx->HasInNetworkReduction(nvswitch));
  EXPECT_DOUBLE_EQ(
      dgx->link(dgx->LinkBetween(gpu.node, nvswitch)).capacity_bytes_per_second,
      300e9);
}

TEST(BuiltinTopologiesTest, ClusterPutsEachNodeOnItsOwnTask) {
  absl::StatusOr<Topology> cluster = BuiltinTopology("dgx_h100_cluster:16");
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const int gpu = *cluster->FindDevice(5, DeviceDef::GPU, 2);
  EXPECT_EQ(cluster->device(gpu).name, "node5/gpu2");
  EXPECT_EQ(cluster->TfDeviceName(gpu),
            "/job:worker/replica:0/task:5/device:GPU:2");
  // InfiniBand: uplinks picked by destination, as OpenSM's fat-tree routing.
  EXPECT_EQ(cluster->routing_policy(), RoutingDef::D_MOD_K);
  const int leaf = *cluster->FindNode("ib_leaf_r2_g0");
  EXPECT_EQ(cluster->node(leaf).switch_kind, SwitchDef::IB_LEAF);
  EXPECT_DOUBLE_EQ(
      cluster
          ->link(cluster->LinkBetween(*cluster->FindNode("node5/nic2"), leaf))
          .capacity_bytes_per_second,
      50e9);
}

TEST(BuiltinTopologiesTest, TpuFigures) {
  absl::StatusOr<Topology> v4 = BuiltinTopology("tpu_v4:4x4x4");
  ASSERT_TRUE(v4.ok()) << v4.status();
  const DeviceInfo& core =
      v4->device(*v4->FindDevice(3, DeviceDef::TPU_CORE, 5));
  EXPECT_DOUBLE_EQ(core.spec.peak_flops().at("bfloat16"), 137.5e12);
  EXPECT_EQ(core.spec.memory_capacity_bytes(), int64_t{16} << 30);
  EXPECT_EQ(v4->TfDeviceName(core.index),
            "/job:worker/replica:0/task:3/device:TPU:5");
  absl::StatusOr<Topology> v5e = BuiltinTopology("tpu_v5e:4x4");
  ASSERT_TRUE(v5e.ok()) << v5e.status();
  const DeviceInfo& chip =
      v5e->device(*v5e->FindDevice(1, DeviceDef::TPU_CORE, 0));
  EXPECT_DOUBLE_EQ(chip.spec.peak_flops().at("bfloat16"), 197e12);
  EXPECT_DOUBLE_EQ(chip.spec.memory_bandwidth_bytes_per_second(), 819e9);
}

TEST(BuiltinTopologiesTest, BadNames) {
  EXPECT_EQ(BuiltinTopology("dgx_h200").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(BuiltinTopology("nope").status().message()),
              HasSubstr("dgx_h100_cluster:N"));
  for (const char* bad :
       {"dgx_h100_cluster:0", "dgx_h100_cluster:x", "dgx_h100_cluster",
        "dgx_a100_cluster:20000", "tpu_v4:3x3x3", "tpu_v4:4x4", "tpu_v4:",
        "tpu_v4:4x4x0", "tpu_v5e:3x5", "tpu_v5e:32x32", "tpu_v5e:4"}) {
    EXPECT_EQ(BuiltinTopology(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(BuiltinTopologiesTest, ListNamesEveryBuiltin) {
  std::set<std::string> names;
  for (const BuiltinTopologyInfo& info : ListBuiltinTopologies()) {
    EXPECT_FALSE(info.description.empty()) << info.name;
    names.insert(info.name);
  }
  EXPECT_EQ(
      names,
      std::set<std::string>(
          {"laptop", "pcie_4gpu", "dgx_a100", "dgx_h100", "hgx_h200",
           "hgx_b200", "gb200_nvl72", "pcie_4gpu_nop2p", "pcie_8gpu_nop2p",
           "h100_pcie_nvlink_pair", "dgx_a100_cluster:N", "dgx_h100_cluster:N",
           "hgx_h200_cluster:N", "hgx_b200_cluster:N", "gb200_nvl72_cluster:N",
           "tpu_v4:XxYxZ", "tpu_v5e:XxY"}));
}

// The current generation and the machines of published measurements load,
// and the group descriptions see what their files state.
TEST(BuiltinTopologiesTest, NewHardwareDescribesAsBuilt) {
  struct Case {
    std::string name;
    int gpus;
    IntraNodeLink link;
    double intra_GBps;
    bool nvlink_sharp;
    bool through_host;
  };
  for (const Case& c : std::vector<Case>{
           {"hgx_h200", 8, IntraNodeLink::kNvlink, 450, true, false},
           {"hgx_b200", 8, IntraNodeLink::kNvlink, 900, true, false},
           {"gb200_nvl72", 72, IntraNodeLink::kNvlink, 900, true, false},
           {"h100_pcie_nvlink_pair", 2, IntraNodeLink::kNvlink, 300, false,
            false},
           {"pcie_8gpu_nop2p", 8, IntraNodeLink::kPcie, 31.5, false, true},
           {"pcie_4gpu", 4, IntraNodeLink::kPcie, 31.5, false, false}}) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<Topology> t = BuiltinTopology(c.name);
    ASSERT_TRUE(t.ok()) << t.status();
    std::vector<int> gpus;
    for (const DeviceInfo& d : t->devices()) {
      if (d.kind == DeviceDef::GPU) gpus.push_back(d.index);
    }
    ASSERT_EQ(static_cast<int>(gpus.size()), c.gpus);
    absl::StatusOr<GroupHardware> hw = DescribeGroupHardware(*t, gpus);
    ASSERT_TRUE(hw.ok()) << hw.status();
    EXPECT_EQ(hw->nodes, 1);
    EXPECT_EQ(hw->intra_link, c.link);
    EXPECT_NEAR(hw->intra_bw_Bps / 1e9, c.intra_GBps, 0.1);
    EXPECT_EQ(hw->nvlink_sharp, c.nvlink_sharp);
    EXPECT_EQ(hw->intra_through_host, c.through_host);
  }
}

// Cluster options: fewer NICs per node share the remaining ports, another
// port speed, and RoCE fabrics without SHARP.
TEST(BuiltinTopologiesTest, ClusterOptions) {
  auto describe = [](const std::string& name) {
    absl::StatusOr<Topology> t = BuiltinTopology(name);
    EXPECT_TRUE(t.ok()) << t.status();
    std::vector<int> gpus;
    for (const DeviceInfo& d : t->devices()) {
      if (d.kind == DeviceDef::GPU) gpus.push_back(d.index);
    }
    absl::StatusOr<GroupHardware> hw = DescribeGroupHardware(*t, gpus);
    EXPECT_TRUE(hw.ok()) << hw.status();
    return hw.ok() ? *hw : GroupHardware{};
  };
  const GroupHardware ib = describe("dgx_h100_cluster:2");
  EXPECT_NEAR(ib.node_net_bw_Bps, 400e9, 1);
  EXPECT_TRUE(ib.fabric_sharp);
  const GroupHardware four = describe("dgx_h100_cluster:2,nics=4");
  EXPECT_NEAR(four.node_net_bw_Bps, 200e9, 1);
  const GroupHardware slow = describe("dgx_a100_cluster:2,nics=4,nic_gbps=100");
  EXPECT_NEAR(slow.node_net_bw_Bps, 50e9, 1);
  const GroupHardware roce = describe("dgx_h100_cluster:4,fabric=roce");
  EXPECT_NEAR(roce.node_net_bw_Bps, 400e9, 1);
  EXPECT_FALSE(roce.fabric_sharp);
  EXPECT_EQ(describe("hgx_b200_cluster:2").n, 16);
  // AWS p5: 32 x 100 Gb/s EFA ports for 8 GPUs, 4 beside each GPU.
  const GroupHardware p5 =
      describe("dgx_h100_cluster:2,nics=32,nic_gbps=100,fabric=efa");
  EXPECT_NEAR(p5.node_net_bw_Bps, 400e9, 1);
  EXPECT_FALSE(p5.fabric_sharp);
  EXPECT_GT(p5.net_latency_us, ib.net_latency_us);

  for (const std::string bad :
       {"dgx_h100_cluster:2,nics=3", "dgx_h100_cluster:2,nics=0",
        "dgx_h100_cluster:2,fabric=ethernet", "dgx_h100_cluster:2,speed=1",
        "dgx_h100_cluster:2,nic_gbps=-5", "hgx_h200_cluster:0"}) {
    SCOPED_TRACE(bad);
    absl::StatusOr<Topology> t = BuiltinTopology(bad);
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(t.status().message()),
                ::testing::AnyOf(HasSubstr("nics=K"), HasSubstr("divides 8")));
  }
}

TEST(BuiltinTopologiesTest, ThreeLevelClusters) {
  auto def = [](const std::string& name) {
    absl::StatusOr<TopologyDef> d = BuiltinTopologyDef(name);
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *d : TopologyDef();
  };
  // Two levels up to 4096 nodes, three beyond (pods of 128 DGX H100: four
  // leaf groups of 32 nodes fill half of a 64-port spine with 8 rails).
  EXPECT_THAT(def("dgx_h100_cluster:4096").description(),
              Not(HasSubstr("three-level")));
  EXPECT_THAT(def("dgx_h100_cluster:4097").description(),
              HasSubstr("33 pods of 128 nodes"));
  EXPECT_THAT(def("dgx_h100_cluster:256,levels=3").description(),
              HasSubstr("2 pods of 128 nodes, 32 spines each; 1024 cores"));
  EXPECT_THAT(def("dgx_h100_cluster:256,pod=64").description(),
              HasSubstr("4 pods of 64 nodes"));
  // A group spread over pods still sees each node's 8 ports.
  absl::StatusOr<Topology> t = BuiltinTopology("dgx_h100_cluster:4,pod=32");
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<int> gpus;
  for (const DeviceInfo& d : t->devices()) {
    if (d.kind == DeviceDef::GPU) gpus.push_back(d.index);
  }
  absl::StatusOr<GroupHardware> hw = DescribeGroupHardware(*t, gpus);
  ASSERT_TRUE(hw.ok()) << hw.status();
  EXPECT_NEAR(hw->node_net_bw_Bps, 400e9, 1);
  for (const std::string bad :
       {"dgx_h100_cluster:16385", "dgx_h100_cluster:5000,levels=2",
        "dgx_h100_cluster:64,levels=4", "dgx_h100_cluster:64,pod=48",
        "dgx_h100_cluster:64,levels=2,pod=32"}) {
    SCOPED_TRACE(bad);
    EXPECT_EQ(BuiltinTopology(bad).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(BuiltinTopologiesTest, DeviceSpecPresets) {
  absl::StatusOr<DeviceSpec> h100 = DeviceSpecPreset("h100_sxm5_80gb");
  ASSERT_TRUE(h100.ok()) << h100.status();
  EXPECT_DOUBLE_EQ(h100->peak_flops().at("bfloat16"), 989.4e12);
  absl::StatusOr<DeviceSpec> missing = DeviceSpecPreset("v100");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(missing.status().message()),
              HasSubstr("a100_sxm4_80gb"));
  EXPECT_THAT(DeviceSpecPresetNames(),
              ::testing::IsSupersetOf({"a100_sxm4_80gb", "a100_pcie_80gb",
                                       "h100_sxm5_80gb", "xeon_8480c_x2",
                                       "epyc_7742_x2"}));
}

}  // namespace
}  // namespace simulator
