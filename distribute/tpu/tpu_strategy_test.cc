// TPUStrategy on simulated TPU slices.
#include "distribute/tpu/tpu_strategy.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/platform.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/strategy.h"
#include "distribute/tpu/device_assignment.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/sim_platform.h"

namespace distribute {
namespace {

using devices::Shape;
using devices::Tensor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Tpu(int i) {
  return absl::StrCat("/job:worker/replica:0/task:0/device:TPU:", i);
}

std::unique_ptr<simulator::SimPlatform> Slice(const std::string& spec) {
  auto p = simulator::SimPlatform::FromSpec(spec);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *std::move(p) : nullptr;
}

// Options whose assignment is TF's build of `replicas` blocks of `shape`
// on `sim`'s TPU system.
TPUStrategy::Options Assigned(simulator::SimPlatform& sim,
                              std::array<int, 4> shape, int replicas) {
  tpu::DeviceAssignment::BuildOptions build;
  build.computation_shape = shape;
  build.num_replicas = replicas;
  absl::StatusOr<tpu::DeviceAssignment> assignment =
      tpu::DeviceAssignment::Build(*sim.GetTpuTopology(), build);
  EXPECT_TRUE(assignment.ok()) << assignment.status();
  TPUStrategy::Options options;
  if (assignment.ok()) options.device_assignment = *std::move(assignment);
  return options;
}

// TPUStrategy with that assignment.
std::unique_ptr<TPUStrategy> Blocks(simulator::SimPlatform& sim,
                                    std::array<int, 4> shape, int replicas) {
  auto strategy = TPUStrategy::Create(sim, Assigned(sim, shape, replicas));
  EXPECT_TRUE(strategy.ok()) << strategy.status();
  return strategy.ok() ? *std::move(strategy) : nullptr;
}

// A chip (both cores) per replica on a v4 2x2x1 slice: 4 replicas.
std::unique_ptr<TPUStrategy> ChipPerReplica(simulator::SimPlatform& sim) {
  return Blocks(sim, {1, 1, 1, 2}, 4);
}

TEST(TPUStrategyTest, EveryCoreIsAReplicaByDefault) {
  auto sim = Slice("sim:tpu_v4:2x2x1");
  ASSERT_NE(sim, nullptr);
  auto strategy = TPUStrategy::Create(*sim);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  EXPECT_EQ((*strategy)->name(), "TPUStrategy");
  EXPECT_EQ((*strategy)->NumReplicasInSync(), 8);
  EXPECT_EQ((*strategy)->num_cores_per_replica(), 1);
  std::vector<std::string> expected;
  for (int i = 0; i < 8; ++i) expected.push_back(Tpu(i));
  EXPECT_EQ((*strategy)->extended().WorkerDevices(), expected);
  EXPECT_EQ((*strategy)->extended().cross_device_ops().name(),
            "CollectiveAllReduce");

  auto out = (*strategy)->Run(
      [](ReplicaContext& ctx,
         const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        const float id = static_cast<float>(ctx.ReplicaIdInSyncGroup());
        ASSIGN_OR_RETURN(Tensor mine,
                         Tensor::FromVector<float>({id, 1}, Shape({2})));
        return ctx.AllReduce(ReduceOp::kSum, {mine});
      });
  ASSERT_TRUE(out.ok()) << out.status();
  for (int r = 0; r < 8; ++r) {
    EXPECT_EQ((*out)[0].value(r).ToVector<float>(),
              (std::vector<float>{28, 8}));
  }
}

TEST(TPUStrategyTest, ReplicasFollowTheDeviceAssignment) {
  auto sim = Slice("sim:tpu_v4:2x2x1");
  ASSERT_NE(sim, nullptr);
  auto strategy = ChipPerReplica(*sim);
  ASSERT_NE(strategy, nullptr);
  EXPECT_EQ(strategy->NumReplicasInSync(), 4);
  EXPECT_EQ(strategy->num_cores_per_replica(), 2);
  // Logical core 0 of the chips in ring order (0,0), (1,0), (1,1), (0,1):
  // cores are numbered by y, x, core on the host.
  EXPECT_EQ(strategy->extended().WorkerDevices(),
            (std::vector<std::string>{Tpu(0), Tpu(2), Tpu(6), Tpu(4)}));
  EXPECT_EQ(*strategy->LogicalDevice(2, 1), Tpu(7));
  EXPECT_EQ(strategy->LogicalDevice(4, 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(strategy->LogicalDevice(0, 2).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(TPUStrategyTest, TensorsMoveToTheReplicasLogicalCores) {
  auto sim = Slice("sim:tpu_v4:2x2x1");
  ASSERT_NE(sim, nullptr);
  auto strategy = ChipPerReplica(*sim);
  ASSERT_NE(strategy, nullptr);
  TPUStrategy* s = strategy.get();
  auto out = s->Run([s](ReplicaContext& ctx, const std::vector<Tensor>&)
                        -> absl::StatusOr<std::vector<Tensor>> {
    const float id = static_cast<float>(ctx.ReplicaIdInSyncGroup());
    // A [4, 2] tensor: row i holds (10 * id + i, -i).
    std::vector<float> values;
    for (int i = 0; i < 4; ++i) {
      values.push_back(10 * id + i);
      values.push_back(-i);
    }
    ASSIGN_OR_RETURN(Tensor x,
                     Tensor::FromVector<float>(values, Shape({4, 2})));
    ASSIGN_OR_RETURN(Tensor second, s->AssignToLogicalDevice(x, 1));
    ASSIGN_OR_RETURN(std::vector<Tensor> both, s->ReplicateToLogicalDevices(x));
    ASSIGN_OR_RETURN(std::vector<Tensor> rows,
                     s->SplitToLogicalDevices(x, {2, 1}));
    ASSIGN_OR_RETURN(std::vector<Tensor> columns,
                     s->SplitToLogicalDevices(x, {1, 2}));
    return std::vector<Tensor>{second,  both[0],    both[1],   rows[0],
                               rows[1], columns[0], columns[1]};
  });
  ASSERT_TRUE(out.ok()) << out.status();
  for (int r = 0; r < 4; ++r) {
    const std::string core0 = *s->LogicalDevice(r, 0);
    const std::string core1 = *s->LogicalDevice(r, 1);
    const float b = 10.0f * r;
    auto host = [&](int i) {
      const Tensor& t = (*out)[static_cast<size_t>(i)].value(r);
      return devices::ToHostTensor(*sim, t)->ToVector<float>();
    };
    auto device = [&](int i) {
      return (*out)[static_cast<size_t>(i)].value(r).device();
    };
    const std::vector<float> whole = {b, 0, b + 1, -1, b + 2, -2, b + 3, -3};
    EXPECT_EQ(device(0), core1);
    EXPECT_EQ(host(0), whole);
    EXPECT_EQ(device(1), core0);
    EXPECT_EQ(device(2), core1);
    EXPECT_EQ(host(2), whole);
    // Rows 0-1 on core 0, rows 2-3 on core 1.
    EXPECT_EQ(device(3), core0);
    EXPECT_EQ((*out)[3].value(r).shape(), Shape({2, 2}));
    EXPECT_EQ(host(3), (std::vector<float>{b, 0, b + 1, -1}));
    EXPECT_EQ(device(4), core1);
    EXPECT_EQ(host(4), (std::vector<float>{b + 2, -2, b + 3, -3}));
    // Column 0 on core 0, column 1 on core 1.
    EXPECT_EQ((*out)[5].value(r).shape(), Shape({4, 1}));
    EXPECT_EQ(host(5), (std::vector<float>{b, b + 1, b + 2, b + 3}));
    EXPECT_EQ(device(6), core1);
    EXPECT_EQ(host(6), (std::vector<float>{0, -1, -2, -3}));
  }
}

// Replicas of 2x1x1x2 cores (two chips each) on a v4 2x2x1 slice.
std::unique_ptr<TPUStrategy> TwoChipsPerReplica(simulator::SimPlatform& sim) {
  return Blocks(sim, {2, 1, 1, 2}, 2);
}

TEST(TPUStrategyTest, SplitsTileEveryDimensionInRowMajorOrder) {
  auto sim = Slice("sim:tpu_v4:2x2x1");
  ASSERT_NE(sim, nullptr);
  auto strategy = TwoChipsPerReplica(*sim);
  ASSERT_NE(strategy, nullptr);
  ASSERT_EQ(strategy->num_cores_per_replica(), 4);
  TPUStrategy* s = strategy.get();
  // x[i][j][k] = 100 i + 10 j + k, shape [2, 3, 4], split {2, 1, 2}: tile
  // t = 2 * (i block) + (k block) holds x[i][*][2 * kb .. 2 * kb + 1].
  std::vector<float> values;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 4; ++k) values.push_back(100 * i + 10 * j + k);
    }
  }
  auto out = s->Run(
      [&](ReplicaContext&,
          const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        ASSIGN_OR_RETURN(Tensor x,
                         Tensor::FromVector<float>(values, Shape({2, 3, 4})));
        return s->SplitToLogicalDevices(x, {2, 1, 2});
      });
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 4u);
  for (int r = 0; r < 2; ++r) {
    for (int t = 0; t < 4; ++t) {
      const Tensor& tile = (*out)[static_cast<size_t>(t)].value(r);
      EXPECT_EQ(tile.device(), *s->LogicalDevice(r, t));
      EXPECT_EQ(tile.shape(), Shape({1, 3, 2}));
      std::vector<float> expected;
      for (int j = 0; j < 3; ++j) {
        for (int k = 0; k < 2; ++k) {
          expected.push_back(100 * (t / 2) + 10 * j + 2 * (t % 2) + k);
        }
      }
      EXPECT_EQ(devices::ToHostTensor(*sim, tile)->ToVector<float>(), expected)
          << "replica " << r << " tile " << t;
    }
  }
}

TEST(TPUStrategyTest, SplitsInTimingOnlyModeCarryShapes) {
  auto sim = Slice("sim:tpu_v4:2x2x1;timing");
  ASSERT_NE(sim, nullptr);
  auto strategy = TwoChipsPerReplica(*sim);
  ASSERT_NE(strategy, nullptr);
  TPUStrategy* s = strategy.get();
  auto out = s->Run([s](ReplicaContext&, const std::vector<Tensor>&)
                        -> absl::StatusOr<std::vector<Tensor>> {
    return s->SplitToLogicalDevices(
        Tensor::ShapeOnly(devices::DType::kFloat32, Shape({8, 6}), ""), {4, 1});
  });
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 4u);
  EXPECT_EQ((*out)[3].value(1).shape(), Shape({2, 6}));
  EXPECT_EQ((*out)[3].value(1).device(), *s->LogicalDevice(1, 3));
  EXPECT_FALSE((*out)[3].value(1).has_data());
}

TEST(TPUStrategyTest, LogicalDevicesNeedTheStrategysRunAndValidSplits) {
  auto sim = Slice("sim:tpu_v4:2x2x1");
  ASSERT_NE(sim, nullptr);
  auto strategy = ChipPerReplica(*sim);
  ASSERT_NE(strategy, nullptr);
  const Tensor x = Tensor::FromVector<float>({1, 2, 3});
  absl::Status outside = strategy->AssignToLogicalDevice(x, 1).status();
  EXPECT_EQ(outside.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(outside.message(), HasSubstr("inside this TPUStrategy's Run"));
  EXPECT_EQ(strategy->SplitToLogicalDevices(x, {1}).status().code(),
            absl::StatusCode::kFailedPrecondition);

  TPUStrategy* s = strategy.get();
  auto out = s->Run(
      [s](ReplicaContext&,
          const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        const Tensor three = Tensor::FromVector<float>({1, 2, 3});
        std::vector<absl::Status> errors = {
            s->AssignToLogicalDevice(three, 2).status(),
            s->SplitToLogicalDevices(three, {2}).status(),  // 3 rows in 2
            s->SplitToLogicalDevices(three, {1}).status(),  // 1 tile, 2 cores
            s->SplitToLogicalDevices(three, {1, 2}).status(),  // rank 2 for 1
            s->SplitToLogicalDevices(three, {0}).status(),
        };
        for (const absl::Status& e : errors) {
          if (e.code() != absl::StatusCode::kInvalidArgument) {
            return absl::InternalError(
                absl::StrCat("expected INVALID_ARGUMENT: ", e.ToString()));
          }
        }
        return std::vector<Tensor>{};
      });
  EXPECT_TRUE(out.ok()) << out.status();

  // Another strategy's Run is not this one's.
  auto other = TPUStrategy::Create(*sim);
  ASSERT_TRUE(other.ok());
  auto foreign = (*other)->Run([s](ReplicaContext&, const std::vector<Tensor>&)
                                   -> absl::StatusOr<std::vector<Tensor>> {
    absl::Status e =
        s->AssignToLogicalDevice(Tensor::FromVector<float>({1}), 0).status();
    if (e.code() != absl::StatusCode::kFailedPrecondition) {
      return absl::InternalError(e.ToString());
    }
    return std::vector<Tensor>{};
  });
  EXPECT_TRUE(foreign.ok()) << foreign.status();
}

TEST(TPUStrategyTest, PlatformsWithoutTpusAndForeignAssignmentsAreRefused) {
  auto gpus = Slice("sim:dgx_h100");
  ASSERT_NE(gpus, nullptr);
  absl::Status none = TPUStrategy::Create(*gpus).status();
  EXPECT_EQ(none.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(none.message(), HasSubstr("TPUStrategy needs TPUs"));

  // An assignment built for a larger slice names cores this one lacks.
  auto big = Slice("sim:tpu_v4:4x4x1");
  auto small = Slice("sim:tpu_v4:2x2x1");
  ASSERT_NE(big, nullptr);
  ASSERT_NE(small, nullptr);
  absl::Status foreign =
      TPUStrategy::Create(*small, Assigned(*big, {1, 1, 1, 1}, 32)).status();
  EXPECT_EQ(foreign.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(foreign.message(), HasSubstr("GetTpuTopology()"));

  // A v5e 2x4 slice has devices of the same names (task:0/TPU:0-7), at
  // other places: its assignment is refused too.
  auto v5e = Slice("sim:tpu_v5e:2x4");
  ASSERT_NE(v5e, nullptr);
  absl::Status same_names =
      TPUStrategy::Create(*small, Assigned(*v5e, {1, 1, 1, 1}, 8)).status();
  EXPECT_EQ(same_names.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(same_names.message(), HasSubstr("does not have there"));
}

TEST(TPUStrategyTest, SpansTheHostsOfALargerSlice) {
  // 4 hosts of 8 cores: replicas on every task, all-reduced over ICI.
  auto sim = Slice("sim:tpu_v4:4x4x1");
  ASSERT_NE(sim, nullptr);
  auto strategy = TPUStrategy::Create(*sim);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  EXPECT_EQ((*strategy)->NumReplicasInSync(), 32);
  EXPECT_EQ((*strategy)->extended().WorkerDevices()[31],
            "/job:worker/replica:0/task:3/device:TPU:7");
  auto out = (*strategy)->Run(
      [](ReplicaContext& ctx,
         const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        return ctx.AllReduce(ReduceOp::kMean,
                             {Tensor::FromVector<float>({static_cast<float>(
                                 ctx.ReplicaIdInSyncGroup())})});
      });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT((*out)[0].value(17).ToVector<float>(), ElementsAre(15.5f));
}

}  // namespace
}  // namespace distribute
