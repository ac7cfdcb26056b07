// ParameterServerStrategy as a distribute::Strategy: variables created in
// its scope live on the ps tasks, and a training program written against
// Strategy (Scope, CreateVariable, Run, Reduce, extended().Update) runs in
// the functions the coordinator schedules on the workers.
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "devices/host_platform.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/checkpoint/checkpoint.h"
#include "distribute/partitioners.h"
#include "distribute/ps/cluster_coordinator.h"
#include "distribute/ps/parameter_server_strategy.h"
#include "distribute/ps/test_cluster.h"
#include "distribute/strategy.h"
#include "distribute/variables.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace ps {
namespace {

using devices::Shape;
using devices::Tensor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The model every task builds alike, in the strategy's scope: "w" of 4 x 2
// (two shards under a two-shard partitioner), an unnamed int64 step counter
// and "scale".
struct Model {
  std::shared_ptr<distribute::Variable> w;
  std::shared_ptr<distribute::Variable> steps;
  std::shared_ptr<distribute::Variable> scale;
};

Model MakeModel(Strategy& strategy) {
  Model m;
  absl::StatusOr<ScopeGuard> scope = strategy.Scope();
  EXPECT_TRUE(scope.ok()) << scope.status();
  if (!scope.ok()) return m;
  VariableOptions w_options;
  w_options.name = "w";
  auto w = strategy.CreateVariable(
      Floats({0, 0, 0, 0, 0, 0, 0, 0}, Shape({4, 2})), w_options);
  EXPECT_TRUE(w.ok()) << w.status();
  auto steps =
      strategy.CreateVariable(*Tensor::FromVector<int64_t>({0}, Shape()));
  EXPECT_TRUE(steps.ok()) << steps.status();
  VariableOptions scale_options;
  scale_options.name = "scale";
  scale_options.aggregation = VariableAggregation::kSum;
  auto scale = strategy.CreateVariable(Floats({1}, Shape({1})), scale_options);
  EXPECT_TRUE(scale.ok()) << scale.status();
  if (w.ok()) m.w = *w;
  if (steps.ok()) m.steps = *steps;
  if (scale.ok()) m.scale = *scale;
  return m;
}

ParameterServerStrategyOptions TwoShards() {
  ParameterServerStrategyOptions options;
  options.variable_partitioner = std::make_shared<FixedShardsPartitioner>(
      *FixedShardsPartitioner::Create(2));
  return options;
}

TEST(ParameterServerScopeTest, VariablesInTheScopeLiveOnThePsTasks) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  StartAll(*c);
  auto strategy = ParameterServerStrategy::Create(c->spec, TwoShards());
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  EXPECT_EQ((*strategy)->name(), "ParameterServerStrategy");
  EXPECT_TRUE((*strategy)->is_coordinator());
  EXPECT_EQ((*strategy)->NumReplicasInSync(), 1);
  Model m = MakeModel(**strategy);
  ASSERT_NE(m.w, nullptr);
  ASSERT_NE(m.steps, nullptr);
  EXPECT_EQ(m.w->kind(), distribute::Variable::Kind::kRemote);
  EXPECT_TRUE(m.w->values().empty());
  // w's shards on ps 0 and 1, then the round-robin goes on.
  EXPECT_THAT(m.w->devices(), ElementsAre("/job:ps/replica:0/task:0",
                                          "/job:ps/replica:0/task:1"));
  EXPECT_THAT(m.steps->devices(), ElementsAre("/job:ps/replica:0/task:0"));
  EXPECT_THAT(m.scale->devices(), ElementsAre("/job:ps/replica:0/task:1"));
  EXPECT_EQ(m.steps->name(), "Variable");
  EXPECT_EQ((*c->stores[0]).size(), 2);
  EXPECT_EQ((*c->stores[1]).size(), 2);

  // Reads and updates reach the ps tasks, shard by shard.
  ASSERT_TRUE(
      m.w->Assign(Floats({1, 2, 3, 4, 5, 6, 7, 8}, Shape({4, 2}))).ok());
  ASSERT_TRUE(
      m.w->AssignSub(Floats({1, 1, 1, 1, 1, 1, 1, 1}, Shape({4, 2}))).ok());
  EXPECT_EQ(m.w->Read()->ToVector<float>(),
            (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ((*strategy)->client().Read("w")->ToVector<float>(),
            (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(m.w->AssignAdd(Floats({1}, Shape({1}))).code(),
            absl::StatusCode::kInvalidArgument);
  // A worker-side checkpoint cannot hold it: ps::SaveVariables does.
  checkpoint::Checkpoint ckpt;
  absl::Status tracked = ckpt.TrackVariable("w", m.w);
  EXPECT_EQ(tracked.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(tracked.message(), HasSubstr("ps::SaveVariables"));
  // Row look-ups ask only the shards that hold the rows: with ps 1 (rows 2
  // and 3) stopped, rows 0 and 1 still come back.
  auto rows = m.w->SparseRead(Tensor::FromVector<int64_t>({1, 0}));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->ToVector<float>(), (std::vector<float>{2, 3, 0, 1}));

  // Colocated with `steps`: on ps 0, whole.
  {
    auto scope = (*strategy)->Scope();
    ASSERT_TRUE(scope.ok());
    auto guard = (*strategy)->extended().ColocateVarsWith(*m.steps);
    ASSERT_TRUE(guard.ok()) << guard.status();
    VariableOptions options;
    options.name = "beside_steps";
    auto v =
        (*strategy)->CreateVariable(Floats({1, 2, 3, 4}, Shape({4})), options);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_THAT((*v)->devices(), ElementsAre("/job:ps/replica:0/task:0"));
  }

  // Guards nest: leaving the inner one restores the outer one's placement.
  {
    auto scope = (*strategy)->Scope();
    ASSERT_TRUE(scope.ok());
    auto outer = (*strategy)->extended().ColocateVarsWith(*m.scale);  // ps 1
    ASSERT_TRUE(outer.ok()) << outer.status();
    {
      auto inner = (*strategy)->extended().ColocateVarsWith(*m.steps);  // 0
      ASSERT_TRUE(inner.ok()) << inner.status();
      VariableOptions options;
      options.name = "inner";
      auto v = (*strategy)->CreateVariable(Floats({1}, Shape({1})), options);
      ASSERT_TRUE(v.ok()) << v.status();
      EXPECT_THAT((*v)->devices(), ElementsAre("/job:ps/replica:0/task:0"));
    }
    VariableOptions options;
    options.name = "outer";
    auto v = (*strategy)->CreateVariable(Floats({1}, Shape({1})), options);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_THAT((*v)->devices(), ElementsAre("/job:ps/replica:0/task:1"));
  }

  // Outside the scope: refused. ON_READ: on the ps tasks too (TF's
  // AggregatingVariable).
  EXPECT_EQ(
      (*strategy)->CreateVariable(Floats({1}, Shape({1}))).status().code(),
      absl::StatusCode::kFailedPrecondition);
  {
    auto scope = (*strategy)->Scope();
    ASSERT_TRUE(scope.ok());
    VariableOptions options;
    options.name = "on_read";
    options.synchronization = VariableSynchronization::kOnRead;
    auto v = (*strategy)->CreateVariable(Floats({1}, Shape({1})), options);
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ((*v)->kind(), distribute::Variable::Kind::kRemote);
    EXPECT_EQ((*v)->synchronization(), VariableSynchronization::kOnRead);
    // A name taken already, by a variable of other rows.
    options.synchronization = VariableSynchronization::kAuto;
    options.name = "w";
    EXPECT_EQ((*strategy)
                  ->CreateVariable(Floats({1}, Shape({1})), options)
                  .status()
                  .code(),
              absl::StatusCode::kAlreadyExists);
  }

  c->ps[1]->Stop();
  rows = m.w->SparseRead(Tensor::FromVector<int64_t>({0, 1}));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->ToVector<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(m.w->SparseRead(Tensor::FromVector<int64_t>({3})).status().code(),
            absl::StatusCode::kUnavailable);
}

// A restarted coordinator builds its model again: its strategy binds to the
// variables the ps tasks still hold, values and placement kept.
TEST(ParameterServerScopeTest, ARestartedCoordinatorBindsToWhatThePsTasksHold) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  StartAll(*c);
  {
    auto first = ParameterServerStrategy::Create(c->spec, TwoShards());
    ASSERT_TRUE(first.ok());
    Model m = MakeModel(**first);
    ASSERT_NE(m.w, nullptr);
    ASSERT_TRUE(
        m.w->Assign(Floats({1, 2, 3, 4, 5, 6, 7, 8}, Shape({4, 2}))).ok());
  }
  auto second = ParameterServerStrategy::Create(c->spec, TwoShards());
  ASSERT_TRUE(second.ok());
  Model m = MakeModel(**second);
  ASSERT_NE(m.w, nullptr);
  ASSERT_NE(m.scale, nullptr);
  EXPECT_EQ(m.w->Read()->ToVector<float>(),
            (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_THAT(m.w->devices(), ElementsAre("/job:ps/replica:0/task:0",
                                          "/job:ps/replica:0/task:1"));
  EXPECT_THAT(m.scale->devices(), ElementsAre("/job:ps/replica:0/task:1"));
  EXPECT_EQ(c->stores[0]->size() + c->stores[1]->size(), 4);
}

// The program of the file comment of parameter_server_strategy.h: each
// worker's "train_step" runs the replica function with Run, updates "w"
// through the variable and the step counter through extended().Update (as
// an optimizer does), and returns a reduced value; the coordinator
// schedules steps on both workers at once and reads the result.
TEST(ParameterServerScopeTest, AStrategyProgramRunsOnTheWorkers) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  std::vector<std::unique_ptr<ParameterServerStrategy>> worker_strategies;
  std::vector<Model> worker_models;
  for (auto& server : c->workers) {
    auto strategy =
        ParameterServerStrategy::CreateForWorker(*server, TwoShards());
    ASSERT_TRUE(strategy.ok()) << strategy.status();
    EXPECT_FALSE((*strategy)->is_coordinator());
    worker_models.push_back(MakeModel(**strategy));
    worker_strategies.push_back(*std::move(strategy));
  }
  for (size_t i = 0; i < c->workers.size(); ++i) {
    ParameterServerStrategy* strategy = worker_strategies[i].get();
    Model m = worker_models[i];
    ASSERT_TRUE(
        RegisterWorkerFunction(
            *c->workers[i], "train_step",
            [strategy, m](PsClient&, std::vector<Tensor> args)
                -> absl::StatusOr<std::vector<Tensor>> {
              ASSIGN_OR_RETURN(
                  auto out,
                  strategy->Run(
                      [&](ReplicaContext& ctx, const std::vector<Tensor>& a)
                          -> absl::StatusOr<std::vector<Tensor>> {
                        ASSIGN_OR_RETURN(auto w, m.w->Read());
                        absl::Status s = m.w->AssignSub(a[0]);
                        RETURN_IF_ERROR(s);
                        s = ctx.strategy().extended().Update(
                            *m.steps,
                            [](Tensor& steps, const std::vector<Tensor>&) {
                              ++steps.data<int64_t>()[0];
                              return absl::OkStatus();
                            });
                        RETURN_IF_ERROR(s);
                        return std::vector<Tensor>{w};
                      },
                      {args[0]}));
              ASSIGN_OR_RETURN(auto seen,
                               strategy->Reduce(ReduceOp::kSum, out[0]));
              return std::vector<Tensor>{seen};
            })
            .ok());
  }
  StartAll(*c);
  auto strategy = ParameterServerStrategy::Create(c->spec, TwoShards());
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  Model m = MakeModel(**strategy);
  ASSERT_NE(m.w, nullptr);
  auto coordinator = ClusterCoordinator::Create(**strategy);
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  const Tensor ones = Floats({1, 1, 1, 1, 1, 1, 1, 1}, Shape({4, 2}));
  constexpr int kSteps = 40;
  std::vector<RemoteValue> seen;
  for (int i = 0; i < kSteps; ++i) {
    auto value = (*coordinator)->Schedule("train_step", {ones});
    ASSERT_TRUE(value.ok()) << value.status();
    seen.push_back(*value);
  }
  absl::Status joined = (*coordinator)->Join(absl::Seconds(60));
  ASSERT_TRUE(joined.ok()) << joined;
  // Every step's update counts, though the two workers ran at once: w went
  // down by one per step, and the counter (a read, an increment and the
  // difference added) up by one.
  EXPECT_EQ(m.w->Read()->ToVector<float>(), std::vector<float>(8, -kSteps));
  EXPECT_EQ(m.steps->Read()->ToVector<int64_t>(),
            (std::vector<int64_t>{kSteps}));
  for (RemoteValue& v : seen) {
    auto out = v.Get();
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ(out->size(), 1u);
    EXPECT_EQ((*out)[0].shape(), Shape({4, 2}));
    EXPECT_LE((*out)[0].ToVector<float>()[0], 0.0f);
  }
}

// A worker whose Run has two replicas (host:2): a replica-context update is
// one merge call that applies the replicas' values once, combined by the
// variable's aggregation; without one it is refused, as in TF.
TEST(ParameterServerScopeTest, ReplicasOfAWorkerUpdateOnceByAggregation) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  StartAll(*c);
  auto coordinator_strategy = ParameterServerStrategy::Create(c->spec);
  ASSERT_TRUE(coordinator_strategy.ok());
  Model made = MakeModel(**coordinator_strategy);
  ASSERT_NE(made.scale, nullptr);

  devices::HostPlatformOptions two;
  two.num_devices = 2;
  auto platform = devices::HostPlatform::Create(two);
  ASSERT_TRUE(platform.ok()) << platform.status();
  ParameterServerStrategyOptions options;
  options.platform = platform->get();
  auto strategy =
      ParameterServerStrategy::CreateForWorker(*c->workers[0], options);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  EXPECT_EQ((*strategy)->NumReplicasInSync(), 2);
  Model m = MakeModel(**strategy);
  ASSERT_NE(m.scale, nullptr);

  // SUM: each replica adds its id + 1; the ps gets 1 + 2 once.
  auto out = (*strategy)->Run(
      [&](ReplicaContext& ctx,
          const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        const float mine = static_cast<float>(ctx.ReplicaIdInSyncGroup() + 1);
        RETURN_IF_ERROR(m.scale->AssignAdd(Floats({mine}, Shape({1}))));
        ASSIGN_OR_RETURN(auto read, m.scale->Read());
        return std::vector<Tensor>{read};
      });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(made.scale->Read()->ToVector<float>(), (std::vector<float>{4}));
  // Each replica read the value after the update.
  EXPECT_EQ((*out)[0].value(0).ToVector<float>(), (std::vector<float>{4}));
  EXPECT_EQ((*out)[0].value(1).ToVector<float>(), (std::vector<float>{4}));

  // "w" has no aggregation.
  out = (*strategy)->Run(
      [&](ReplicaContext&,
          const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        RETURN_IF_ERROR(
            m.w->AssignAdd(Floats({1, 1, 1, 1, 1, 1, 1, 1}, Shape({4, 2}))));
        return std::vector<Tensor>{};
      });
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(out.status().message(),
              HasSubstr("You must specify an aggregation method"));
  EXPECT_EQ(made.w->Read()->ToVector<float>(), std::vector<float>(8, 0));
}

TEST(ParameterServerScopeTest, AWorkerBindsOnlyToWhatTheCoordinatorMade) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  StartAll(*c);
  auto strategy = ParameterServerStrategy::CreateForWorker(*c->workers[0]);
  ASSERT_TRUE(strategy.ok());
  // Not made yet.
  Model m = MakeModel(**strategy);
  ASSERT_NE(m.w, nullptr);
  EXPECT_EQ(m.w->Read().status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(c->stores[0]->size() + c->stores[1]->size(), 0);
  // The ps-level creation is the coordinator's.
  EXPECT_EQ(
      (*strategy)->CreateVariable("x", Floats({1}, Shape({1}))).status().code(),
      absl::StatusCode::kFailedPrecondition);

  // Made with another shape by the coordinator.
  auto coordinator = ParameterServerStrategy::Create(c->spec);
  ASSERT_TRUE(coordinator.ok());
  {
    auto scope = (*coordinator)->Scope();
    ASSERT_TRUE(scope.ok());
    VariableOptions options;
    options.name = "w";
    ASSERT_TRUE((*coordinator)
                    ->CreateVariable(Floats({1, 2}, Shape({2})), options)
                    .ok());
  }
  absl::StatusOr<Tensor> read = m.w->Read();
  EXPECT_EQ(read.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(read.status().message(), HasSubstr("same dtype and shape"));
}

}  // namespace
}  // namespace ps
}  // namespace distribute
