#include "devices/tpu_topology.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "devices/tpu_topology.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace devices {
namespace {

using ::testing::HasSubstr;

// Two tasks of a 2x1x1 mesh of 2-core chips, each task holding one chip.
absl::StatusOr<TpuTopology> TwoTasks() {
  std::vector<TpuTopology::Task> tasks(2);
  for (int t = 0; t < 2; ++t) {
    const std::string prefix =
        "/job:worker/replica:0/task:" + std::to_string(t);
    tasks[t].cpu_device = prefix + "/device:CPU:0";
    for (int core = 0; core < 2; ++core) {
      tasks[t].tpus.push_back({TpuCoordinates{t, 0, 0, core},
                               prefix + "/device:TPU:" + std::to_string(core)});
    }
  }
  return TpuTopology::Create({2, 1, 1, 2}, std::move(tasks));
}

TEST(TpuTopologyTest, SerializesAsTensorFlowsTopologyProto) {
  absl::StatusOr<TpuTopology> topology = TwoTasks();
  ASSERT_TRUE(topology.ok()) << topology.status();
  // TF's encoding, field by field (proto3 packs the repeated int32s):
  // mesh_shape = [2, 1, 1, 2], num_tasks = 2, num_tpu_devices_per_task = 2,
  // device_coordinates = [0,0,0,0, 0,0,0,1, 1,0,0,0, 1,0,0,1].
  const std::string expected(
      "\x0a\x04\x02\x01\x01\x02"
      "\x10\x02"
      "\x18\x02"
      "\x22\x10\x00\x00\x00\x00\x00\x00\x00\x01\x01\x00\x00\x00\x01\x00\x00"
      "\x01",
      28);
  EXPECT_EQ(topology->Serialized(), expected);
}

TEST(TpuTopologyTest, ReadsBackWhatItWrites) {
  absl::StatusOr<TpuTopology> topology = TwoTasks();
  ASSERT_TRUE(topology.ok()) << topology.status();
  absl::StatusOr<TpuTopology> back =
      TpuTopology::FromSerialized(topology->Serialized());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->mesh_shape(), topology->mesh_shape());
  EXPECT_EQ(back->num_tasks(), 2);
  EXPECT_EQ(back->num_tpus_per_task(), 2);
  EXPECT_EQ(back->Serialized(), topology->Serialized());
  // Names follow TF's scheme for the job asked for.
  EXPECT_EQ(*back->TpuDeviceNameAtCoordinates({1, 0, 0, 1}),
            "/job:worker/replica:0/task:1/device:TPU:1");
  absl::StatusOr<TpuTopology> tpu_job =
      TpuTopology::FromSerialized(topology->Serialized(), "tpu_worker");
  ASSERT_TRUE(tpu_job.ok()) << tpu_job.status();
  EXPECT_EQ(*tpu_job->CpuDeviceNameAtCoordinates({1, 0, 0, 0}),
            "/job:tpu_worker/replica:0/task:1/device:CPU:0");
}

TEST(TpuTopologyTest, ADegradedSliceKeepsItsMissingPlaces) {
  TpuTopologyProto proto;
  for (int axis : {2, 2, 1, 1}) proto.add_mesh_shape(axis);
  proto.set_num_tasks(1);
  proto.set_num_tpu_devices_per_task(3);
  for (int c : {0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0})
    proto.add_device_coordinates(c);
  absl::StatusOr<TpuTopology> topology =
      TpuTopology::FromSerialized(proto.SerializeAsString());
  ASSERT_TRUE(topology.ok()) << topology.status();
  ASSERT_EQ(topology->missing_devices().size(), 1u);
  EXPECT_EQ(topology->missing_devices()[0], (TpuCoordinates{1, 1, 0, 0}));
  EXPECT_EQ(topology->TaskOrdinalAtCoordinates({1, 1, 0, 0}).status().code(),
            absl::StatusCode::kNotFound);
}

// The serialized form of `proto` must be refused, naming `why`.
void ExpectRefused(const TpuTopologyProto& proto, const std::string& why) {
  absl::StatusOr<TpuTopology> topology =
      TpuTopology::FromSerialized(proto.SerializeAsString());
  EXPECT_EQ(topology.status().code(), absl::StatusCode::kInvalidArgument)
      << topology.status();
  EXPECT_THAT(std::string(topology.status().message()), HasSubstr(why));
}

TpuTopologyProto OneChip() {
  TpuTopologyProto proto;
  for (int axis : {1, 1, 1, 2}) proto.add_mesh_shape(axis);
  proto.set_num_tasks(1);
  proto.set_num_tpu_devices_per_task(2);
  for (int c : {0, 0, 0, 0, 0, 0, 0, 1}) proto.add_device_coordinates(c);
  return proto;
}

TEST(TpuTopologyTest, MalformedSerializedTopologiesAreRefused) {
  ASSERT_TRUE(TpuTopology::FromSerialized(OneChip().SerializeAsString()).ok());
  EXPECT_EQ(TpuTopology::FromSerialized("\xff\xff\xff").status().code(),
            absl::StatusCode::kInvalidArgument);

  TpuTopologyProto three_axes = OneChip();
  three_axes.mutable_mesh_shape()->RemoveLast();
  ExpectRefused(three_axes, "mesh of 3 axes");

  TpuTopologyProto no_tasks = OneChip();
  no_tasks.set_num_tasks(0);
  ExpectRefused(no_tasks, "0 tasks");

  TpuTopologyProto short_coordinates = OneChip();
  short_coordinates.mutable_device_coordinates()->RemoveLast();
  ExpectRefused(short_coordinates, "7 device coordinates");

  // Counts whose product overflows 32 bits, or 64 bits times 4 axes, are
  // compared exactly (a fuzzer found the second).
  TpuTopologyProto huge_counts = OneChip();
  huge_counts.set_num_tasks(1 << 30);
  huge_counts.set_num_tpu_devices_per_task(1 << 30);
  ExpectRefused(huge_counts, "= 1152921504606846976 devices");
  huge_counts.set_num_tasks(2147483647);
  huge_counts.set_num_tpu_devices_per_task(2147483647);
  ExpectRefused(huge_counts, "= 4611686014132420609 devices");

  TpuTopologyProto outside = OneChip();
  outside.set_device_coordinates(7, 2);
  ExpectRefused(outside, "outside the mesh");

  TpuTopologyProto twice = OneChip();
  twice.set_device_coordinates(7, 0);
  ExpectRefused(twice, "two TPU devices are at (0, 0, 0, 0)");

  TpuTopologyProto negative_axis = OneChip();
  negative_axis.set_mesh_shape(2, -1);
  ExpectRefused(negative_axis, "axis z is -1");

  // A mesh far larger than its devices is refused before it is walked.
  TpuTopologyProto vast = OneChip();
  for (int i = 0; i < 3; ++i) vast.set_mesh_shape(i, 1 << 20);
  ExpectRefused(vast, "places, the most supported");

  EXPECT_EQ(TpuTopology::FromSerialized(OneChip().SerializeAsString(), "9lives")
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace devices
