// Contexts, scopes, Run, Reduce, Gather and merge_call, with
// tf.distribute's rules, on the host platform.
#include "distribute/strategy.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/clock.h"
#include "devices/host_platform.h"
#include "devices/status_macros.h"
#include "distribute/central_storage_strategy.h"
#include "distribute/input/input_context.h"
#include "distribute/mirrored_strategy.h"
#include "distribute/one_device_strategy.h"
#include "gtest/gtest.h"

namespace distribute {
namespace {

using devices::Tensor;

std::unique_ptr<devices::HostPlatform> HostWith(int n) {
  devices::HostPlatformOptions options;
  options.num_devices = n;
  return *devices::HostPlatform::Create(options);
}

std::vector<std::string> Cpus(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("/cpu:" + std::to_string(i));
  return out;
}

Tensor Floats(std::vector<float> v, devices::Shape shape) {
  return *Tensor::FromVector<float>(v, std::move(shape));
}

TEST(ContextTest, DefaultStrategyOutsideScopes) {
  EXPECT_FALSE(HasStrategy());
  EXPECT_FALSE(InCrossReplicaContext());
  EXPECT_EQ(&GetStrategy(), &DefaultStrategy());
  ASSERT_NE(GetReplicaContext(), nullptr);
  EXPECT_EQ(GetReplicaContext()->ReplicaIdInSyncGroup(), 0);
  EXPECT_EQ(GetReplicaContext()->NumReplicasInSync(), 1);
  EXPECT_EQ(GetLossReduction(), ReduceOp::kSum);
}

// The default strategy's scope changes nothing, as TF's default distribution
// context: the thread keeps its default replica context, a strategy's scope
// may be entered inside it, but it may not be entered inside another's.
TEST(ContextTest, DefaultStrategyScopeKeepsTheDefaultContext) {
  auto platform = HostWith(2);
  auto m = *MirroredStrategy::Create(*platform, Cpus(2));
  {
    absl::StatusOr<ScopeGuard> outer = DefaultStrategy().Scope();
    ASSERT_TRUE(outer.ok()) << outer.status();
    EXPECT_FALSE(HasStrategy());
    EXPECT_FALSE(InCrossReplicaContext());
    EXPECT_NE(GetReplicaContext(), nullptr);
    EXPECT_EQ(&GetStrategy(), &DefaultStrategy());
    absl::StatusOr<ScopeGuard> inner = m->Scope();
    ASSERT_TRUE(inner.ok()) << inner.status();
    EXPECT_EQ(&GetStrategy(), m.get());
    EXPECT_EQ(DefaultStrategy().Scope().status().code(),
              absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_FALSE(HasStrategy());
  EXPECT_EQ(&GetStrategy(), &DefaultStrategy());
}

TEST(ContextTest, ScopeRules) {
  auto platform = HostWith(2);
  auto a = *MirroredStrategy::Create(*platform, Cpus(2));
  auto b = *OneDeviceStrategy::Create(*platform, "/cpu:1");
  {
    absl::StatusOr<ScopeGuard> scope = a->Scope();
    ASSERT_TRUE(scope.ok());
    EXPECT_TRUE(HasStrategy());
    EXPECT_TRUE(InCrossReplicaContext());
    EXPECT_EQ(GetReplicaContext(), nullptr);
    EXPECT_EQ(&GetStrategy(), a.get());
    {
      absl::StatusOr<ScopeGuard> again = a->Scope();  // re-entering is fine
      EXPECT_TRUE(again.ok());
    }
    EXPECT_EQ(&GetStrategy(), a.get());
    absl::StatusOr<ScopeGuard> mixed = b->Scope();
    EXPECT_EQ(mixed.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_NE(mixed.status().message().find("Mixing different"),
              std::string::npos);
  }
  EXPECT_FALSE(HasStrategy());
}

TEST(ContextTest, ExperimentalSetStrategy) {
  auto platform = HostWith(1);
  auto s = *OneDeviceStrategy::Create(*platform, "/cpu:0");
  ASSERT_TRUE(ExperimentalSetStrategy(s.get()).ok());
  EXPECT_EQ(&GetStrategy(), s.get());
  EXPECT_TRUE(InCrossReplicaContext());
  ASSERT_TRUE(ExperimentalSetStrategy(nullptr).ok());
  EXPECT_FALSE(HasStrategy());
  {
    ScopeGuard scope = *s->Scope();
    EXPECT_EQ(ExperimentalSetStrategy(s.get()).code(),
              absl::StatusCode::kFailedPrecondition);
  }
}

TEST(RunTest, EachReplicaRunsOnItsThreadInReplicaContext) {
  auto platform = HostWith(4);
  auto s = *MirroredStrategy::Create(*platform, Cpus(4));
  EXPECT_EQ(s->NumReplicasInSync(), 4);
  std::atomic<int> calls{0};
  auto out = s->Run(
      [&](ReplicaContext& ctx,
          const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        ++calls;
        EXPECT_FALSE(InCrossReplicaContext());
        EXPECT_EQ(GetReplicaContext(), &ctx);
        EXPECT_EQ(&GetStrategy(), s.get());
        // Entering the scope from a replica context is an error.
        EXPECT_EQ(s->Scope().status().code(),
                  absl::StatusCode::kFailedPrecondition);
        float id = static_cast<float>(ctx.ReplicaIdInSyncGroup());
        return std::vector<Tensor>{Floats({id, 2 * id}, devices::Shape({2}))};
      });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(calls.load(), 4);
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].value(3).ToVector<float>(), (std::vector<float>{3, 6}));
  Tensor sum = *s->Reduce(ReduceOp::kSum, (*out)[0]);
  EXPECT_EQ(sum.ToVector<float>(), (std::vector<float>{6, 12}));
  Tensor mean = *s->Reduce(ReduceOp::kMean, (*out)[0]);
  EXPECT_EQ(mean.ToVector<float>(), (std::vector<float>{1.5, 3}));
  EXPECT_EQ(s->ExperimentalLocalResults((*out)[0]).size(), 4u);
}

TEST(RunTest, ArgumentsAreSplitPerReplica) {
  auto platform = HostWith(2);
  auto s = *MirroredStrategy::Create(*platform, Cpus(2));
  PerReplica per(
      {Floats({1}, devices::Shape({1})), Floats({5}, devices::Shape({1}))});
  Tensor shared = Floats({10}, devices::Shape({1}));
  auto out = s->Run(
      [](ReplicaContext&, const std::vector<Tensor>& args)
          -> absl::StatusOr<std::vector<Tensor>> {
        float v = args[0].data<float>()[0] + args[1].data<float>()[0];
        return std::vector<Tensor>{Floats({v}, devices::Shape({1}))};
      },
      {per, shared});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].value(0).data<float>()[0], 11);
  EXPECT_EQ((*out)[0].value(1).data<float>()[0], 15);
  PerReplica wrong({Floats({1}, devices::Shape({1}))});
  EXPECT_EQ(s->Run(
                 [](ReplicaContext&, const std::vector<Tensor>&)
                     -> absl::StatusOr<std::vector<Tensor>> {
                   return std::vector<Tensor>{};
                 },
                 {wrong})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RunTest, ReplicaErrorsAndMismatchedStructures) {
  auto platform = HostWith(3);
  auto s = *MirroredStrategy::Create(*platform, Cpus(3));
  auto failing = s->Run(
      [](ReplicaContext& ctx,
         const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        if (ctx.ReplicaIdInSyncGroup() == 1) return absl::InternalError("boom");
        return std::vector<Tensor>{};
      });
  EXPECT_EQ(failing.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(failing.status().message().find("replica 1"), std::string::npos);
  auto uneven = s->Run(
      [](ReplicaContext& ctx,
         const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        std::vector<Tensor> out;
        for (int i = 0; i <= ctx.ReplicaIdInSyncGroup(); ++i) {
          out.push_back(Floats({1}, devices::Shape({1})));
        }
        return out;
      });
  EXPECT_EQ(uneven.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(RunTest, ReduceRejectsMismatchedShapes) {
  auto platform = HostWith(2);
  auto s = *MirroredStrategy::Create(*platform, Cpus(2));
  PerReplica v(
      {Floats({1, 2}, devices::Shape({2})), Floats({1}, devices::Shape({1}))});
  EXPECT_EQ(s->Reduce(ReduceOp::kSum, v).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RunTest, ReduceMeanOverAxisCountsUnevenBatches) {
  auto platform = HostWith(2);
  auto s = *MirroredStrategy::Create(*platform, Cpus(2));
  // Replica 0 has 3 examples, replica 1 has 1: the mean over the batch is
  // (1+2+3+10)/4, not the mean of per-replica means.
  PerReplica v({Floats({1, 2, 3}, devices::Shape({3})),
                Floats({10}, devices::Shape({1}))});
  Tensor mean = *s->Reduce(ReduceOp::kMean, v, 0);
  EXPECT_FLOAT_EQ(mean.data<float>()[0], 4.0f);
  Tensor sum = *s->Reduce(ReduceOp::kSum, v, 0);
  EXPECT_FLOAT_EQ(sum.data<float>()[0], 16.0f);
  EXPECT_EQ(s->Reduce(ReduceOp::kSum, v, 3).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RunTest, GatherConcatenatesAlongAxis) {
  auto platform = HostWith(2);
  auto s = *MirroredStrategy::Create(*platform, Cpus(2));
  PerReplica v({Floats({1, 2, 3, 4}, devices::Shape({2, 2})),
                Floats({5, 6}, devices::Shape({1, 2}))});
  Tensor g = *s->Gather(v, 0);
  EXPECT_EQ(g.shape(), devices::Shape({3, 2}));
  EXPECT_EQ(g.ToVector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(s->Gather(v, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ReplicaContextTest, AllReduceAndAllGather) {
  auto platform = HostWith(4);
  for (std::shared_ptr<CrossDeviceOps> ops :
       std::vector<std::shared_ptr<CrossDeviceOps>>{
           std::make_shared<ReductionToOneDevice>(),
           std::make_shared<CollectiveAllReduce>(),
           std::make_shared<HierarchicalCopyAllReduce>(2)}) {
    auto s = *MirroredStrategy::Create(*platform, Cpus(4), ops);
    auto out = s->Run([](ReplicaContext& ctx, const std::vector<Tensor>&)
                          -> absl::StatusOr<std::vector<Tensor>> {
      float id = static_cast<float>(ctx.ReplicaIdInSyncGroup());
      ASSIGN_OR_RETURN(auto sum,
                       ctx.AllReduce(ReduceOp::kSum,
                                     {Floats({id, 1}, devices::Shape({2})),
                                      Floats({2 * id}, devices::Shape({1}))}));
      ASSIGN_OR_RETURN(
          auto mean,
          ctx.AllReduce(ReduceOp::kMean, {Floats({id}, devices::Shape({1}))}));
      ASSIGN_OR_RETURN(auto gathered,
                       ctx.AllGather(Floats({id}, devices::Shape({1}))));
      return std::vector<Tensor>{sum[0], sum[1], mean[0], gathered};
    });
    ASSERT_TRUE(out.ok()) << ops->name() << ": " << out.status();
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ((*out)[0].value(r).ToVector<float>(),
                (std::vector<float>{6, 4}));
      EXPECT_EQ((*out)[1].value(r).ToVector<float>(), (std::vector<float>{12}));
      EXPECT_EQ((*out)[2].value(r).ToVector<float>(),
                (std::vector<float>{1.5}));
      EXPECT_EQ((*out)[3].value(r).ToVector<float>(),
                (std::vector<float>{0, 1, 2, 3}));
    }
  }
}

TEST(ReplicaContextTest, AllGatherAlongAnyAxis) {
  auto platform = HostWith(2);
  auto s = *MirroredStrategy::Create(*platform, Cpus(2));
  // Replica r holds a [2, r + 1, 2] value of 100 * r + its flat index; the
  // gather along axis 1 (and -2, the same axis) is [2, 3, 2].
  for (int axis : {1, -2}) {
    auto out = s->Run([axis](ReplicaContext& ctx, const std::vector<Tensor>&)
                          -> absl::StatusOr<std::vector<Tensor>> {
      const int r = ctx.ReplicaIdInSyncGroup();
      std::vector<float> v;
      for (int i = 0; i < 2 * (r + 1) * 2; ++i) v.push_back(100.0f * r + i);
      ASSIGN_OR_RETURN(
          auto gathered,
          ctx.AllGather(Floats(v, devices::Shape({2, r + 1, 2})), axis));
      return std::vector<Tensor>{gathered};
    });
    ASSERT_TRUE(out.ok()) << out.status();
    for (int r = 0; r < 2; ++r) {
      const Tensor& g = (*out)[0].value(r);
      EXPECT_EQ(g.shape(), devices::Shape({2, 3, 2}));
      EXPECT_EQ(g.ToVector<float>(),
                (std::vector<float>{0, 1, 100, 101, 102, 103,  //
                                    2, 3, 104, 105, 106, 107}))
          << "axis " << axis;
    }
  }
  // The last axis: [1, 2] values give [1, 4].
  auto last = s->Run([](ReplicaContext& ctx, const std::vector<Tensor>&)
                         -> absl::StatusOr<std::vector<Tensor>> {
    const float r = static_cast<float>(ctx.ReplicaIdInSyncGroup());
    ASSIGN_OR_RETURN(auto gathered,
                     ctx.AllGather(Floats({r, r + 10}, devices::Shape({1, 2})),
                                   /*axis=*/-1));
    return std::vector<Tensor>{gathered};
  });
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ((*last)[0].value(1).ToVector<float>(),
            (std::vector<float>{0, 10, 1, 11}));
}

// A replica whose shard is empty along the gathered axis (the last partial
// batch of a data set) still receives every other replica's rows.
TEST(ReplicaContextTest, AllGatherWhereAReplicaHasNoRows) {
  auto platform = HostWith(3);
  for (std::shared_ptr<CrossDeviceOps> ops :
       std::vector<std::shared_ptr<CrossDeviceOps>>{
           std::make_shared<ReductionToOneDevice>(),
           std::make_shared<CollectiveAllReduce>()}) {
    auto s = *MirroredStrategy::Create(*platform, Cpus(3), ops);
    for (int axis : {0, 1}) {
      // Replica r holds 2 - r slices of 2 values: 2, 1 and 0 of them.
      auto out = s->Run([axis](ReplicaContext& ctx, const std::vector<Tensor>&)
                            -> absl::StatusOr<std::vector<Tensor>> {
        const int r = ctx.ReplicaIdInSyncGroup();
        const int64_t slices = 2 - r;
        std::vector<float> v;
        for (int i = 0; i < slices * 2; ++i) v.push_back(10.0f * r + i);
        ASSIGN_OR_RETURN(
            auto gathered,
            ctx.AllGather(Floats(v, axis == 0 ? devices::Shape({slices, 2})
                                              : devices::Shape({2, slices})),
                          axis));
        return std::vector<Tensor>{gathered};
      });
      ASSERT_TRUE(out.ok()) << ops->name() << ": " << out.status();
      for (int r = 0; r < 3; ++r) {
        const Tensor& g = (*out)[0].value(r);
        if (axis == 0) {
          EXPECT_EQ(g.shape(), devices::Shape({3, 2}));
          EXPECT_EQ(g.ToVector<float>(),
                    (std::vector<float>{0, 1, 2, 3, 10, 11}))
              << ops->name() << ", replica " << r;
        } else {
          EXPECT_EQ(g.shape(), devices::Shape({2, 3}));
          EXPECT_EQ(g.ToVector<float>(),
                    (std::vector<float>{0, 1, 10, 2, 3, 11}))
              << ops->name() << ", replica " << r;
        }
      }
    }
  }
}

TEST(ReplicaContextTest, AllGatherRejectsBadAxesAndShapes) {
  auto platform = HostWith(2);
  auto s = *MirroredStrategy::Create(*platform, Cpus(2));
  for (int axis : {2, -3}) {
    auto out = s->Run([axis](ReplicaContext& ctx, const std::vector<Tensor>&)
                          -> absl::StatusOr<std::vector<Tensor>> {
      ASSIGN_OR_RETURN(
          auto gathered,
          ctx.AllGather(Floats({1, 2}, devices::Shape({1, 2})), axis));
      return std::vector<Tensor>{gathered};
    });
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument) << axis;
  }
  // Replica 1 differs along axis 0 while gathering along axis 1.
  auto mismatch = s->Run([](ReplicaContext& ctx, const std::vector<Tensor>&)
                             -> absl::StatusOr<std::vector<Tensor>> {
    const int64_t rows = ctx.ReplicaIdInSyncGroup() + 1;
    ASSIGN_OR_RETURN(auto gathered,
                     ctx.AllGather(Floats(std::vector<float>(rows * 2, 1.0f),
                                          devices::Shape({rows, 2})),
                                   /*axis=*/1));
    return std::vector<Tensor>{gathered};
  });
  EXPECT_EQ(mismatch.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(mismatch.status().message())
                .find("every dimension but the axis"),
            std::string::npos)
      << mismatch.status();
  // Replicas of different ranks.
  auto ranks = s->Run(
      [](ReplicaContext& ctx,
         const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        const bool first = ctx.ReplicaIdInSyncGroup() == 0;
        ASSIGN_OR_RETURN(
            auto gathered,
            ctx.AllGather(first ? Floats({1, 2}, devices::Shape({1, 2}))
                                : Floats({1, 2}, devices::Shape({1, 2, 1})),
                          /*axis=*/1));
        return std::vector<Tensor>{gathered};
      });
  EXPECT_EQ(ranks.status().code(), absl::StatusCode::kInvalidArgument);
  // A vector against a matrix along axis 0 is refused too (vectors once
  // skipped the check and ran different collectives from the matrix).
  auto vector_and_matrix = s->Run(
      [](ReplicaContext& ctx,
         const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        const bool first = ctx.ReplicaIdInSyncGroup() == 0;
        CommunicationOptions quick;
        quick.timeout_seconds = 10;
        ASSIGN_OR_RETURN(
            auto gathered,
            ctx.AllGather(first ? Floats({1, 2}, devices::Shape({2}))
                                : Floats({1, 2}, devices::Shape({1, 2})),
                          /*axis=*/0, quick));
        return std::vector<Tensor>{gathered};
      });
  EXPECT_EQ(vector_and_matrix.status().code(),
            absl::StatusCode::kInvalidArgument)
      << vector_and_matrix.status();
  // A scalar gathers as a vector of one.
  auto scalars = s->Run(
      [](ReplicaContext& ctx,
         const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        const float r = static_cast<float>(ctx.ReplicaIdInSyncGroup());
        ASSIGN_OR_RETURN(auto gathered,
                         ctx.AllGather(ctx.ReplicaIdInSyncGroup() == 0
                                           ? Floats({r}, devices::Shape({}))
                                           : Floats({r}, devices::Shape({1})),
                                       /*axis=*/0));
        return std::vector<Tensor>{gathered};
      });
  ASSERT_TRUE(scalars.ok()) << scalars.status();
  EXPECT_EQ((*scalars)[0].value(0).ToVector<float>(),
            (std::vector<float>{0, 1}));
}

TEST(ReplicaContextTest, MergeCallRunsOnceInCrossReplicaContext) {
  auto platform = HostWith(3);
  auto s = *MirroredStrategy::Create(*platform, Cpus(3));
  std::atomic<int> merges{0};
  auto out = s->Run(
      [&](ReplicaContext& ctx,
          const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        float id = static_cast<float>(ctx.ReplicaIdInSyncGroup());
        return ctx.MergeCall(
            [&](Strategy& strategy, const std::vector<PerReplica>& args)
                -> absl::StatusOr<std::vector<RunArg>> {
              ++merges;
              EXPECT_TRUE(InCrossReplicaContext());
              ASSIGN_OR_RETURN(Tensor total,
                               strategy.Reduce(ReduceOp::kSum, args[0]));
              return std::vector<RunArg>{total, DistributedValues(args[0])};
            },
            {Floats({id}, devices::Shape({1}))});
      });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(merges.load(), 1);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ((*out)[0].value(r).data<float>()[0], 3);
    EXPECT_EQ((*out)[1].value(r).data<float>()[0], r);
  }
}

TEST(ReplicaContextTest, AFailingReplicaAbortsItsPeersCollectives) {
  auto platform = HostWith(4);
  for (std::shared_ptr<CrossDeviceOps> ops :
       std::vector<std::shared_ptr<CrossDeviceOps>>{
           std::make_shared<CollectiveAllReduce>(),
           std::make_shared<HierarchicalCopyAllReduce>(1)}) {
    auto s = *MirroredStrategy::Create(*platform, Cpus(4), ops);
    CommunicationOptions patient;
    patient.timeout_seconds = 600;  // A hang would show as a test timeout.
    // Replica 2 fails before the all-reduce its peers wait in: they fail
    // at once (UNAVAILABLE, naming it), and Run returns the cause's code.
    auto out = s->Run([&](ReplicaContext& ctx, const std::vector<Tensor>&)
                          -> absl::StatusOr<std::vector<Tensor>> {
      if (ctx.ReplicaIdInSyncGroup() == 2) {
        return absl::InvalidArgumentError("bad batch on replica 2");
      }
      ASSIGN_OR_RETURN(
          auto sum, ctx.AllReduce(ReduceOp::kSum,
                                  {Floats({1}, devices::Shape({1}))}, patient));
      return std::vector<Tensor>{sum[0]};
    });
    ASSERT_FALSE(out.ok()) << ops->name();
    EXPECT_EQ(out.status().code(), absl::StatusCode::kInvalidArgument)
        << ops->name() << ": " << out.status();
    EXPECT_NE(out.status().message().find("replica 0: UNAVAILABLE"),
              std::string::npos)
        << out.status();
    EXPECT_NE(out.status().message().find("bad batch on replica 2"),
              std::string::npos)
        << out.status();
    // The group was made anew: the strategy runs again.
    auto again = s->Run([](ReplicaContext& ctx, const std::vector<Tensor>&)
                            -> absl::StatusOr<std::vector<Tensor>> {
      ASSIGN_OR_RETURN(
          auto sum,
          ctx.AllReduce(ReduceOp::kSum, {Floats({1}, devices::Shape({1}))}));
      return std::vector<Tensor>{sum[0]};
    });
    ASSERT_TRUE(again.ok()) << ops->name() << ": " << again.status();
    for (int r = 0; r < 4; ++r) {
      EXPECT_EQ((*again)[0].value(r).ToVector<float>(),
                (std::vector<float>{4}));
    }
  }
}

TEST(ReplicaContextTest, MergeCallMissingOnOneReplicaFailsInsteadOfHanging) {
  auto platform = HostWith(2);
  auto s = *MirroredStrategy::Create(*platform, Cpus(2));
  auto out = s->Run(
      [&](ReplicaContext& ctx,
          const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        if (ctx.ReplicaIdInSyncGroup() == 1) return std::vector<Tensor>{};
        return ctx.MergeCall(
            [](Strategy&, const std::vector<PerReplica>&)
                -> absl::StatusOr<std::vector<RunArg>> {
              return std::vector<RunArg>{};
            },
            {});
      });
  EXPECT_EQ(out.status().code(), absl::StatusCode::kFailedPrecondition);
}

// CollectiveAllReduce(options) makes its options every call's defaults, as
// TF's CollectiveReplicaLauncher merges them: here a replica alone gives up
// at the constructor's timeout (which aborts the group), and on a fresh
// group a call's own timeout overrides it.
TEST(ReplicaContextTest, CollectiveAllReduceOptionsAreTheCallsDefaults) {
  auto platform = HostWith(2);
  CommunicationOptions quick;
  quick.timeout_seconds = 0.2;
  CollectiveAllReduce ops(quick);
  ASSERT_TRUE(ops.Bind(*platform, Cpus(2)).ok());
  auto alone = ops.ReplicaAllReduce(0, ReduceOp::kSum, {Floats({1}, {1})});
  EXPECT_EQ(alone.status().code(), absl::StatusCode::kDeadlineExceeded)
      << alone.status();
  CollectiveAllReduce fresh(quick);
  ASSERT_TRUE(fresh.Bind(*platform, Cpus(2)).ok());
  CommunicationOptions patient;
  patient.timeout_seconds = 60;
  std::vector<absl::StatusOr<std::vector<Tensor>>> out(
      2, absl::UnknownError("not run"));
  std::thread peer([&] {
    // Replica 1 comes later than the constructor's 0.2 s.
    absl::SleepFor(absl::Seconds(0.5));
    out[1] =
        fresh.ReplicaAllReduce(1, ReduceOp::kSum, {Floats({2}, {1})}, patient);
  });
  out[0] =
      fresh.ReplicaAllReduce(0, ReduceOp::kSum, {Floats({1}, {1})}, patient);
  peer.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(out[r].ok()) << r << ": " << out[r].status();
    EXPECT_EQ((*out[r])[0].ToVector<float>(), (std::vector<float>{3})) << r;
  }
}

// Without a timeout of the job's, a collective has no bound of its own (TF
// waits as long as the peers live; dead peers are found by heartbeats): a
// peer busy for minutes, say writing a checkpoint, must not fail the job.
TEST(ReplicaContextTest, WithoutATimeoutCollectivesHaveNoBoundOfTheirOwn) {
  EXPECT_EQ(CommunicationOptions().Timeout(), absl::InfiniteDuration());
  CommunicationOptions zero;
  zero.timeout_seconds = 0;  // TF: 0 or less means none.
  EXPECT_EQ(zero.Timeout(), absl::InfiniteDuration());
  CommunicationOptions bounded;
  bounded.timeout_seconds = 30;
  EXPECT_EQ(bounded.Timeout(), absl::Seconds(30));
}

TEST(StrategyTest, BadDevicesGetClearErrors) {
  auto platform = HostWith(2);
  EXPECT_EQ(
      MirroredStrategy::Create(*platform, {"/cpu:0", "/cpu:7"}).status().code(),
      absl::StatusCode::kNotFound);
  EXPECT_EQ(
      MirroredStrategy::Create(*platform, {"/cpu:0", "CPU:0"}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(OneDeviceStrategy::Create(*platform, "/gpu:0").status().code(),
            absl::StatusCode::kNotFound);
  auto nccl = MirroredStrategy::Create(*platform, Cpus(2),
                                       std::make_shared<NcclAllReduce>());
  EXPECT_EQ(nccl.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(
      MirroredStrategy::Create(*platform, Cpus(2),
                               std::make_shared<HierarchicalCopyAllReduce>(-1))
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

// TF's ReductionToOneDevice(reduce_to_device="/cpu:0") with replicas on
// other devices: the values go to CPU:0, are reduced there and come back.
TEST(StrategyTest, ReductionToADeviceThatRunsNoReplica) {
  auto platform = HostWith(4);
  auto ops = std::make_shared<ReductionToOneDevice>("/cpu:0");
  auto s =
      *MirroredStrategy::Create(*platform, {"/cpu:1", "/cpu:2", "/cpu:3"}, ops);
  for (int round = 0; round < 3; ++round) {
    auto out = s->Run([](ReplicaContext& ctx, const std::vector<Tensor>&)
                          -> absl::StatusOr<std::vector<Tensor>> {
      float id = static_cast<float>(ctx.ReplicaIdInSyncGroup());
      ASSIGN_OR_RETURN(auto sum,
                       ctx.AllReduce(ReduceOp::kSum,
                                     {Floats({id, 1}, devices::Shape({2}))}));
      ASSIGN_OR_RETURN(
          auto mean,
          ctx.AllReduce(ReduceOp::kMean, {Floats({id}, devices::Shape({1}))}));
      return std::vector<Tensor>{sum[0], mean[0]};
    });
    ASSERT_TRUE(out.ok()) << out.status();
    for (int r = 0; r < 3; ++r) {
      EXPECT_EQ((*out)[0].value(r).ToVector<float>(),
                (std::vector<float>{3, 3}));
      EXPECT_EQ((*out)[1].value(r).ToVector<float>(), (std::vector<float>{1}));
    }
  }
  // Cross-replica reductions too.
  auto per_replica = s->ExperimentalDistributeValuesFromFunction(
      [](const ValueContext& ctx) -> absl::StatusOr<Tensor> {
        return Floats({static_cast<float>(ctx.replica_id_in_sync_group())},
                      devices::Shape({1}));
      });
  ASSERT_TRUE(per_replica.ok()) << per_replica.status();
  auto total = s->Reduce(ReduceOp::kSum, *per_replica);
  ASSERT_TRUE(total.ok()) << total.status();
  EXPECT_EQ(total->ToVector<float>(), (std::vector<float>{3}));

  // CentralStorageStrategy reduces on the CPU, as TF's.
  auto c = *CentralStorageStrategy::Create(*platform, {"/cpu:1", "/cpu:2"});
  auto out = c->Run(
      [](ReplicaContext& ctx,
         const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        ASSIGN_OR_RETURN(
            auto sum,
            ctx.AllReduce(
                ReduceOp::kSum,
                {Floats({static_cast<float>(ctx.ReplicaIdInSyncGroup() + 1)},
                        devices::Shape({1}))}));
        return std::vector<Tensor>{sum[0]};
      });
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].value(1).ToVector<float>(), (std::vector<float>{3}));
}

TEST(StrategyTest, DefaultsFollowTf) {
  auto platform = HostWith(3);
  // No GPUs: MirroredStrategy takes the CPU, and ReductionToOneDevice.
  auto m = *MirroredStrategy::Create(*platform);
  EXPECT_EQ(
      m->extended().WorkerDevices(),
      std::vector<std::string>{"/job:localhost/replica:0/task:0/device:CPU:0"});
  EXPECT_EQ(m->extended().cross_device_ops().name(), "ReductionToOneDevice");
  auto c = *CentralStorageStrategy::Create(*platform, {"/cpu:1", "/cpu:2"});
  EXPECT_EQ(
      c->extended().ParameterDevices(),
      std::vector<std::string>{"/job:localhost/replica:0/task:0/device:CPU:0"});
  EXPECT_EQ(c->extended().WorkerDevices().size(), 2u);
}

TEST(StrategyTest, DistributeValuesFromFunction) {
  auto platform = HostWith(3);
  auto s = *MirroredStrategy::Create(*platform, Cpus(3));
  auto v = s->ExperimentalDistributeValuesFromFunction(
      [](const ValueContext& ctx) -> absl::StatusOr<Tensor> {
        return Floats({static_cast<float>(ctx.replica_id_in_sync_group() * 10 +
                                          ctx.num_replicas_in_sync())},
                      devices::Shape({1}));
      });
  ASSERT_TRUE(v.ok()) << v.status();
  EXPECT_EQ(v->value(2).data<float>()[0], 23);
  EXPECT_EQ(v->value(2).device(),
            "/job:localhost/replica:0/task:0/device:CPU:2");
}

TEST(StrategyTest, ExtendedReduceToAndBroadcastTo) {
  auto platform = HostWith(2);
  auto s = *MirroredStrategy::Create(*platform, Cpus(2));
  ScopeGuard scope = *s->Scope();
  PerReplica v({Floats({1, 2}, devices::Shape({2})),
                Floats({3, 4}, devices::Shape({2}))});
  Mirrored m = *s->extended().ReduceTo(ReduceOp::kSum, v);
  ASSERT_EQ(m.num_replicas(), 2);
  EXPECT_EQ(m.value(1).ToVector<float>(), (std::vector<float>{4, 6}));
  auto batch =
      s->extended().BatchReduceTo(ReduceOp::kMean, {{v, {"/cpu:1"}}, {v, {}}});
  ASSERT_TRUE(batch.ok()) << batch.status();
  EXPECT_EQ((*batch)[0].num_replicas(), 1);
  EXPECT_EQ((*batch)[0].value(0).ToVector<float>(), (std::vector<float>{2, 3}));
  Mirrored b = *s->extended().BroadcastTo(Floats({7}, devices::Shape({1})));
  EXPECT_EQ(b.value(1).data<float>()[0], 7);
  EXPECT_EQ(b.value(1).device(),
            "/job:localhost/replica:0/task:0/device:CPU:1");
}

}  // namespace
}  // namespace distribute
