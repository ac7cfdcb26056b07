#include "simulator/topology.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace simulator {
namespace {

using ::testing::HasSubstr;

constexpr char kSpec[] = R"pb(
device_specs {
  name: "gpu_spec"
  spec {
    peak_flops { key: "float32" value: 1e12 }
    memory_bandwidth_bytes_per_second: 1e12
    memory_capacity_bytes: 1000000
    launch_overhead_ns: 1000
  }
}
)pb";

// 1-based line of the first line of `text` containing `needle`.
int LineOf(const std::string& text, const std::string& needle) {
  int line = 1;
  for (absl::string_view row : absl::StrSplit(text, '\n')) {
    if (absl::StrContains(row, needle)) return line;
    ++line;
  }
  ADD_FAILURE() << "no line contains " << needle;
  return -1;
}

// Expects INVALID_ARGUMENT whose message starts "t.textproto:<line of
// needle>:" and contains `problem`.
void ExpectErrorAt(const std::string& text, const std::string& needle,
                   const std::string& problem) {
  absl::StatusOr<Topology> topology =
      Topology::FromTextProto(text, "t.textproto");
  ASSERT_EQ(topology.status().code(), absl::StatusCode::kInvalidArgument)
      << topology.status();
  EXPECT_THAT(std::string(topology.status().message()),
              HasSubstr(absl::StrCat("t.textproto:", LineOf(text, needle),
                                     ":")));
  EXPECT_THAT(std::string(topology.status().message()), HasSubstr(problem));
}

std::string TwoGpus(const std::string& link) {
  return absl::StrCat(R"pb(name: "two"
hosts { name: "h0" }
)pb",
                      kSpec, R"pb(
devices { name: "gpu0" kind: GPU host: "h0" spec_name: "gpu_spec" }
devices { name: "gpu1" kind: GPU host: "h0" spec_name: "gpu_spec" }
)pb",
                      link);
}

constexpr char kGoodLink[] =
    "links { a: \"gpu0\" b: \"gpu1\" kind: NVLINK\n"
    "        bandwidth_bytes_per_second: 25e9 count: 12 latency_ns: 250.5 }\n";

TEST(TopologyTest, BuildsNodesAndDirectedLinks) {
  absl::StatusOr<Topology> topology =
      Topology::FromTextProto(TwoGpus(kGoodLink), "t.textproto");
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->name(), "two");
  ASSERT_EQ(topology->num_nodes(), 2);
  ASSERT_EQ(topology->num_links(), 2);
  const Link& forward = topology->link(0);
  const Link& backward = topology->link(1);
  EXPECT_EQ(forward.src, 0);
  EXPECT_EQ(forward.dst, 1);
  EXPECT_EQ(backward.src, 1);
  EXPECT_EQ(backward.dst, 0);
  EXPECT_EQ(forward.reverse, 1);
  EXPECT_EQ(backward.reverse, 0);
  EXPECT_EQ(forward.name, "gpu0->gpu1");
  EXPECT_DOUBLE_EQ(forward.capacity_bytes_per_second, 300e9);
  EXPECT_EQ(forward.latency_ps, 250500);
  EXPECT_EQ(forward.kind, LinkDef::NVLINK);
  EXPECT_EQ(topology->LinkBetween(0, 1), 0);
  EXPECT_EQ(topology->LinkBetween(1, 0), 1);
  EXPECT_THAT(topology->out_links(0), ::testing::ElementsAre(0));
  EXPECT_THAT(topology->in_links(0), ::testing::ElementsAre(1));
  EXPECT_EQ(*topology->FindNode("gpu1"), 1);
  EXPECT_EQ(topology->FindNode("gpu7").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_DOUBLE_EQ(topology->device(1).spec.peak_flops().at("float32"), 1e12);
  EXPECT_EQ(topology->routing_policy(), RoutingDef::SHORTEST_PATH);
}

TEST(TopologyTest, OrdersDevicesByHostThenKindAndNamesThem) {
  const std::string text = absl::StrCat(R"pb(
hosts { name: "a" }
hosts { name: "b" }
)pb",
                                        kSpec, R"pb(
devices { name: "b_gpu" kind: GPU host: "b" spec_name: "gpu_spec" }
devices { name: "b_cpu" kind: CPU host: "b" spec_name: "gpu_spec" }
devices { name: "a_gpu0" kind: GPU host: "a" spec_name: "gpu_spec" }
devices { name: "a_gpu1" kind: GPU host: "a" spec_name: "gpu_spec" }
switches { name: "sw" kind: ETHERNET_SWITCH }
links { a: "b_gpu" b: "sw" kind: ETHERNET bandwidth_bytes_per_second: 1e9 }
links { a: "b_cpu" b: "sw" kind: ETHERNET bandwidth_bytes_per_second: 1e9 }
links { a: "a_gpu0" b: "sw" kind: ETHERNET bandwidth_bytes_per_second: 1e9 }
links { a: "a_gpu1" b: "sw" kind: ETHERNET bandwidth_bytes_per_second: 1e9 }
)pb");
  absl::StatusOr<Topology> topology =
      Topology::FromTextProto(text, "t.textproto");
  ASSERT_TRUE(topology.ok()) << topology.status();
  ASSERT_EQ(topology->num_devices(), 4);
  EXPECT_EQ(topology->device(0).name, "a_gpu0");
  EXPECT_EQ(topology->device(1).name, "a_gpu1");
  EXPECT_EQ(topology->device(2).name, "b_cpu");
  EXPECT_EQ(topology->device(3).name, "b_gpu");
  EXPECT_EQ(topology->TfDeviceName(1), "/job:worker/replica:0/task:0/device:GPU:1");
  EXPECT_EQ(topology->TfDeviceName(2), "/job:worker/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(topology->TfDeviceName(3, "trainer"),
            "/job:trainer/replica:0/task:1/device:GPU:0");
  for (const DeviceInfo& device : topology->devices()) {
    EXPECT_EQ(topology->node(device.node).device, device.index);
  }
  EXPECT_EQ(*topology->FindDevice(1, DeviceDef::GPU, 0), 3);
  EXPECT_EQ(topology->FindDevice(1, DeviceDef::GPU, 1).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(topology->CountDevices(DeviceDef::GPU), 3);
  EXPECT_EQ(topology->node(*topology->FindNode("sw")).host, -1);
}

TEST(TopologyTest, SyntaxErrorNamesTheLine) {
  const std::string text = TwoGpus(kGoodLink) + "links { a: \"gpu0\" b: }\n";
  ExpectErrorAt(text, "links { a: \"gpu0\" b: }", "Expected string");
}

TEST(TopologyTest, UnknownEnumValueIsASyntaxError) {
  const std::string text = absl::StrCat(
      TwoGpus(kGoodLink), "devices { name: \"x\" kind: BANANA host: \"h0\" }\n");
  ExpectErrorAt(text, "BANANA", "BANANA");
}

TEST(TopologyTest, UnknownEndpointNamesTheLine) {
  const std::string text = TwoGpus(
      "links { a: \"gpu0\"\n"
      "        b: \"gpu9\" kind: NVLINK bandwidth_bytes_per_second: 1e9 }\n");
  ExpectErrorAt(text, "b: \"gpu9\"", "'gpu9' is not a device, switch or NIC");
}

TEST(TopologyTest, DisconnectedGraphNamesUnreachableDevices) {
  const std::string text = TwoGpus("");
  ExpectErrorAt(text, "name: \"gpu1\"",
                "device 'gpu1' cannot be reached from device 'gpu0'");
}

TEST(TopologyTest, ZeroBandwidthNamesTheLine) {
  const std::string text = TwoGpus(
      "links { a: \"gpu0\" b: \"gpu1\" kind: NVLINK\n"
      "        bandwidth_bytes_per_second: 0 }\n");
  ExpectErrorAt(text, "bandwidth_bytes_per_second: 0",
                "bandwidth_bytes_per_second = 0");
}

TEST(TopologyTest, MissingBandwidthNamesTheLink) {
  const std::string text = TwoGpus(
      "links { a: \"gpu0\" b: \"gpu1\" kind: NVLINK latency_ns: 5 }\n");
  ExpectErrorAt(text, "latency_ns: 5", "must be at least 1e3");
}

TEST(TopologyTest, NegativeLatencyNamesTheLine) {
  const std::string text = TwoGpus(
      "links { a: \"gpu0\" b: \"gpu1\" kind: NVLINK\n"
      "        bandwidth_bytes_per_second: 1e9\n"
      "        latency_ns: -3 }\n");
  ExpectErrorAt(text, "latency_ns: -3", "latency_ns = -3");
}

TEST(TopologyTest, DuplicateNameNamesBothLines) {
  const std::string text =
      absl::StrCat(TwoGpus(kGoodLink),
                   "switches { name: \"gpu1\" kind: NVSWITCH }\n");
  absl::StatusOr<Topology> topology =
      Topology::FromTextProto(text, "t.textproto");
  ExpectErrorAt(text, "switches { name: \"gpu1\"", "duplicate name 'gpu1'");
  EXPECT_THAT(std::string(topology.status().message()),
              HasSubstr(absl::StrCat("at line ",
                                     LineOf(text, "name: \"gpu1\" kind: GPU"))));
}

TEST(TopologyTest, MissingSpecNamesTheDevice) {
  const std::string text = absl::StrCat(
      TwoGpus(kGoodLink), "devices { name: \"cpu\" kind: CPU host: \"h0\" }\n",
      "links { a: \"cpu\" b: \"gpu0\" kind: PCIE "
      "bandwidth_bytes_per_second: 1e9 }\n");
  ExpectErrorAt(text, "name: \"cpu\"", "device 'cpu' has no spec");
}

TEST(TopologyTest, UnknownSpecNameAndHost) {
  ExpectErrorAt(absl::StrCat(TwoGpus(kGoodLink),
                             "devices { name: \"g2\" kind: GPU host: \"h0\"\n"
                             "  spec_name: \"nope\" }\n"),
                "spec_name: \"nope\"", "unknown spec 'nope'");
  ExpectErrorAt(absl::StrCat(TwoGpus(kGoodLink),
                             "devices { name: \"g2\" kind: GPU\n"
                             "  host: \"h9\" spec_name: \"gpu_spec\" }\n"),
                "host: \"h9\"", "unknown host 'h9'");
}

TEST(TopologyTest, BadSpecValuesNameTheSpec) {
  const std::string text = absl::StrCat(R"pb(hosts { name: "h0" }
devices {
  name: "gpu0" kind: GPU host: "h0"
  spec {
    peak_flops { key: "fp32" value: 1e12 }
    memory_bandwidth_bytes_per_second: 1e12
    memory_capacity_bytes: 1
  }
}
)pb");
  ExpectErrorAt(text, "spec {", "unknown dtype 'fp32'");
  const std::string no_memory = absl::StrCat(R"pb(hosts { name: "h0" }
devices {
  name: "gpu0" kind: GPU host: "h0"
  spec {
    peak_flops { key: "float32" value: 1e12 }
    memory_bandwidth_bytes_per_second: 1e12
  }
}
)pb");
  ExpectErrorAt(no_memory, "spec {", "memory_capacity_bytes = 0");
}

TEST(TopologyTest, NoDevicesIsAnError) {
  absl::StatusOr<Topology> topology =
      Topology::FromTextProto("hosts { name: \"h\" }", "empty.textproto");
  EXPECT_EQ(topology.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(topology.status().message()),
              HasSubstr("empty.textproto: the topology has no devices"));
}

TEST(TopologyTest, DevicesDoNotForwardTraffic) {
  // gpu0 - gpu1 - gpu2: gpu0 and gpu2 meet only through gpu1.
  const std::string text = absl::StrCat(
      TwoGpus(kGoodLink),
      "devices { name: \"gpu2\" kind: GPU host: \"h0\" spec_name: "
      "\"gpu_spec\" }\n",
      "links { a: \"gpu1\" b: \"gpu2\" kind: NVLINK "
      "bandwidth_bytes_per_second: 1e9 }\n");
  ExpectErrorAt(text, "name: \"gpu0\"",
                "device 'gpu0' cannot reach device 'gpu2'");
}

TEST(TopologyTest, InNetworkReductionIsPerSwitch) {
  const std::string text = absl::StrCat(
      TwoGpus(""),
      "switches { name: \"nvs\" kind: NVSWITCH in_network_reduction: true }\n"
      "switches { name: \"pcie\" kind: PCIE_SWITCH }\n"
      "links { a: \"gpu0\" b: \"nvs\" kind: NVSWITCH "
      "bandwidth_bytes_per_second: 1e9 }\n"
      "links { a: \"gpu1\" b: \"nvs\" kind: NVSWITCH "
      "bandwidth_bytes_per_second: 1e9 }\n"
      "links { a: \"gpu1\" b: \"pcie\" kind: PCIE "
      "bandwidth_bytes_per_second: 1e9 }\n");
  absl::StatusOr<Topology> topology =
      Topology::FromTextProto(text, "t.textproto");
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_TRUE(topology->HasInNetworkReduction(*topology->FindNode("nvs")));
  EXPECT_FALSE(topology->HasInNetworkReduction(*topology->FindNode("pcie")));
  EXPECT_FALSE(topology->HasInNetworkReduction(*topology->FindNode("gpu0")));
  EXPECT_FALSE(topology->HasInNetworkReduction(-1));
}

TEST(TopologyTest, NicPairingAndParallelLinkNames) {
  const std::string text = absl::StrCat(
      TwoGpus(kGoodLink), kGoodLink,
      "nics { name: \"nic0\" host: \"h0\" device: \"gpu0\" }\n"
      "links { a: \"nic0\" b: \"gpu0\" kind: PCIE "
      "bandwidth_bytes_per_second: 1e9 }\n");
  absl::StatusOr<Topology> topology =
      Topology::FromTextProto(text, "t.textproto");
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->node(*topology->FindNode("nic0")).paired_device,
            *topology->FindNode("gpu0"));
  EXPECT_EQ(topology->link(2).name, "gpu0->gpu1 #2");
  ExpectErrorAt(absl::StrCat(TwoGpus(kGoodLink),
                             "nics { name: \"nic0\" host: \"h0\"\n"
                             "  device: \"gpu7\" }\n"),
                "device: \"gpu7\"", "unknown device 'gpu7'");
}

constexpr char kMesh[] = R"pb(hosts { name: "h0" }
device_specs {
  name: "core"
  spec {
    peak_flops { key: "bfloat16" value: 1e12 }
    memory_bandwidth_bytes_per_second: 1e12
    memory_capacity_bytes: 1000
  }
}
mesh { x: 3 y: 1 z: 1 wrap_x: true cores_per_chip: 1 }
routing { policy: DIMENSION_ORDER }
devices { name: "c0" kind: TPU_CORE host: "h0" spec_name: "core"
          coordinates { x: 0 } }
devices { name: "c1" kind: TPU_CORE host: "h0" spec_name: "core"
          coordinates { x: 1 } }
devices { name: "c2" kind: TPU_CORE host: "h0" spec_name: "core"
          coordinates { x: 2 } }
switches { name: "r0" kind: ICI_ROUTER coordinates { x: 0 } }
switches { name: "r1" kind: ICI_ROUTER coordinates { x: 1 } }
switches { name: "r2" kind: ICI_ROUTER coordinates { x: 2 } }
links { a: "c0" b: "r0" kind: ON_CHIP bandwidth_bytes_per_second: 1e12 }
links { a: "c1" b: "r1" kind: ON_CHIP bandwidth_bytes_per_second: 1e12 }
links { a: "c2" b: "r2" kind: ON_CHIP bandwidth_bytes_per_second: 1e12 }
links { a: "r0" b: "r1" kind: ICI bandwidth_bytes_per_second: 5e10 }
links { a: "r1" b: "r2" kind: ICI bandwidth_bytes_per_second: 5e10 }
)pb";

TEST(TopologyTest, MeshWithWraparoundNeedsTheWrapLink) {
  // Without r2 <-> r0 dimension-order routing cannot wrap around x.
  ExpectErrorAt(kMesh, "name: \"r0\"",
                "has no link to its -x neighbour 'r2'");
  const std::string text =
      absl::StrCat(kMesh,
                   "links { a: \"r2\" b: \"r0\" kind: ICI "
                   "bandwidth_bytes_per_second: 5e10 }\n");
  absl::StatusOr<Topology> topology =
      Topology::FromTextProto(text, "t.textproto");
  ASSERT_TRUE(topology.ok()) << topology.status();
  ASSERT_TRUE(topology->mesh().has_value());
  EXPECT_EQ(topology->mesh()->x, 3);
  EXPECT_TRUE(topology->mesh()->Wraps(0));
  EXPECT_EQ(topology->MeshRouter(2, 0, 0), *topology->FindNode("r2"));
  EXPECT_EQ(topology->MeshRouter(3, 0, 0), -1);
  EXPECT_EQ(topology->device(1).coordinates->x, 1);
  EXPECT_EQ(topology->TfDeviceName(2), "/job:worker/replica:0/task:0/device:TPU:2");
}

TEST(TopologyTest, MeshCoordinatesAreChecked) {
  std::string text = kMesh;
  text.replace(text.find("coordinates { x: 2 } }"), 22,
               "coordinates { x: 5 } }");
  ExpectErrorAt(text, "coordinates { x: 5 }", "outside the 3x1x1 mesh");
  std::string wrap = kMesh;
  wrap.replace(wrap.find("x: 3 y: 1"), 4, "x: 2");
  ExpectErrorAt(wrap, "wrap_x: true", "wraparound needs more than 2 chips");
  // Axes whose product would overflow (2^21 * 2^21 * 2^22 = 2^64) are
  // refused axis by axis instead of crashing.
  std::string huge = kMesh;
  const std::string shape = "x: 3 y: 1 z: 1 wrap_x: true";
  huge.replace(huge.find(shape), shape.size(),
               "x: 2097152 y: 2097152 z: 4194304");
  ExpectErrorAt(huge, "x: 2097152", "mesh x = 2097152; at most 1048576");
}

TEST(TopologyTest, LaunchOverheadIsBounded) {
  std::string text = TwoGpus(kGoodLink);
  text.replace(text.find("launch_overhead_ns: 1000"), 24,
               "launch_overhead_ns: 9223372036854776");
  absl::StatusOr<Topology> topology =
      Topology::FromTextProto(text, "t.textproto");
  ASSERT_EQ(topology.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(topology.status().message()),
              HasSubstr("launch_overhead_ns = 9223372036854776; it must be "
                        "between 0 and 1e9 nanoseconds"));
}

TEST(TopologyTest, FromFileReadsAndReportsTheFileName) {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path =
      absl::StrCat(dir != nullptr ? dir : "/tmp", "/two_gpus.textproto");
  {
    std::ofstream file(path);
    file << TwoGpus(kGoodLink);
  }
  absl::StatusOr<Topology> topology = Topology::FromFile(path);
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->source_name(), path);
  EXPECT_EQ(topology->num_devices(), 2);
  EXPECT_EQ(Topology::FromFile(path + ".missing").status().code(),
            absl::StatusCode::kNotFound);
  std::remove(path.c_str());
}

TEST(TopologyTest, FromDefErrorsNameTheSource) {
  TopologyDef def;
  def.add_hosts()->set_name("h");
  DeviceDef* device = def.add_devices();
  device->set_name("gpu");
  device->set_kind(DeviceDef::GPU);
  device->set_host("h");
  absl::StatusOr<Topology> topology = Topology::FromDef(def, "generated");
  EXPECT_EQ(topology.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(topology.status().message()),
              HasSubstr("generated: device 'gpu' has no spec"));
}

}  // namespace
}  // namespace simulator
