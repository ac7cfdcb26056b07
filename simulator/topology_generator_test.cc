#include "simulator/topology_generator.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "devices/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/routing.h"
#include "simulator/topology.h"

namespace simulator {
namespace {

absl::StatusOr<Topology> Load(const GeneratorOptions& options) {
  ASSIGN_OR_RETURN(TopologyDef def, GenerateTopology(options));
  // What the user saves must load back.
  return Topology::FromTextProto(ToTextProto(def), "generated.textproto");
}

std::vector<std::string> Hops(const Topology& topology, const std::string& src,
                              const std::string& dst) {
  Router router(topology);
  const int from = *topology.FindNode(src);
  absl::StatusOr<std::vector<int>> route =
      router.Route(from, *topology.FindNode(dst));
  EXPECT_TRUE(route.ok()) << route.status();
  std::vector<std::string> names = {src};
  if (!route.ok()) return names;
  for (int id : *route)
    names.push_back(topology.node(topology.link(id).dst).name);
  return names;
}

TEST(TopologyGeneratorTest, DefaultsAreOneNvSwitchNode) {
  absl::StatusOr<Topology> topology = Load(GeneratorOptions());
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->num_hosts(), 1);
  EXPECT_EQ(topology->CountDevices(DeviceDef::GPU), 8);
  EXPECT_EQ(topology->CountDevices(DeviceDef::CPU), 1);
  EXPECT_DOUBLE_EQ(topology->device(1).spec.peak_flops().at("bfloat16"),
                   989.4e12);
  EXPECT_THAT(Hops(*topology, "gpu0", "gpu6"),
              ::testing::ElementsAre("gpu0", "nvswitch", "gpu6"));
}

TEST(TopologyGeneratorTest, MultiNodeClusterFromFlags) {
  GeneratorOptions options;
  options.name = "mine";
  options.nodes = 3;
  options.gpus_per_node = 4;
  options.nics_per_node = 2;
  options.nic_gbit_per_second = 200;
  options.gpu_preset = "a100_sxm4_80gb";
  options.cpu_preset = "epyc_7742_x2";
  absl::StatusOr<Topology> topology = Load(options);
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->name(), "mine");
  EXPECT_EQ(topology->num_hosts(), 3);
  EXPECT_EQ(topology->CountDevices(DeviceDef::GPU), 12);
  // GPUs 2 and 3 share NIC 1 (rail 1).
  EXPECT_THAT(Hops(*topology, "node0/gpu3", "node2/gpu3"),
              ::testing::ElementsAre("node0/gpu3", "node0/pcie1", "node0/nic1",
                                     "ib_leaf_r1_g0", "node2/nic1",
                                     "node2/pcie1", "node2/gpu3"));
  const Link& port = topology->link(topology->LinkBetween(
      *topology->FindNode("node1/nic0"), *topology->FindNode("ib_leaf_r0_g0")));
  EXPECT_DOUBLE_EQ(port.capacity_bytes_per_second, 25e9);
}

TEST(TopologyGeneratorTest, NvLinkMeshAndPcieOnly) {
  GeneratorOptions mesh;
  mesh.gpus_per_node = 4;
  mesh.intra_node_link = LinkDef::NVLINK;
  mesh.intra_node_bandwidth_bytes_per_second = 100e9;
  absl::StatusOr<Topology> meshed = Load(mesh);
  ASSERT_TRUE(meshed.ok()) << meshed.status();
  EXPECT_THAT(Hops(*meshed, "gpu1", "gpu3"),
              ::testing::ElementsAre("gpu1", "gpu3"));
  GeneratorOptions pcie;
  pcie.gpus_per_node = 4;
  pcie.nics_per_node = 2;
  pcie.intra_node_link = LinkDef::PCIE;
  absl::StatusOr<Topology> plain = Load(pcie);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_THAT(Hops(*plain, "gpu0", "gpu1"),
              ::testing::ElementsAre("gpu0", "pcie0", "gpu1"));
  EXPECT_THAT(
      Hops(*plain, "gpu0", "gpu3"),
      ::testing::ElementsAre("gpu0", "pcie0", "pcie_root", "pcie1", "gpu3"));
}

TEST(TopologyGeneratorTest, RejectsBadOptions) {
  GeneratorOptions options;
  options.nodes = 0;
  EXPECT_EQ(GenerateTopology(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = GeneratorOptions();
  options.nodes = 2;
  options.nics_per_node = 0;
  EXPECT_EQ(GenerateTopology(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = GeneratorOptions();
  options.intra_node_link = LinkDef::ICI;
  EXPECT_EQ(GenerateTopology(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = GeneratorOptions();
  options.intra_node_bandwidth_bytes_per_second = 0;
  EXPECT_EQ(GenerateTopology(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options = GeneratorOptions();
  options.gpu_preset = "v100";
  EXPECT_EQ(GenerateTopology(options).status().code(),
            absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace simulator
