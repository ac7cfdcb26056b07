// Distributed datasets: TF's batch splitting across replicas, partial final
// batches, PER_REPLICA pipelines and option errors.
#include "distribute/input_lib.h"

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "devices/host_platform.h"
#include "devices/status_macros.h"
#include "distribute/mirrored_strategy.h"
#include "gtest/gtest.h"

namespace distribute {
namespace {

using devices::Tensor;

std::unique_ptr<devices::HostPlatform> HostWith(int n) {
  devices::HostPlatformOptions options;
  options.num_devices = n;
  return *devices::HostPlatform::Create(options);
}

data::Dataset Rows(int64_t n, int64_t batch, bool drop_remainder = false) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(static_cast<float>(i));
  Tensor t = *Tensor::FromVector<float>(v, devices::Shape({n}));
  return *data::Dataset::FromTensorSlices({t})->Batch(batch, drop_remainder);
}

std::vector<int64_t> Sizes(const PerReplica& v) {
  std::vector<int64_t> out;
  for (const Tensor& t : v.values()) out.push_back(t.shape().dim(0));
  return out;
}

TEST(InputLibTest, GlobalBatchesSplitAcrossReplicasAsTfDoes) {
  auto platform = HostWith(2);
  auto s = *MirroredStrategy::Create(*platform, {"/cpu:0", "/cpu:1"});
  // 9 rows in global batches of 7: [7] -> 4 + 3, then the partial [2] -> 2 + 0.
  auto dist = ExperimentalDistributeDataset(*s, Rows(9, 7));
  ASSERT_TRUE(dist.ok()) << dist.status();
  auto it = *dist->MakeIterator();
  auto step = it->GetNext();
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(Sizes((*step)[0]), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ((*step)[0].value(1).ToVector<float>(),
            (std::vector<float>{4, 5, 6}));
  EXPECT_EQ((*step)[0].value(1).device(),
            "/job:localhost/replica:0/task:0/device:CPU:1");
  step = it->GetNext();
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ(Sizes((*step)[0]), (std::vector<int64_t>{2, 0}));
  auto end = it->GetNextAsOptional();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
  EXPECT_EQ(it->GetNext().status().code(), absl::StatusCode::kOutOfRange);
}

// TF's element_spec of a distributed dataset: each replica's share of the
// global batch, its size known only when every batch splits whole.
TEST(InputLibTest, ElementSpecIsEachReplicasShare) {
  auto platform = HostWith(2);
  auto s = *MirroredStrategy::Create(*platform, {"/cpu:0", "/cpu:1"});
  auto partial = ExperimentalDistributeDataset(*s, Rows(9, 8));
  ASSERT_TRUE(partial.ok()) << partial.status();
  auto spec = partial->element_spec();
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(data::ElementSpecDebugString(*spec), "(float32[?])");
  auto whole = ExperimentalDistributeDataset(*s, Rows(16, 8, true));
  ASSERT_TRUE(whole.ok()) << whole.status();
  spec = whole->element_spec();
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(data::ElementSpecDebugString(*spec), "(float32[4])");
  InputOptions per_replica;
  per_replica.experimental_replication_mode = InputReplicationMode::kPerReplica;
  auto from_fn = DistributeDatasetsFromFunction(
      *s,
      [](const InputContext&) -> absl::StatusOr<data::Dataset> {
        return Rows(8, 2, true);
      },
      per_replica);
  ASSERT_TRUE(from_fn.ok()) << from_fn.status();
  spec = from_fn->element_spec();
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(data::ElementSpecDebugString(*spec), "(float32[2])");
  DistributedDataset bare(
      []() -> absl::StatusOr<std::unique_ptr<DistributedIterator>> {
        return absl::UnavailableError("unused");
      });
  EXPECT_EQ(bare.element_spec().status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(InputLibTest, DatasetsFromFunctionPerWorkerAndPerReplica) {
  auto platform = HostWith(2);
  auto s = *MirroredStrategy::Create(*platform, {"/cpu:0", "/cpu:1"});
  auto per_worker = DistributeDatasetsFromFunction(
      *s, [](const InputContext& ctx) -> absl::StatusOr<data::Dataset> {
        EXPECT_EQ(ctx.num_replicas_in_sync(), 2);
        ASSIGN_OR_RETURN(int64_t per_replica, ctx.GetPerReplicaBatchSize(4));
        return Rows(8, per_replica);
      });
  ASSERT_TRUE(per_worker.ok()) << per_worker.status();
  auto step = (*per_worker->MakeIterator())->GetNext();
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ((*step)[0].value(0).ToVector<float>(), (std::vector<float>{0, 1}));
  EXPECT_EQ((*step)[0].value(1).ToVector<float>(), (std::vector<float>{2, 3}));

  InputOptions options;
  options.experimental_replication_mode = InputReplicationMode::kPerReplica;
  auto per_replica = DistributeDatasetsFromFunction(
      *s,
      [](const InputContext& ctx) -> absl::StatusOr<data::Dataset> {
        return Rows(4 + ctx.input_pipeline_id(), 2);
      },
      options);
  ASSERT_TRUE(per_replica.ok()) << per_replica.status();
  step = (*per_replica->MakeIterator())->GetNext();
  ASSERT_TRUE(step.ok()) << step.status();
  EXPECT_EQ((*step)[0].value(1).ToVector<float>(), (std::vector<float>{0, 1}));

  auto bad = DistributeDatasetsFromFunction(
      *s, [](const InputContext& ctx) -> absl::StatusOr<data::Dataset> {
        ASSIGN_OR_RETURN(int64_t b, ctx.GetPerReplicaBatchSize(7));
        return Rows(8, b);
      });
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  InputOptions per_replica_mode;
  per_replica_mode.experimental_replication_mode =
      InputReplicationMode::kPerReplica;
  EXPECT_EQ(ExperimentalDistributeDataset(*s, Rows(4, 2), per_replica_mode)
                .status()
                .code(),
            absl::StatusCode::kUnimplemented);
}

// PER_REPLICA pipelines of different lengths: the steps go on while any
// replica has data, the others get empty batches, and nothing already taken
// from a pipeline is dropped (as TF's per-replica input).
TEST(InputLibTest, PerReplicaPipelinesOfDifferentLengths) {
  auto platform = HostWith(2);
  auto s = *MirroredStrategy::Create(*platform, {"/cpu:0", "/cpu:1"});
  InputOptions options;
  options.experimental_replication_mode = InputReplicationMode::kPerReplica;
  auto dist = DistributeDatasetsFromFunction(
      *s,
      [](const InputContext& ctx) -> absl::StatusOr<data::Dataset> {
        return Rows(ctx.input_pipeline_id() == 0 ? 5 : 4, 2);
      },
      options);
  ASSERT_TRUE(dist.ok()) << dist.status();
  auto it = *dist->MakeIterator();
  std::vector<std::vector<int64_t>> sizes;
  std::vector<float> first_replica;
  while (true) {
    auto step = it->GetNextAsOptional();
    ASSERT_TRUE(step.ok()) << step.status();
    if (!step->has_value()) break;
    sizes.push_back(Sizes((**step)[0]));
    for (float x : (**step)[0].value(0).ToVector<float>()) {
      first_replica.push_back(x);
    }
  }
  EXPECT_EQ(sizes, (std::vector<std::vector<int64_t>>{{2, 2}, {2, 2}, {1, 0}}));
  EXPECT_EQ(first_replica, (std::vector<float>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace distribute
