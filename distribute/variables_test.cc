// Variables under strategies: placement, sync modes, aggregation, and TF's
// errors.
#include "distribute/variables.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "devices/host_platform.h"
#include "devices/status_macros.h"
#include "distribute/central_storage_strategy.h"
#include "distribute/mirrored_strategy.h"
#include "distribute/strategy.h"
#include "gtest/gtest.h"

namespace distribute {
namespace {

using devices::Tensor;

std::unique_ptr<devices::HostPlatform> HostWith(int n) {
  devices::HostPlatformOptions options;
  options.num_devices = n;
  return *devices::HostPlatform::Create(options);
}

Tensor Scalar(float v) {
  return *Tensor::FromVector<float>({v}, devices::Shape({1}));
}

float Value(const absl::StatusOr<Tensor>& t) {
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? t->data<float>()[0] : -1;
}

class VariablesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    platform_ = HostWith(3);
    strategy_ =
        *MirroredStrategy::Create(*platform_, {"/cpu:0", "/cpu:1", "/cpu:2"});
  }

  std::shared_ptr<Variable> Make(VariableSynchronization sync,
                                 VariableAggregation agg, float init = 1) {
    ScopeGuard scope = *strategy_->Scope();
    VariableOptions o;
    o.name = "v";
    o.synchronization = sync;
    o.aggregation = agg;
    auto v = strategy_->CreateVariable(Scalar(init), o);
    EXPECT_TRUE(v.ok()) << v.status();
    return *v;
  }

  // Runs fn(ctx) on every replica; returns the first error.
  absl::Status OnReplicas(std::function<absl::Status(ReplicaContext&)> fn) {
    return strategy_
        ->Run([&](ReplicaContext& ctx, const std::vector<Tensor>&)
                  -> absl::StatusOr<std::vector<Tensor>> {
          RETURN_IF_ERROR(fn(ctx));
          return std::vector<Tensor>{};
        })
        .status();
  }

  std::unique_ptr<devices::HostPlatform> platform_;
  std::unique_ptr<MirroredStrategy> strategy_;
};

TEST_F(VariablesTest, AutoIsMirroredOnEveryDevice) {
  auto v = Make(VariableSynchronization::kAuto, VariableAggregation::kNone);
  EXPECT_EQ(v->kind(), Variable::Kind::kMirrored);
  EXPECT_EQ(v->synchronization(), VariableSynchronization::kOnWrite);
  ASSERT_EQ(v->values().size(), 3u);
  EXPECT_EQ(v->values()[2].device(),
            "/job:localhost/replica:0/task:0/device:CPU:2");
  EXPECT_TRUE(strategy_->extended().VariableCreatedInScope(*v));
}

TEST_F(VariablesTest, CreatingOutsideTheScopeOrWithNoneSyncFails) {
  EXPECT_EQ(strategy_->CreateVariable(Scalar(1)).status().code(),
            absl::StatusCode::kFailedPrecondition);
  ScopeGuard scope = *strategy_->Scope();
  VariableOptions o;
  o.synchronization = VariableSynchronization::kNone;
  EXPECT_EQ(strategy_->CreateVariable(Scalar(1), o).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// TF >= 2.4: without aggregation, a replica's update of a mirrored variable
// writes its own copy only, and each replica then reads what it wrote.
TEST_F(VariablesTest, MirroredUpdateWithoutAggregationWritesTheOwnCopy) {
  auto v = Make(VariableSynchronization::kOnWrite, VariableAggregation::kNone);
  std::vector<float> read(3, -1);
  ASSERT_TRUE(OnReplicas([&](ReplicaContext& ctx) {
                const int r = ctx.ReplicaIdInSyncGroup();
                absl::Status s = v->Assign(Scalar(10.0f * (r + 1)));
                if (s.ok()) s = v->AssignAdd(Scalar(1));
                if (s.ok()) read[r] = Value(v->Read());
                return s;
              }).ok());
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(read[r], 10.0f * (r + 1) + 1) << "replica " << r;
    EXPECT_EQ(v->values()[r].data<float>()[0], 10.0f * (r + 1) + 1);
  }
}

// A variable made outside every scope and updated from every replica of a
// strategy: the updates go one at a time, none lost (TF serialises them on
// the variable's resource).
TEST(PlainVariableTest, UpdatesFromEveryReplicaAreSerialized) {
  auto platform = HostWith(8);
  std::vector<std::string> devices;
  for (int i = 0; i < 8; ++i) devices.push_back("/cpu:" + std::to_string(i));
  auto strategy = *MirroredStrategy::Create(*platform, devices);
  auto counter = DefaultStrategy().CreateVariable(Scalar(0));
  ASSERT_TRUE(counter.ok()) << counter.status();
  ASSERT_EQ((*counter)->kind(), Variable::Kind::kPlain);
  constexpr int kAdds = 500;
  absl::Status ran = strategy
                         ->Run([&](ReplicaContext&, const std::vector<Tensor>&)
                                   -> absl::StatusOr<std::vector<Tensor>> {
                           for (int i = 0; i < kAdds; ++i) {
                             RETURN_IF_ERROR((*counter)->AssignAdd(Scalar(1)));
                             if (!(*counter)->Read().ok())
                               return absl::InternalError("read");
                           }
                           return std::vector<Tensor>{};
                         })
                         .status();
  ASSERT_TRUE(ran.ok()) << ran;
  EXPECT_EQ(Value((*counter)->Read()), 8.0f * kAdds);
}

// TF's sparse_read: the rows the ids name, shaped ids.shape + row shape.
TEST_F(VariablesTest, SparseReadTakesTheRowsTheIdsName) {
  ScopeGuard scope = *strategy_->Scope();
  VariableOptions o;
  o.name = "table";
  auto table = strategy_->CreateVariable(
      *Tensor::FromVector<float>({0, 1, 10, 11, 20, 21},
                                 devices::Shape({3, 2})),
      o);
  ASSERT_TRUE(table.ok()) << table.status();
  auto rows = (*table)->SparseRead(
      *Tensor::FromVector<int64_t>({2, 0}, devices::Shape({2, 1})));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->shape(), devices::Shape({2, 1, 2}));
  EXPECT_EQ(rows->ToVector<float>(), (std::vector<float>{20, 21, 0, 1}));
  rows = (*table)->SparseRead(Tensor::FromVector<int32_t>({1}));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->ToVector<float>(), (std::vector<float>{10, 11}));

  absl::Status out_of_range =
      (*table)->SparseRead(Tensor::FromVector<int64_t>({3})).status();
  EXPECT_EQ(out_of_range.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(out_of_range.message().find("id 3"), std::string::npos)
      << out_of_range;
  EXPECT_EQ((*table)->SparseRead(Scalar(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
  o.name = "scalar";
  auto scalar = strategy_->CreateVariable(
      *Tensor::FromVector<float>({1}, devices::Shape()), o);
  ASSERT_TRUE(scalar.ok()) << scalar.status();
  EXPECT_EQ(
      (*scalar)->SparseRead(Tensor::FromVector<int64_t>({0})).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST_F(VariablesTest, MirroredAggregations) {
  auto sum = Make(VariableSynchronization::kOnWrite, VariableAggregation::kSum);
  auto mean =
      Make(VariableSynchronization::kOnWrite, VariableAggregation::kMean);
  auto first = Make(VariableSynchronization::kOnWrite,
                    VariableAggregation::kOnlyFirstReplica);
  ASSERT_TRUE(OnReplicas([&](ReplicaContext& ctx) {
                float id = static_cast<float>(ctx.ReplicaIdInSyncGroup() + 1);
                absl::Status s = sum->AssignAdd(Scalar(id));      // +6
                if (s.ok()) s = mean->Assign(Scalar(id * 10));    // 20
                if (s.ok()) s = first->Assign(Scalar(id * 100));  // 100
                return s;
              }).ok());
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(sum->values()[r].data<float>()[0], 7);
    EXPECT_EQ(mean->values()[r].data<float>()[0], 20);
    EXPECT_EQ(first->values()[r].data<float>()[0], 100);
  }
  // Cross-replica assign goes to every component.
  ScopeGuard scope = *strategy_->Scope();
  ASSERT_TRUE(sum->AssignSub(Scalar(2)).ok());
  for (int r = 0; r < 3; ++r) EXPECT_EQ(sum->values()[r].data<float>()[0], 5);
  EXPECT_EQ(Value(sum->Read()), 5);
}

TEST_F(VariablesTest, SyncOnReadRules) {
  auto v = Make(VariableSynchronization::kOnRead, VariableAggregation::kSum, 0);
  EXPECT_EQ(v->kind(), Variable::Kind::kSyncOnRead);
  ASSERT_TRUE(OnReplicas([&](ReplicaContext& ctx) {
                float id = static_cast<float>(ctx.ReplicaIdInSyncGroup() + 1);
                RETURN_IF_ERROR(v->AssignAdd(Scalar(id)));
                // Replica-context reads see the local component.
                ASSIGN_OR_RETURN(Tensor local, v->Read());
                EXPECT_EQ(local.data<float>()[0], id);
                return absl::OkStatus();
              }).ok());
  ScopeGuard scope = *strategy_->Scope();
  EXPECT_EQ(Value(v->Read()), 6);          // SUM of 1 + 2 + 3
  ASSERT_TRUE(v->Assign(Scalar(9)).ok());  // 3 each
  EXPECT_EQ(v->values()[1].data<float>()[0], 3);
  EXPECT_EQ(Value(v->Read()), 9);
  absl::Status add = v->AssignAdd(Scalar(1));
  EXPECT_EQ(add.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(
      add.message().find("does not support `assign_add` in cross-replica"),
      std::string::npos);

  auto m =
      Make(VariableSynchronization::kOnRead, VariableAggregation::kMean, 4);
  EXPECT_EQ(Value(m->Read()), 4);
  ASSERT_TRUE(m->AssignAdd(Scalar(1)).ok());
  EXPECT_EQ(Value(m->Read()), 5);
  auto none =
      Make(VariableSynchronization::kOnRead, VariableAggregation::kNone);
  EXPECT_EQ(none->Read().status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(VariablesTest, ShapeMismatchIsInvalidArgument) {
  auto v = Make(VariableSynchronization::kOnWrite, VariableAggregation::kSum);
  ScopeGuard scope = *strategy_->Scope();
  EXPECT_EQ(
      v->Assign(*Tensor::FromVector<float>({1, 2}, devices::Shape({2}))).code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(v->values()[0].data<float>()[0], 1);  // nothing was lost
}

TEST(CentralStorageTest, VariablesLiveOnTheParameterDevice) {
  auto platform = HostWith(3);
  auto s = *CentralStorageStrategy::Create(*platform, {"/cpu:1", "/cpu:2"},
                                           "/cpu:0");
  std::shared_ptr<Variable> v;
  {
    ScopeGuard scope = *s->Scope();
    VariableOptions o;
    o.aggregation = VariableAggregation::kMean;
    v = *s->CreateVariable(Scalar(1), o);
  }
  ASSERT_EQ(v->values().size(), 1u);
  EXPECT_EQ(v->values()[0].device(),
            "/job:localhost/replica:0/task:0/device:CPU:0");
  auto out = s->Run([&](ReplicaContext& ctx, const std::vector<Tensor>&)
                        -> absl::StatusOr<std::vector<Tensor>> {
    float id = static_cast<float>(ctx.ReplicaIdInSyncGroup());
    absl::Status st = v->AssignAdd(Scalar(2 * id + 2));  // mean of 2 and 4 = 3
    RETURN_IF_ERROR(st);
    ASSIGN_OR_RETURN(Tensor read, v->Read());
    return std::vector<Tensor>{read};
  });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(v->values()[0].data<float>()[0], 4);
}

// ON_READ variables of CentralStorageStrategy are TF's AggregatingVariable:
// one value on the parameter device, replica updates combined by the
// aggregation and applied once, reads giving that value everywhere.
TEST(CentralStorageTest, OnReadVariablesAggregateOnTheParameterDevice) {
  auto platform = HostWith(3);
  auto s = *CentralStorageStrategy::Create(*platform, {"/cpu:1", "/cpu:2"},
                                           "/cpu:0");
  std::shared_ptr<Variable> v;
  {
    ScopeGuard scope = *s->Scope();
    VariableOptions o;
    o.synchronization = VariableSynchronization::kOnRead;
    o.aggregation = VariableAggregation::kSum;
    v = *s->CreateVariable(Scalar(0), o);
  }
  EXPECT_EQ(v->synchronization(), VariableSynchronization::kOnRead);
  ASSERT_EQ(v->values().size(), 1u);
  EXPECT_EQ(v->values()[0].device(),
            "/job:localhost/replica:0/task:0/device:CPU:0");
  auto out = s->Run(
      [&](ReplicaContext& ctx,
          const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        float id = static_cast<float>(ctx.ReplicaIdInSyncGroup());
        absl::Status st = v->AssignAdd(Scalar(id + 1));  // 1 + 2, once
        RETURN_IF_ERROR(st);
        ASSIGN_OR_RETURN(Tensor read, v->Read());
        return std::vector<Tensor>{read};
      });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(Value((*out)[0].value(0)), 3);
  EXPECT_EQ(Value((*out)[0].value(1)), 3);
  EXPECT_EQ(Value(v->Read()), 3);
  // A cross-replica assign of a SUM variable is the value itself (no split
  // over replicas: there is one copy).
  ASSERT_TRUE(v->Assign(Scalar(5)).ok());
  EXPECT_EQ(Value(v->Read()), 5);
}

// ColocateVarsWith takes a variable of the strategy only (nesting guards
// are tested with ParameterServerStrategy's ps tasks, which give distinct
// placements).
TEST(CentralStorageTest, ColocationWithAnotherStrategysVariableIsRefused) {
  auto platform = HostWith(3);
  auto s = *CentralStorageStrategy::Create(*platform, {"/cpu:1", "/cpu:2"},
                                           "/cpu:0");
  VariableOptions central;
  central.aggregation = VariableAggregation::kMean;
  std::shared_ptr<Variable> mine;
  {
    ScopeGuard scope = *s->Scope();
    mine = *s->CreateVariable(Scalar(1), central);
    auto guard = s->extended().ColocateVarsWith(*mine);
    ASSERT_TRUE(guard.ok()) << guard.status();
    EXPECT_EQ((*s->CreateVariable(Scalar(2), central))->devices(),
              mine->devices());
  }
  auto other = *MirroredStrategy::Create(*platform, {"/cpu:0", "/cpu:1"});
  std::shared_ptr<Variable> foreign;
  {
    ScopeGuard other_scope = *other->Scope();
    foreign = *other->CreateVariable(Scalar(5), central);
  }
  EXPECT_EQ(s->extended().ColocateVarsWith(*foreign).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Updating a strategy's variable inside another strategy's run is refused,
// as TF's "Mixing different tf.distribute.Strategy objects".
TEST(CentralStorageTest, AnotherStrategysRunMayNotUpdateTheVariable) {
  auto platform = HostWith(2);
  auto a = *MirroredStrategy::Create(*platform, {"/cpu:0", "/cpu:1"});
  auto b = *MirroredStrategy::Create(*platform, {"/cpu:0", "/cpu:1"});
  std::shared_ptr<Variable> v;
  {
    ScopeGuard scope = *a->Scope();
    VariableOptions o;
    o.aggregation = VariableAggregation::kSum;
    v = *a->CreateVariable(Scalar(1), o);
  }
  auto out = b->Run(
      [&](ReplicaContext&,
          const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        RETURN_IF_ERROR(v->AssignAdd(Scalar(1)));
        return std::vector<Tensor>{};
      });
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition)
      << out.status();
  EXPECT_NE(out.status().message().find("Mixing different"), std::string::npos);
  EXPECT_EQ(v->values()[0].data<float>()[0], 1);
  EXPECT_TRUE(v->AssignAdd(Scalar(1)).ok());  // outside every scope
}

// A value read from a variable keeps what it read when the variable is
// updated later (TF's copy-on-write), in either context and through
// StrategyExtended::Update; an update where no one holds the old value
// writes in place.
TEST_F(VariablesTest, ReadValuesAreSnapshots) {
  ScopeGuard scope = *strategy_->Scope();
  VariableOptions o;
  o.aggregation = VariableAggregation::kSum;
  std::shared_ptr<Variable> v = *strategy_->CreateVariable(Scalar(2), o);
  Tensor before = *v->Read();
  std::vector<Tensor> components = v->values();
  ASSERT_TRUE(v->AssignAdd(Scalar(3)).ok());
  EXPECT_EQ(before.data<float>()[0], 2);
  EXPECT_EQ(components[1].data<float>()[0], 2);
  EXPECT_EQ((*v->Read()).data<float>()[0], 5);
  Tensor mid = *v->Read();
  ASSERT_TRUE(strategy_->extended()
                  .Update(*v,
                          [](Tensor& c, const std::vector<Tensor>&) {
                            c.data<float>()[0] += 1;
                            return absl::OkStatus();
                          })
                  .ok());
  EXPECT_EQ(mid.data<float>()[0], 5);
  EXPECT_EQ(v->values()[0].data<float>()[0], 6);
  // Inside a run, each replica's read keeps its value across its update.
  auto out = strategy_->Run(
      [&](ReplicaContext&,
          const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        ASSIGN_OR_RETURN(auto read, v->Read());
        absl::Status s = v->AssignAdd(Scalar(1));  // SUM over 3 replicas: +3
        RETURN_IF_ERROR(s);
        return std::vector<Tensor>{read};
      });
  ASSERT_TRUE(out.ok()) << out.status();
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ((*out)[0].value(r).data<float>()[0], 6) << r;
  }
  EXPECT_EQ(v->values()[2].data<float>()[0], 9);
  // Nothing else holds the buffer: written in place.
  const void* where = v->values()[0].raw_data();
  before = mid = Tensor();
  components.clear();
  out = absl::UnknownError("dropped");
  ASSERT_TRUE(v->Assign(Scalar(1)).ok());
  EXPECT_EQ(v->values()[0].raw_data(), where);
}

// A variable's dtype and shape are fixed at creation: an update function
// that swaps in a tensor of another shape is refused, and the variable
// still reports what it was created with.
TEST_F(VariablesTest, UpdateThatChangesTheShapeIsRefused) {
  ScopeGuard scope = *strategy_->Scope();
  std::shared_ptr<Variable> v = *strategy_->CreateVariable(Scalar(2));
  absl::Status s = strategy_->extended().Update(
      *v, [](Tensor& c, const std::vector<Tensor>&) {
        c = *Tensor::Host(devices::DType::kFloat32, devices::Shape({2}));
        return absl::OkStatus();
      });
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("keeps the dtype and shape"), std::string::npos)
      << s;
  EXPECT_EQ(v->shape(), devices::Shape({1}));
  EXPECT_EQ(v->dtype(), devices::DType::kFloat32);
}

TEST(DefaultStrategyTest, PlainVariableAndDirectRun) {
  auto v = DefaultStrategy().CreateVariable(Scalar(2));
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ((*v)->kind(), Variable::Kind::kPlain);
  ASSERT_TRUE((*v)->AssignAdd(Scalar(3)).ok());
  EXPECT_EQ(Value((*v)->Read()), 5);
}

}  // namespace
}  // namespace distribute
