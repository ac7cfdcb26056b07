#include "distribute/tpu/device_assignment.h"

#include <array>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/tpu_topology.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace tpu {
namespace {

using devices::TpuCoordinates;
using devices::TpuTopology;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string TpuName(int task, int ordinal) {
  return absl::StrCat("/job:worker/replica:0/task:", task,
                      "/device:TPU:", ordinal);
}

// A mesh of x * y * z chips with `cores` cores each, hosts of `host_x` by
// `host_y` chips (one z layer), cores listed host by host by z, y, x, core,
// as the simulator's TPU slices are. `skip` leaves those places out.
TpuTopology Mesh(int x, int y, int z, int cores, int host_x, int host_y,
                 const std::set<TpuCoordinates>& skip = {}) {
  std::vector<TpuTopology::Task> tasks;
  for (int hz = 0; hz < z; ++hz) {
    for (int hy = 0; hy < y; hy += host_y) {
      for (int hx = 0; hx < x; hx += host_x) {
        TpuTopology::Task task;
        const int t = static_cast<int>(tasks.size());
        task.cpu_device =
            absl::StrCat("/job:worker/replica:0/task:", t, "/device:CPU:0");
        for (int cy = hy; cy < hy + host_y; ++cy) {
          for (int cx = hx; cx < hx + host_x; ++cx) {
            for (int c = 0; c < cores; ++c) {
              const TpuCoordinates at{cx, cy, hz, c};
              if (skip.count(at) != 0) continue;
              task.tpus.push_back(TpuTopology::Core{
                  at, TpuName(t, static_cast<int>(task.tpus.size()))});
            }
          }
        }
        tasks.push_back(std::move(task));
      }
    }
  }
  absl::StatusOr<TpuTopology> topology =
      TpuTopology::Create({x, y, z, cores}, std::move(tasks));
  EXPECT_TRUE(topology.ok()) << topology.status();
  return *std::move(topology);
}

std::vector<TpuCoordinates> Replica(const DeviceAssignment& a, int r) {
  return a.core_assignment()[static_cast<size_t>(r)];
}

TEST(DeviceAssignmentTest, OneCorePerReplicaFillsChipsCoreFirst) {
  absl::StatusOr<DeviceAssignment> a = DeviceAssignment::Build(
      Mesh(2, 2, 1, 2, 2, 2), {std::nullopt, std::nullopt, 8});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->num_replicas(), 8);
  EXPECT_EQ(a->num_cores_per_replica(), 1);
  // Replica r is the host's TPU:r: both cores of a chip, then along x, y.
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ(*a->coordinates(r, 0),
              (TpuCoordinates{(r / 2) % 2, r / 4, 0, r % 2}))
        << r;
    EXPECT_EQ(*a->TpuDevice(r), TpuName(0, r));
    EXPECT_EQ(*a->TpuOrdinal(r), r);
    EXPECT_EQ(*a->HostDevice(r), "/job:worker/replica:0/task:0/device:CPU:0");
  }
  // Fewer replicas pack onto the first chips.
  absl::StatusOr<DeviceAssignment> two = DeviceAssignment::Build(
      Mesh(2, 2, 1, 2, 2, 2), {std::nullopt, std::nullopt, 2});
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_THAT(Replica(*two, 0), ElementsAre(TpuCoordinates{0, 0, 0, 0}));
  EXPECT_THAT(Replica(*two, 1), ElementsAre(TpuCoordinates{0, 0, 0, 1}));
}

TEST(DeviceAssignmentTest, FullReplicationOfTwoCoreBlocksFollowsTheRing) {
  DeviceAssignment::BuildOptions options;
  options.computation_shape = {1, 1, 1, 2};
  options.num_replicas = 4;
  absl::StatusOr<DeviceAssignment> a =
      DeviceAssignment::Build(Mesh(2, 2, 1, 2, 2, 2), options);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->num_cores_per_replica(), 2);
  // Around the 2x2 ring: (0,0), (1,0), (1,1), (0,1); the grid order would
  // have put (0,1) third.
  const int chips[4][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
  for (int r = 0; r < 4; ++r) {
    EXPECT_THAT(Replica(*a, r),
                ElementsAre(TpuCoordinates{chips[r][0], chips[r][1], 0, 0},
                            TpuCoordinates{chips[r][0], chips[r][1], 0, 1}))
        << r;
  }
  // Not a full replication: the plain grid.
  options.num_replicas = 3;
  absl::StatusOr<DeviceAssignment> partial =
      DeviceAssignment::Build(Mesh(2, 2, 1, 2, 2, 2), options);
  ASSERT_TRUE(partial.ok()) << partial.status();
  EXPECT_THAT(Replica(*partial, 2), ElementsAre(TpuCoordinates{0, 1, 0, 0},
                                                TpuCoordinates{0, 1, 0, 1}));
}

TEST(DeviceAssignmentTest, ABlockOfChipsRunsItsLogicalCoresAroundARing) {
  // A 4x4x1 v4 slice in blocks of 2x2 chips: the blocks go around the 2x2
  // ring of blocks, and inside a block the logical cores go around its chips,
  // both cores of a chip in turn.
  DeviceAssignment::BuildOptions options;
  options.computation_shape = {2, 2, 1, 2};
  options.num_replicas = 4;
  absl::StatusOr<DeviceAssignment> a =
      DeviceAssignment::Build(Mesh(4, 4, 1, 2, 2, 2), options);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(
      Replica(*a, 1),
      ElementsAre(TpuCoordinates{2, 0, 0, 0}, TpuCoordinates{2, 0, 0, 1},
                  TpuCoordinates{3, 0, 0, 0}, TpuCoordinates{3, 0, 0, 1},
                  TpuCoordinates{3, 1, 0, 0}, TpuCoordinates{3, 1, 0, 1},
                  TpuCoordinates{2, 1, 0, 0}, TpuCoordinates{2, 1, 0, 1}));
  EXPECT_EQ(Replica(*a, 2)[0], (TpuCoordinates{2, 2, 0, 0}));
  EXPECT_EQ(Replica(*a, 3)[0], (TpuCoordinates{0, 2, 0, 0}));

  // Across z: a 2x2x2 mesh, a chip per replica, around the 3D ring.
  options.computation_shape = {1, 1, 1, 2};
  options.num_replicas = 8;
  absl::StatusOr<DeviceAssignment> cube =
      DeviceAssignment::Build(Mesh(2, 2, 2, 2, 2, 2), options);
  ASSERT_TRUE(cube.ok()) << cube.status();
  const int chips[8][3] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0},
                           {0, 1, 1}, {1, 1, 1}, {1, 0, 1}, {0, 0, 1}};
  for (int r = 0; r < 8; ++r) {
    EXPECT_THAT(
        Replica(*cube, r),
        ElementsAre(TpuCoordinates{chips[r][0], chips[r][1], chips[r][2], 0},
                    TpuCoordinates{chips[r][0], chips[r][1], chips[r][2], 1}))
        << r;
  }
}

TEST(DeviceAssignmentTest, DeviceOrderModes) {
  // A v5e 4x4 slice (a core per chip): full replication takes the ring by
  // default, the grid with kMesh.
  const TpuTopology v5e = Mesh(4, 4, 1, 1, 4, 4);
  DeviceAssignment::BuildOptions options;
  options.num_replicas = 16;
  absl::StatusOr<DeviceAssignment> ring = DeviceAssignment::Build(v5e, options);
  ASSERT_TRUE(ring.ok()) << ring.status();
  for (int r = 0; r < 16; ++r) {
    const TpuCoordinates a = Replica(*ring, r)[0];
    const TpuCoordinates b = Replica(*ring, (r + 1) % 16)[0];
    EXPECT_EQ(std::abs(a.x - b.x) + std::abs(a.y - b.y), 1) << r;
  }
  EXPECT_EQ(Replica(*ring, 4)[0], (TpuCoordinates{3, 1, 0, 0}));
  options.device_order_mode = DeviceAssignment::DeviceOrderMode::kRing;
  EXPECT_EQ(DeviceAssignment::Build(v5e, options)->core_assignment(),
            ring->core_assignment());
  options.device_order_mode = DeviceAssignment::DeviceOrderMode::kMesh;
  absl::StatusOr<DeviceAssignment> grid = DeviceAssignment::Build(v5e, options);
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_EQ(Replica(*grid, 4)[0], (TpuCoordinates{0, 1, 0, 0}));

  // Ring order needs a full replication of whole chips.
  options.device_order_mode = DeviceAssignment::DeviceOrderMode::kRing;
  options.num_replicas = 8;
  absl::Status partial = DeviceAssignment::Build(v5e, options).status();
  EXPECT_EQ(partial.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(partial.message(), HasSubstr("DeviceOrderMode.AUTO"));
  options.num_replicas = 8;
  EXPECT_EQ(
      DeviceAssignment::Build(Mesh(2, 2, 1, 2, 2, 2), options).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(DeviceAssignmentTest, StridesInterleaveReplicas) {
  DeviceAssignment::BuildOptions options;
  options.computation_shape = {2, 1, 1, 1};
  options.computation_stride = {2, 1, 1, 1};
  options.num_replicas = 2;
  absl::StatusOr<DeviceAssignment> a =
      DeviceAssignment::Build(Mesh(4, 1, 1, 1, 4, 1), options);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(Replica(*a, 0), ElementsAre(TpuCoordinates{0, 0, 0, 0},
                                          TpuCoordinates{2, 0, 0, 0}));
  EXPECT_THAT(Replica(*a, 1), ElementsAre(TpuCoordinates{1, 0, 0, 0},
                                          TpuCoordinates{3, 0, 0, 0}));
}

TEST(DeviceAssignmentTest, ReplicasSpreadAsACubeAcrossHosts) {
  // A 4x4x1 v4 slice of 4 hosts, blocks of 2x2 chips x 2 cores: 4 replicas,
  // each filling one host.
  DeviceAssignment::BuildOptions options;
  options.computation_shape = {2, 2, 1, 2};
  options.num_replicas = 4;
  const TpuTopology topology = Mesh(4, 4, 1, 2, 2, 2);
  absl::StatusOr<DeviceAssignment> a =
      DeviceAssignment::Build(topology, options);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->num_cores_per_replica(), 8);
  std::set<TpuCoordinates> every;
  for (int r = 0; r < 4; ++r) {
    std::set<int> tasks;
    for (const TpuCoordinates& c : Replica(*a, r)) {
      every.insert(c);
      tasks.insert(*topology.TaskOrdinalAtCoordinates(c));
    }
    EXPECT_EQ(tasks.size(), 1u) << "replica " << r << " spans hosts";
  }
  EXPECT_EQ(every.size(), 32u);
  // Each task runs logical core 0 of exactly one replica.
  std::set<int> seen;
  for (int t = 0; t < 4; ++t) {
    absl::StatusOr<std::vector<int>> replicas = a->LookupReplicas(t, 0);
    ASSERT_TRUE(replicas.ok()) << replicas.status();
    ASSERT_EQ(replicas->size(), 1u);
    seen.insert(replicas->front());
  }
  EXPECT_EQ(seen.size(), 4u);
  EXPECT_EQ(a->LookupReplicas(7, 0).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(DeviceAssignmentTest, Ring3dIsAHamiltonianCycle) {
  for (const std::array<int, 3>& mesh : {std::array<int, 3>{4, 4, 4},
                                         {2, 2, 2},
                                         {4, 2, 1},
                                         {2, 1, 4},
                                         {1, 4, 2},
                                         {8, 8, 4}}) {
    const std::vector<std::array<int, 3>> ring =
        Ring3d(mesh[0], mesh[1], mesh[2]);
    ASSERT_EQ(ring.size(), static_cast<size_t>(mesh[0] * mesh[1] * mesh[2]));
    std::set<std::array<int, 3>> unique(ring.begin(), ring.end());
    EXPECT_EQ(unique.size(), ring.size());
    for (size_t i = 0; i < ring.size(); ++i) {
      const auto& a = ring[i];
      const auto& b = ring[(i + 1) % ring.size()];
      const int distance =
          std::abs(a[0] - b[0]) + std::abs(a[1] - b[1]) + std::abs(a[2] - b[2]);
      EXPECT_EQ(distance, 1) << "step " << i << " of " << mesh[0] << "x"
                             << mesh[1] << "x" << mesh[2];
    }
  }
  // TF's documented 4x4x4 order.
  const std::vector<std::array<int, 3>> ring = Ring3d(4, 4, 4);
  EXPECT_EQ(ring[0], (std::array<int, 3>{0, 0, 0}));
  EXPECT_EQ(ring[3], (std::array<int, 3>{3, 0, 0}));
  EXPECT_EQ(ring[15], (std::array<int, 3>{0, 1, 0}));
  EXPECT_EQ(ring[16], (std::array<int, 3>{0, 1, 1}));
  EXPECT_EQ(ring[30], (std::array<int, 3>{1, 0, 1}));
  EXPECT_EQ(ring[63], (std::array<int, 3>{0, 0, 1}));
  // Lines.
  EXPECT_THAT(Ring3d(1, 1, 3), ElementsAre(std::array<int, 3>{0, 0, 0},
                                           std::array<int, 3>{0, 0, 1},
                                           std::array<int, 3>{0, 0, 2}));
}

TEST(DeviceAssignmentTest, ADegradedSliceIsFilledInTaskOrder) {
  const TpuTopology topology =
      Mesh(2, 2, 1, 1, 2, 2, {TpuCoordinates{0, 1, 0, 0}});
  EXPECT_THAT(topology.missing_devices(),
              ElementsAre(TpuCoordinates{0, 1, 0, 0}));
  absl::StatusOr<DeviceAssignment> a =
      DeviceAssignment::Build(topology, {std::nullopt, std::nullopt, 3});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_THAT(Replica(*a, 2), ElementsAre(TpuCoordinates{1, 1, 0, 0}));
  absl::Status four =
      DeviceAssignment::Build(topology, {std::nullopt, std::nullopt, 4})
          .status();
  EXPECT_EQ(four.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(four.message(), HasSubstr("has 3 cores"));
}

TEST(DeviceAssignmentTest, MaxReplicasIsWhatBuildAccepts) {
  const TpuTopology v4 = Mesh(2, 2, 1, 2, 2, 2);
  DeviceAssignment::BuildOptions options;
  EXPECT_EQ(DeviceAssignment::MaxReplicas(v4, options), 8);
  options.computation_shape = {1, 1, 1, 2};
  EXPECT_EQ(DeviceAssignment::MaxReplicas(v4, options), 4);
  options.num_replicas = 4;
  EXPECT_TRUE(DeviceAssignment::Build(v4, options).ok());
  options.num_replicas = 5;
  EXPECT_FALSE(DeviceAssignment::Build(v4, options).ok());
  options.computation_shape = {4, 1, 1, 1};
  EXPECT_EQ(DeviceAssignment::MaxReplicas(v4, options), 0);
  // A degraded slice holds as many replicas as its cores do.
  const TpuTopology degraded =
      Mesh(2, 2, 1, 1, 2, 2, {TpuCoordinates{0, 1, 0, 0}});
  options = {};
  EXPECT_EQ(DeviceAssignment::MaxReplicas(degraded, options), 3);
  options.num_replicas = 3;
  EXPECT_TRUE(DeviceAssignment::Build(degraded, options).ok());
}

TEST(DeviceAssignmentTest, BadBuildsAreInvalidArgument) {
  const TpuTopology topology = Mesh(2, 2, 1, 2, 2, 2);
  DeviceAssignment::BuildOptions options;
  options.computation_shape = {4, 1, 1, 1};
  absl::Status wide = DeviceAssignment::Build(topology, options).status();
  EXPECT_EQ(wide.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(wide.message(), HasSubstr("computation footprint [4 1 1 1] does "
                                        "not fit in TPU topology shape "
                                        "[2 2 1 2]"));
  options.computation_shape = {1, 1, 1, 2};
  options.num_replicas = 5;
  absl::Status many = DeviceAssignment::Build(topology, options).status();
  EXPECT_EQ(many.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(many.message(), HasSubstr("requested 5 replicas but only 4"));
  options.num_replicas = 0;
  EXPECT_EQ(DeviceAssignment::Build(topology, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.num_replicas = 1;
  options.computation_shape = {0, 1, 1, 1};
  EXPECT_EQ(DeviceAssignment::Build(topology, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.computation_shape = std::nullopt;
  options.computation_stride = {1, 1, 1, -1};
  EXPECT_EQ(DeviceAssignment::Build(topology, options).status().code(),
            absl::StatusCode::kInvalidArgument);

  // Create's own checks.
  EXPECT_EQ(DeviceAssignment::Create(topology, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status twice =
      DeviceAssignment::Create(topology, {{TpuCoordinates{0, 0, 0, 0}},
                                          {TpuCoordinates{0, 0, 0, 0}}})
          .status();
  EXPECT_EQ(twice.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(twice.message(), HasSubstr("a core runs one logical core"));
  EXPECT_EQ(DeviceAssignment::Create(topology, {{TpuCoordinates{5, 0, 0, 0}}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DeviceAssignment::Create(topology, {{TpuCoordinates{0, 0, 0, 0}},
                                                {TpuCoordinates{0, 0, 0, 1},
                                                 TpuCoordinates{1, 0, 0, 0}}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);

  absl::StatusOr<DeviceAssignment> a = DeviceAssignment::Build(topology);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->TpuDevice(1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(a->coordinates(0, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TpuTopologyTest, BadTopologiesAreInvalidArgument) {
  auto task = [](std::vector<TpuCoordinates> cores) {
    TpuTopology::Task t;
    t.cpu_device = "/job:worker/replica:0/task:0/device:CPU:0";
    for (size_t i = 0; i < cores.size(); ++i) {
      t.tpus.push_back({cores[i], TpuName(0, static_cast<int>(i))});
    }
    return t;
  };
  EXPECT_EQ(
      TpuTopology::Create({0, 1, 1, 1}, {task({{0, 0, 0, 0}})}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TpuTopology::Create({1, 1, 1, 1}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      TpuTopology::Create({1, 1, 1, 1}, {task({{0, 0, 0, 1}})}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      TpuTopology::Create({2, 1, 1, 1}, {task({{0, 0, 0, 0}, {0, 0, 0, 0}})})
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TpuTopology::Create({2, 1, 1, 1}, {task({{0, 0, 0, 0}}),
                                               task({{1, 0, 0, 0}}), task({})})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tpu
}  // namespace distribute
