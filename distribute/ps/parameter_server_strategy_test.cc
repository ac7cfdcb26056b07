// ParameterServerStrategy and ClusterCoordinator on a cluster of real gRPC
// servers on 127.0.0.1 (a coordinator in the test, 2 workers, 2 ps tasks).
#include "distribute/ps/parameter_server_strategy.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/input/dataset.h"
#include "distribute/input/input_context.h"
#include "distribute/partitioners.h"
#include "distribute/ps/cluster_coordinator.h"
#include "distribute/ps/coordinator_preemption.h"
#include "distribute/ps/per_worker_dataset.h"
#include "distribute/ps/per_worker_values.h"
#include "distribute/ps/ps_checkpoint.h"
#include "distribute/ps/ps_client.h"
#include "distribute/ps/test_cluster.h"
#include "distribute/server/server.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace ps {
namespace {

using devices::Shape;
using devices::Tensor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(60);

// A strategy over a cluster with an int64 variable "count" at 0, and a
// coordinator that tries failed workers again every 20 ms.
struct Counting {
  std::unique_ptr<ParameterServerStrategy> strategy;
  std::unique_ptr<ClusterCoordinator> coordinator;
};

Counting WithCount(Cluster& c) {
  Counting out;
  auto strategy = ParameterServerStrategy::Create(c.spec);
  EXPECT_TRUE(strategy.ok()) << strategy.status();
  if (!strategy.ok()) return out;
  absl::Status created =
      (*strategy)
          ->CreateVariable("count", *Tensor::FromVector<int64_t>({0}, Shape()))
          .status();
  EXPECT_TRUE(created.ok()) << created;
  ClusterCoordinatorOptions options;
  options.worker_retry_interval = absl::Milliseconds(20);
  auto coordinator = ClusterCoordinator::Create(**strategy, options);
  EXPECT_TRUE(coordinator.ok()) << coordinator.status();
  if (!created.ok() || !coordinator.ok()) return out;
  out.strategy = *std::move(strategy);
  out.coordinator = *std::move(coordinator);
  return out;
}

TEST(ParameterServerStrategyTest, VariablesGoRoundRobinOrInShards) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  StartAll(*c);
  ParameterServerStrategyOptions options;
  options.variable_partitioner = std::make_shared<FixedShardsPartitioner>(
      *FixedShardsPartitioner::Create(2));
  auto strategy = ParameterServerStrategy::Create(c->spec, options);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  EXPECT_EQ((*strategy)->num_workers(), 2);
  EXPECT_EQ((*strategy)->num_ps(), 2);

  // A scalar is never split: ps 0. A [5, 2] matrix in two shards of 3 and 2
  // rows: ps 1 and ps 0. The next scalar: ps 1.
  auto a = (*strategy)->CreateVariable(
      "a", *Tensor::FromVector<float>({1}, Shape()));
  ASSERT_TRUE(a.ok()) << a.status();
  auto m = (*strategy)->CreateVariable(
      "m", Floats({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, Shape({5, 2})));
  ASSERT_TRUE(m.ok()) << m.status();
  auto b = (*strategy)->CreateVariable(
      "b", *Tensor::FromVector<float>({2}, Shape()));
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_EQ(a->shards.size(), 1u);
  EXPECT_EQ(a->shards[0].ps, 0);
  ASSERT_EQ(m->shards.size(), 2u);
  EXPECT_EQ(m->shards[0].ps, 1);
  EXPECT_EQ(m->shards[0].rows, 3);
  EXPECT_EQ(m->shards[1].ps, 0);
  EXPECT_EQ(m->shards[1].offset, 3);
  EXPECT_EQ(b->shards[0].ps, 1);
  EXPECT_EQ(c->stores[0]->size(), 2);
  EXPECT_EQ(c->stores[1]->size(), 2);

  PsClient& client = (*strategy)->client();
  EXPECT_EQ(client.Read("m")->ToVector<float>(),
            (std::vector<float>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  ASSERT_TRUE(
      client
          .AssignAdd("m", Floats({1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, Shape({5, 2})))
          .ok());
  EXPECT_EQ(client.Read("m")->ToVector<float>(),
            (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}));
  ASSERT_TRUE(
      client.Assign("a", *Tensor::FromVector<float>({7}, Shape())).ok());
  EXPECT_EQ(client.Read("a")->ToVector<float>(), (std::vector<float>{7}));

  // Errors.
  EXPECT_EQ(
      (*strategy)->CreateVariable("m", Floats({1}, Shape({1}))).status().code(),
      absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(client.Read("nothing").status().code(),
            absl::StatusCode::kNotFound);
  absl::Status shape = client.AssignAdd("a", Floats({1, 2}, Shape({2})));
  EXPECT_EQ(shape.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(client.AssignAdd("m", Floats({1, 2}, Shape({1, 2}))).code(),
            absl::StatusCode::kInvalidArgument);
}

// TF's embedding_lookup on a sharded variable: rows come from the shards
// that hold them, and only from those (with the other shard's ps task gone,
// its rows fail and the rest still come); assign_sub subtracts.
TEST(ParameterServerStrategyTest, RowLookupsAskOnlyTheShardsThatHoldThem) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  StartAll(*c);
  ParameterServerStrategyOptions options;
  options.variable_partitioner = std::make_shared<FixedShardsPartitioner>(
      *FixedShardsPartitioner::Create(2));
  auto strategy = ParameterServerStrategy::Create(c->spec, options);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  // [5, 2] in two shards: rows 0-2 on ps 0, rows 3-4 on ps 1.
  auto m = (*strategy)->CreateVariable(
      "m", Floats({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, Shape({5, 2})));
  ASSERT_TRUE(m.ok()) << m.status();
  PsClient& client = (*strategy)->client();

  auto rows = client.Gather("m", Tensor::FromVector<int64_t>({4, 0, 3, 3}));
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ(rows->shape(), Shape({4, 2}));
  EXPECT_EQ(rows->ToVector<float>(),
            (std::vector<float>{8, 9, 0, 1, 6, 7, 6, 7}));
  // int32 ids of any shape: the result is ids.shape + the row shape.
  auto grid = client.Gather(
      "m", *Tensor::FromVector<int32_t>({1, 2, 3, 4}, Shape({2, 2})));
  ASSERT_TRUE(grid.ok()) << grid.status();
  EXPECT_EQ(grid->shape(), Shape({2, 2, 2}));
  EXPECT_EQ(grid->ToVector<float>(),
            (std::vector<float>{2, 3, 4, 5, 6, 7, 8, 9}));
  auto none = client.Gather("m", Tensor::FromVector<int64_t>({}));
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->shape(), Shape({0, 2}));

  // assign_sub, shard by shard.
  ASSERT_TRUE(
      client
          .AssignSub("m", Floats({1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, Shape({5, 2})))
          .ok());
  EXPECT_EQ(client.Read("m")->ToVector<float>(),
            (std::vector<float>{-1, 0, 1, 2, 3, 4, 5, 6, 7, 8}));

  // Errors: ids outside the rows, of another dtype, a scalar variable.
  absl::StatusOr<Tensor> outside =
      client.Gather("m", Tensor::FromVector<int64_t>({1, 5}));
  EXPECT_EQ(outside.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(outside.status().message()),
              HasSubstr("id 5 (at 1) is not a row of variable \"m\", which "
                        "has 5 rows"));
  EXPECT_EQ(client.Gather("m", Floats({1}, Shape({1}))).status().code(),
            absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE(
      (*strategy)
          ->CreateVariable("s", *Tensor::FromVector<float>({1}, Shape()))
          .ok());
  EXPECT_EQ(
      client.Gather("s", Tensor::FromVector<int64_t>({0})).status().code(),
      absl::StatusCode::kInvalidArgument);

  // Without ps 1 (rows 3-4), rows 0-2 still come: only ps 0 is asked.
  EXPECT_EQ(m->shards[0].ps, 0);
  EXPECT_EQ(m->shards[1].ps, 1);
  c->ps[1]->Stop();
  auto first_rows = client.Gather("m", Tensor::FromVector<int64_t>({2, 0}));
  ASSERT_TRUE(first_rows.ok()) << first_rows.status();
  EXPECT_EQ(first_rows->ToVector<float>(), (std::vector<float>{3, 4, -1, 0}));
  EXPECT_FALSE(client.Gather("m", Tensor::FromVector<int64_t>({3})).ok());
}

TEST(ParameterServerStrategyTest, BadClustersAreInvalidArgument) {
  auto no_ps = cluster::ClusterSpec::Create({{"worker", {"127.0.0.1:1"}}});
  ASSERT_TRUE(no_ps.ok());
  absl::Status missing = ParameterServerStrategy::Create(*no_ps).status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.message(), HasSubstr("\"ps\" job"));
  auto no_workers = cluster::ClusterSpec::Create({{"ps", {"127.0.0.1:1"}}});
  ASSERT_TRUE(no_workers.ok());
  EXPECT_EQ(ParameterServerStrategy::Create(*no_workers).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ClusterCoordinatorTest,
     ScheduledCallsRunOnTheWorkersAndUpdateTheVariables) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  OnEveryWorker(*c, "add_one",
                [](PsClient& ps,
                   std::vector<Tensor>) -> absl::StatusOr<std::vector<Tensor>> {
                  RETURN_IF_ERROR(ps.AssignAdd(
                      "count", *Tensor::FromVector<int64_t>({1}, Shape())));
                  return std::vector<Tensor>{Tensor::FromVector<int32_t>({1})};
                });
  StartAll(*c);
  auto strategy = ParameterServerStrategy::Create(c->spec);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  ASSERT_TRUE(
      (*strategy)
          ->CreateVariable("count", *Tensor::FromVector<int64_t>({0}, Shape()))
          .ok());
  auto coordinator = ClusterCoordinator::Create(**strategy);
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  std::vector<RemoteValue> values;
  for (int i = 0; i < 40; ++i) {
    auto v = (*coordinator)->Schedule("add_one", {});
    ASSERT_TRUE(v.ok()) << v.status();
    values.push_back(*v);
  }
  ASSERT_TRUE((*coordinator)->Join(absl::Seconds(60)).ok());
  EXPECT_TRUE((*coordinator)->Done());
  for (const RemoteValue& v : values) {
    absl::StatusOr<std::vector<Tensor>> out = v.Fetch(kWait);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT((*out)[0].ToVector<int32_t>(), ElementsAre(1));
  }
  EXPECT_THAT((*strategy)->client().Read("count")->ToVector<int64_t>(),
              ElementsAre(40));
}

TEST(ClusterCoordinatorTest, CallsOfAWorkerThatIsGoneRunOnTheOthers) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  // The calls wait until worker 1's thread has met its stopped worker, so
  // that some call surely goes back to the queue.
  std::atomic<ClusterCoordinator*> running{nullptr};
  OnEveryWorker(
      *c, "add_one",
      [&running](PsClient& ps,
                 std::vector<Tensor>) -> absl::StatusOr<std::vector<Tensor>> {
        const absl::Time until = absl::Now() + absl::Seconds(10);
        while ((running.load() == nullptr ||
                running.load()->calls_rescheduled() == 0) &&
               absl::Now() < until) {
          absl::SleepFor(absl::Milliseconds(1));
        }
        RETURN_IF_ERROR(
            ps.AssignAdd("count", *Tensor::FromVector<int64_t>({1}, Shape())));
        return std::vector<Tensor>{};
      });
  StartAll(*c);
  c->workers[1]->Stop();  // Preempted.
  Counting counting = WithCount(*c);
  ASSERT_NE(counting.coordinator, nullptr);
  auto* strategy = &counting.strategy;
  auto* coordinator = &counting.coordinator;
  running = coordinator->get();
  for (int i = 0; i < 30; ++i) {
    ASSERT_TRUE((*coordinator)->Schedule("add_one", {}).ok());
  }
  ASSERT_TRUE((*coordinator)->Join(absl::Seconds(60)).ok());
  // Every call ran exactly once, all of them on worker 0.
  EXPECT_THAT((*strategy)->client().Read("count")->ToVector<int64_t>(),
              ElementsAre(30));
  EXPECT_GE((*coordinator)->calls_rescheduled(), 1);
}

TEST(ClusterCoordinatorTest, AFailedCallCancelsTheQueueAndIsReturnedOnce) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  absl::Notification release;
  OnEveryWorker(
      *c, "fail",
      [&](PsClient&,
          std::vector<Tensor>) -> absl::StatusOr<std::vector<Tensor>> {
        release.WaitForNotificationWithTimeout(absl::Seconds(30));
        return absl::FailedPreconditionError("bad batch");
      });
  OnEveryWorker(*c, "ok",
                [](PsClient&,
                   std::vector<Tensor>) -> absl::StatusOr<std::vector<Tensor>> {
                  return std::vector<Tensor>{};
                });
  StartAll(*c);
  auto strategy = ParameterServerStrategy::Create(c->spec);
  ASSERT_TRUE(strategy.ok());
  auto coordinator = ClusterCoordinator::Create(**strategy);
  ASSERT_TRUE(coordinator.ok());
  // Both workers block in "fail"; the "ok" calls wait in the queue.
  auto f1 = (*coordinator)->Schedule("fail", {});
  auto f2 = (*coordinator)->Schedule("fail", {});
  std::vector<RemoteValue> queued;
  for (int i = 0; i < 5; ++i)
    queued.push_back(*(*coordinator)->Schedule("ok", {}));
  ASSERT_TRUE(f1.ok() && f2.ok());
  EXPECT_FALSE((*coordinator)->Done());
  release.Notify();
  absl::Status joined = (*coordinator)->Join(absl::Seconds(60));
  EXPECT_EQ(joined, absl::FailedPreconditionError("bad batch"));
  EXPECT_EQ(f1->Fetch(kWait).status(),
            absl::FailedPreconditionError("bad batch"));
  int cancelled = 0;
  for (const RemoteValue& v : queued) {
    if (absl::IsCancelled(v.Fetch(kWait).status())) ++cancelled;
  }
  EXPECT_GE(cancelled, 4);  // At most one "ok" ran before the failure.
  // Returned once: the coordinator goes on.
  EXPECT_TRUE((*coordinator)->Join(absl::Seconds(1)).ok());
  auto after = (*coordinator)->Schedule("ok", {});
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(after->Fetch(kWait).ok());

  // An error not yet joined comes back from Schedule.
  ASSERT_TRUE((*coordinator)->Schedule("fail", {}).ok());
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (!(*coordinator)->Done() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  EXPECT_EQ((*coordinator)->Schedule("ok", {}).status(),
            absl::FailedPreconditionError("bad batch"));
  EXPECT_TRUE((*coordinator)->Join(absl::Seconds(1)).ok());
}

TEST(ClusterCoordinatorTest, APsTaskThatIsGoneFailsTheCallsThatNeedIt) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  OnEveryWorker(*c, "read_b",
                [](PsClient& ps,
                   std::vector<Tensor>) -> absl::StatusOr<std::vector<Tensor>> {
                  ASSIGN_OR_RETURN(Tensor b, ps.Read("b"));
                  return std::vector<Tensor>{b};
                });
  StartAll(*c);
  auto strategy = ParameterServerStrategy::Create(c->spec);
  ASSERT_TRUE(strategy.ok());
  ASSERT_TRUE(
      (*strategy)->CreateVariable("a", Floats({1}, Shape({1}))).ok());  // ps 0
  ASSERT_TRUE(
      (*strategy)->CreateVariable("b", Floats({2}, Shape({1}))).ok());  // ps 1
  c->ps[1]->Stop();
  auto coordinator = ClusterCoordinator::Create(**strategy);
  ASSERT_TRUE(coordinator.ok());
  auto v = (*coordinator)->Schedule("read_b", {});
  ASSERT_TRUE(v.ok());
  absl::Status joined = (*coordinator)->Join(absl::Seconds(60));
  EXPECT_EQ(joined.code(), absl::StatusCode::kUnavailable) << joined;
  EXPECT_EQ(v->Fetch(kWait).status().code(), absl::StatusCode::kUnavailable);
}

TEST(ClusterCoordinatorTest, JoinIsBoundedAndUnknownFunctionsFail) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  absl::Notification release;
  OnEveryWorker(
      *c, "slow",
      [&](PsClient&,
          std::vector<Tensor>) -> absl::StatusOr<std::vector<Tensor>> {
        release.WaitForNotificationWithTimeout(absl::Seconds(30));
        return std::vector<Tensor>{};
      });
  StartAll(*c);
  auto strategy = ParameterServerStrategy::Create(c->spec);
  ASSERT_TRUE(strategy.ok());
  auto coordinator = ClusterCoordinator::Create(**strategy);
  ASSERT_TRUE(coordinator.ok());
  ASSERT_TRUE((*coordinator)->Schedule("slow", {}).ok());
  absl::Status late = (*coordinator)->Join(absl::Milliseconds(100));
  EXPECT_EQ(late.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(late.message(), HasSubstr("running after"));
  release.Notify();
  ASSERT_TRUE((*coordinator)->Join(absl::Seconds(30)).ok());

  auto unknown = (*coordinator)->Schedule("no_such_function", {});
  ASSERT_TRUE(unknown.ok());
  EXPECT_EQ(unknown->Fetch(kWait).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ((*coordinator)->Join(absl::Seconds(30)).code(),
            absl::StatusCode::kNotFound);
}

TEST(ClusterCoordinatorTest, AWorkerStoppingUnderACallHasItRunAgain) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  std::atomic<int> on_worker1{0};
  for (int w = 0; w < kWorkers; ++w) {
    ASSERT_TRUE(RegisterWorkerFunction(
                    *c->workers[static_cast<size_t>(w)], "add_one",
                    [w, &on_worker1](PsClient& ps, std::vector<Tensor>)
                        -> absl::StatusOr<std::vector<Tensor>> {
                      if (w == 1) {
                        // Still running when its server stops (which cancels
                        // the call after 50 ms), then updates anyway.
                        on_worker1.fetch_add(1);
                        absl::SleepFor(absl::Milliseconds(300));
                      }
                      RETURN_IF_ERROR(ps.AssignAdd(
                          "count", *Tensor::FromVector<int64_t>({1}, Shape())));
                      return std::vector<Tensor>{};
                    })
                    .ok());
  }
  StartAll(*c);
  Counting counting = WithCount(*c);
  ASSERT_NE(counting.coordinator, nullptr);
  auto* strategy = &counting.strategy;
  auto* coordinator = &counting.coordinator;
  std::vector<RemoteValue> values;
  for (int i = 0; i < 20; ++i) {
    values.push_back(*(*coordinator)->Schedule("add_one", {}));
  }
  const absl::Time until = absl::Now() + absl::Seconds(10);
  while (on_worker1.load() == 0 && absl::Now() < until) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_GT(on_worker1.load(), 0);
  c->workers[1]->Stop();
  ASSERT_TRUE((*coordinator)->Join(kWait).ok());
  for (const RemoteValue& v : values) EXPECT_TRUE(v.Fetch(kWait).ok());
  EXPECT_GE((*coordinator)->calls_rescheduled(), 1);
  // At least once: the call cut off on worker 1 ran again on worker 0, and
  // worker 1's run may have updated the count too.
  const int64_t count =
      (*strategy)->client().Read("count")->ToVector<int64_t>()[0];
  EXPECT_GE(count, 20);
  EXPECT_LE(count, 20 + on_worker1.load());
}

TEST(ClusterCoordinatorTest, NoWorkerMeansJoinTimesOutSayingWhy) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  StartAll(*c);
  for (auto& w : c->workers) w->Stop();
  auto strategy = ParameterServerStrategy::Create(c->spec);
  ASSERT_TRUE(strategy.ok());
  ClusterCoordinatorOptions options;
  options.worker_retry_interval = absl::Milliseconds(20);
  auto coordinator = ClusterCoordinator::Create(**strategy, options);
  ASSERT_TRUE(coordinator.ok());
  auto queued = (*coordinator)->Schedule("anything", {});
  ASSERT_TRUE(queued.ok());
  absl::Status late = (*coordinator)->Join(absl::Milliseconds(300));
  EXPECT_EQ(late.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(late.message(), HasSubstr("because their worker failed"));
  EXPECT_EQ(queued->Fetch(absl::Milliseconds(1)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
  // Destroying the coordinator cancels what is still queued.
  coordinator->reset();
  EXPECT_EQ(queued->Fetch(kWait).status().code(), absl::StatusCode::kCancelled);
}

TEST(ParameterServerStrategyTest, PartitionersMaySplitTheFirstAxisOnly) {
  // A partitioner that splits the last axis.
  class Columns : public Partitioner {
   public:
    absl::StatusOr<std::vector<int64_t>> operator()(const Shape& shape,
                                                    devices::DType,
                                                    int) const override {
      std::vector<int64_t> parts(static_cast<size_t>(shape.rank()), 1);
      parts.back() = shape.dims().back();
      return parts;
    }
  };
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  StartAll(*c);
  ParameterServerStrategyOptions options;
  options.variable_partitioner = std::make_shared<Columns>();
  auto strategy = ParameterServerStrategy::Create(c->spec, options);
  ASSERT_TRUE(strategy.ok());
  absl::Status columns =
      (*strategy)
          ->CreateVariable("w", Floats({1, 2, 3, 4}, Shape({1, 4})))
          .status();
  EXPECT_EQ(columns.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(columns.message(), HasSubstr("first axis only"));
  EXPECT_EQ(c->stores[0]->size() + c->stores[1]->size(), 0);
}

// Asynchronous SGD: workers fit y = 3x + 2 on batches of their own, each
// reading the weights from the ps tasks and adding its step, with no
// coordination between them.
TEST(ClusterCoordinatorTest, AsynchronousTrainingConverges) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  OnEveryWorker(
      *c, "sgd_step",
      [](PsClient& ps,
         std::vector<Tensor> args) -> absl::StatusOr<std::vector<Tensor>> {
        ASSIGN_OR_RETURN(Tensor w, ps.Read("w"));
        ASSIGN_OR_RETURN(Tensor b, ps.Read("b"));
        const float wv = w.data<float>()[0], bv = b.data<float>()[0];
        std::mt19937 rng(static_cast<uint32_t>(args[0].data<int32_t>()[0]));
        std::uniform_real_distribution<float> x(-1, 1);
        float gw = 0, gb = 0;
        constexpr int kBatch = 16;
        for (int i = 0; i < kBatch; ++i) {
          const float xi = x(rng);
          const float err = wv * xi + bv - (3 * xi + 2);
          gw += 2 * err * xi / kBatch;
          gb += 2 * err / kBatch;
        }
        constexpr float kRate = 0.2f;
        absl::Status s = ps.AssignAdd("w", Floats({-kRate * gw}, Shape({1})));
        if (s.ok()) s = ps.AssignAdd("b", Floats({-kRate * gb}, Shape({1})));
        RETURN_IF_ERROR(s);
        return std::vector<Tensor>{};
      });
  StartAll(*c);
  auto strategy = ParameterServerStrategy::Create(c->spec);
  ASSERT_TRUE(strategy.ok());
  ASSERT_TRUE((*strategy)->CreateVariable("w", Floats({0}, Shape({1}))).ok());
  ASSERT_TRUE((*strategy)->CreateVariable("b", Floats({0}, Shape({1}))).ok());
  auto coordinator = ClusterCoordinator::Create(**strategy);
  ASSERT_TRUE(coordinator.ok());
  for (int step = 0; step < 150; ++step) {
    ASSERT_TRUE(
        (*coordinator)
            ->Schedule("sgd_step", {Tensor::FromVector<int32_t>({step})})
            .ok());
  }
  ASSERT_TRUE((*coordinator)->Join(absl::Seconds(120)).ok());
  const float w = (*strategy)->client().Read("w")->data<float>()[0];
  const float b = (*strategy)->client().Read("b")->data<float>()[0];
  EXPECT_NEAR(w, 3.0f, 0.05f);
  EXPECT_NEAR(b, 2.0f, 0.05f);
}

std::string TmpPath(const std::string& name) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  return absl::StrCat(tmp == nullptr ? "/tmp" : tmp, "/", name);
}

// Replaces ps task `t` by a new server at the same address, with no
// variables (a ps task that restarted).
void RestartPs(Cluster& c, int t) {
  c.ps[static_cast<size_t>(t)]->Stop();
  ASSERT_TRUE(MakePs(c, t));
  ASSERT_TRUE(c.ps[static_cast<size_t>(t)]->Start().ok());
}

// The coordinator's preemption (TF's PreemptionCheckpointHandler under
// ParameterServerStrategy): told to stop after 3 steps, it waits for the
// scheduled functions, saves the variables and the steps, and stops; a new
// coordinator over a cluster whose ps task restarted empty resumes at step
// 3 with the saved values, and ends where an uninterrupted run ends.
TEST(CoordinatorPreemptionTest, TheCoordinatorSavesAndResumes) {
  const char* tmp = std::getenv("TEST_TMPDIR");
  const std::string dir =
      std::string(tmp == nullptr ? "/tmp" : tmp) + "/coordinator_ckpt";
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  OnEveryWorker(*c, "add_one",
                [](PsClient& ps,
                   std::vector<Tensor>) -> absl::StatusOr<std::vector<Tensor>> {
                  RETURN_IF_ERROR(ps.AssignAdd(
                      "count", *Tensor::FromVector<int64_t>({1}, Shape())));
                  return std::vector<Tensor>{};
                });
  StartAll(*c);
  auto strategy = ParameterServerStrategy::Create(c->spec);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  ASSERT_TRUE(
      (*strategy)
          ->CreateVariable("count", *Tensor::FromVector<int64_t>({0}, Shape()))
          .ok());
  auto coordinator = ClusterCoordinator::Create(**strategy);
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  int runs = 0, exits = 0;
  TerminationConfig config;
  config.termination_watcher = [&] { return runs >= 3; };
  config.exit_fn = [&] { ++exits; };
  auto handler = CoordinatorPreemptionHandler::Create(**strategy, **coordinator,
                                                      {"count"}, dir, config);
  ASSERT_TRUE(handler.ok()) << handler.status();
  EXPECT_FALSE((*handler)->restored_from().has_value());
  absl::Status status;
  for (int64_t step = (*handler)->total_run_calls(); step < 10 && status.ok();
       ++step) {
    status = (*handler)->Run([&] {
      ++runs;
      return (*coordinator)->Schedule("add_one", {}).status();
    });
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kAborted) << status;
  EXPECT_EQ(exits, 1);
  EXPECT_EQ((*handler)->total_run_calls(), 3);
  ASSERT_TRUE((*handler)->saved_to().has_value());
  EXPECT_THAT(*(*handler)->saved_to(), HasSubstr("coordinator_ckpt/ps-3"));
  coordinator->reset();

  // The ps task restarts without its variables.
  c->ps[0]->Stop();
  c->ps[0].reset();
  ASSERT_TRUE(MakePs(*c, 0));
  ASSERT_TRUE(c->ps[0]->Start().ok());
  auto again = ParameterServerStrategy::Create(c->spec);
  ASSERT_TRUE(again.ok()) << again.status();
  auto resumed_coordinator = ClusterCoordinator::Create(**again);
  ASSERT_TRUE(resumed_coordinator.ok()) << resumed_coordinator.status();
  TerminationConfig never;
  never.termination_watcher = [] { return false; };
  auto resumed = CoordinatorPreemptionHandler::Create(
      **again, **resumed_coordinator, {"count"}, dir, never);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ((*resumed)->total_run_calls(), 3);
  EXPECT_EQ((*again)->client().Read("count")->ToVector<int64_t>(),
            (std::vector<int64_t>{3}));
  for (int64_t step = (*resumed)->total_run_calls(); step < 10; ++step) {
    ASSERT_TRUE(
        (*resumed)
            ->Run([&] {
              return (*resumed_coordinator)->Schedule("add_one", {}).status();
            })
            .ok());
  }
  ASSERT_TRUE((*resumed_coordinator)->Join(kWait).ok());
  EXPECT_EQ((*again)->client().Read("count")->ToVector<int64_t>(),
            (std::vector<int64_t>{10}));

  EXPECT_EQ(CoordinatorPreemptionHandler::Create(**again, **resumed_coordinator,
                                                 {}, dir)
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// TF's create_per_worker_dataset and iter(): every worker reads its own
// pipeline (its shard, in order) through the iterator the coordinator hands
// to the functions; a second iterator starts each worker over; a worker
// that restarts makes its iterator again from the start.
TEST(PerWorkerDatasetTest, EachWorkerReadsItsOwnPipeline) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  absl::Mutex mu;
  std::vector<std::vector<int64_t>> seen(kWorkers);
  auto install = [&](Server& server) {
    ASSERT_TRUE(
        RegisterWorkerDataset(
            server, "numbers",
            [](const InputContext& ctx) -> absl::StatusOr<data::Dataset> {
              return data::Dataset::Range(100).Shard(ctx.num_input_pipelines(),
                                                     ctx.input_pipeline_id());
            })
            .ok());
    Server* self = &server;
    ASSERT_TRUE(RegisterWorkerFunction(
                    server, "take",
                    [self, &mu, &seen](PsClient&, std::vector<Tensor> args)
                        -> absl::StatusOr<std::vector<Tensor>> {
                      ASSIGN_OR_RETURN(std::optional<data::Element> next,
                                       NextElement(*self, args[0]));
                      if (!next.has_value()) return std::vector<Tensor>{};
                      absl::MutexLock lock(&mu);
                      seen[static_cast<size_t>(self->task_index())].push_back(
                          (*next)[0].data<int64_t>()[0]);
                      return std::vector<Tensor>{};
                    })
                    .ok());
  };
  for (auto& w : c->workers) install(*w);
  StartAll(*c);
  auto strategy = ParameterServerStrategy::Create(c->spec);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  auto coordinator = ClusterCoordinator::Create(**strategy);
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  // Each worker's elements: its shard, in order, from the start.
  auto expect_in_order = [&](int64_t first_of_1) {
    absl::MutexLock lock(&mu);
    for (int w = 0; w < kWorkers; ++w) {
      const int64_t start = w == 1 ? first_of_1 : w;
      for (size_t i = 0; i < seen[static_cast<size_t>(w)].size(); ++i) {
        EXPECT_EQ(seen[static_cast<size_t>(w)][i],
                  start + kWorkers * static_cast<int64_t>(i))
            << "worker " << w << " element " << i;
      }
    }
  };
  auto it = PerWorkerIterator::Create("numbers");
  ASSERT_TRUE(it.ok()) << it.status();
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE((*coordinator)->Schedule("take", {it->handle()}).ok());
  }
  ASSERT_TRUE((*coordinator)->Join(kWait).ok());
  expect_in_order(1);
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(seen[0].size() + seen[1].size(), 20u);
    seen.assign(kWorkers, {});
  }
  // A new iterator: every worker from its start again.
  auto again = PerWorkerIterator::Create("numbers");
  ASSERT_TRUE(again.ok()) << again.status();
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE((*coordinator)->Schedule("take", {again->handle()}).ok());
  }
  ASSERT_TRUE((*coordinator)->Join(kWait).ok());
  expect_in_order(1);

  // Worker 1 restarts: it makes the iterator again, from its start, while
  // worker 0 goes on. (Calls are scheduled until worker 1 has taken one.)
  auto until_worker_1_takes = [&](const PerWorkerIterator& iterator) {
    for (int round = 0; round < 100; ++round) {
      ASSERT_TRUE((*coordinator)->Schedule("take", {iterator.handle()}).ok());
      ASSERT_TRUE((*coordinator)->Join(kWait).ok());
      absl::MutexLock lock(&mu);
      if (!seen[1].empty()) return;
    }
    FAIL() << "worker 1 took no call in 100 rounds";
  };
  until_worker_1_takes(*again);
  c->workers[1]->Stop();
  auto restarted = Server::Create(c->spec, "worker", 1);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  c->workers[1] = *std::move(restarted);
  install(*c->workers[1]);
  ASSERT_TRUE(c->workers[1]->Start().ok());
  {
    absl::MutexLock lock(&mu);
    seen.assign(kWorkers, {});
  }
  until_worker_1_takes(*again);
  {
    absl::MutexLock lock(&mu);
    EXPECT_EQ(seen[1][0], 1);
  }

  // A dataset no worker has fails the function that reads it.
  auto unknown = PerWorkerIterator::Create("nothing");
  ASSERT_TRUE(unknown.ok());
  ASSERT_TRUE((*coordinator)->Schedule("take", {unknown->handle()}).ok());
  absl::Status joined = (*coordinator)->Join(kWait);
  EXPECT_EQ(joined.code(), absl::StatusCode::kNotFound) << joined;
  EXPECT_THAT(std::string(joined.message()),
              HasSubstr("no dataset \"nothing\""));
  EXPECT_EQ(PerWorkerIterator::Create("").status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Per-worker values (TF's PerWorkerValues of per-worker resources): every
// worker counts the calls it ran in its own value, made on its first use;
// a restarted worker makes its value again; a new PerWorkerValues starts
// from new values.
TEST(PerWorkerValuesTest, EachWorkerUpdatesItsOwnValue) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  absl::Mutex mu;
  std::vector<int> made(kWorkers, 0);
  auto install = [&](Server& server) {
    ASSERT_TRUE(RegisterWorkerValue(
                    server, "calls",
                    [&](const InputContext& ctx)
                        -> absl::StatusOr<std::vector<Tensor>> {
                      absl::MutexLock lock(&mu);
                      ++made[static_cast<size_t>(ctx.input_pipeline_id())];
                      // The worker's index, then its count.
                      return std::vector<Tensor>{Tensor::FromVector<int64_t>(
                          {ctx.input_pipeline_id(), 0})};
                    })
                    .ok());
    Server* self = &server;
    ASSERT_TRUE(
        RegisterWorkerFunction(server, "count",
                               [self](PsClient&, std::vector<Tensor> args)
                                   -> absl::StatusOr<std::vector<Tensor>> {
                                 ASSIGN_OR_RETURN(std::vector<Tensor> value,
                                                  LocalValue(*self, args[0]));
                                 // In place: later calls on this worker see it.
                                 int64_t* v = value[0].data<int64_t>();
                                 v[1] += 1;
                                 return std::vector<Tensor>{
                                     Tensor::FromVector<int64_t>({v[0], v[1]})};
                               })
            .ok());
  };
  for (auto& w : c->workers) install(*w);
  StartAll(*c);
  auto strategy = ParameterServerStrategy::Create(c->spec);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  auto coordinator = ClusterCoordinator::Create(**strategy);
  ASSERT_TRUE(coordinator.ok()) << coordinator.status();
  auto calls = PerWorkerValues::Create("calls");
  ASSERT_TRUE(calls.ok()) << calls.status();
  // Each worker's counts go 1, 2, 3, ... in its own value.
  auto run = [&](const PerWorkerValues& values, int n) {
    std::vector<RemoteValue> results;
    for (int i = 0; i < n; ++i) {
      auto r = (*coordinator)->Schedule("count", {values.handle()});
      EXPECT_TRUE(r.ok()) << r.status();
      if (r.ok()) results.push_back(*r);
    }
    EXPECT_TRUE((*coordinator)->Join(kWait).ok());
    std::vector<std::vector<int64_t>> counts(kWorkers);
    for (const RemoteValue& r : results) {
      auto out = r.Get();
      EXPECT_TRUE(out.ok()) << out.status();
      if (!out.ok()) continue;
      const int64_t* v = (*out)[0].data<int64_t>();
      counts[static_cast<size_t>(v[0])].push_back(v[1]);
    }
    return counts;
  };
  std::vector<std::vector<int64_t>> counts = run(*calls, 20);
  size_t total = 0;
  for (auto& worker : counts) {
    std::sort(worker.begin(), worker.end());
    for (size_t i = 0; i < worker.size(); ++i) {
      EXPECT_EQ(worker[i], static_cast<int64_t>(i) + 1);
    }
    total += worker.size();
  }
  EXPECT_EQ(total, 20u);
  {
    absl::MutexLock lock(&mu);
    for (int w = 0; w < kWorkers; ++w) {
      // Made once on each worker that ran a call.
      EXPECT_EQ(made[static_cast<size_t>(w)],
                counts[static_cast<size_t>(w)].empty() ? 0 : 1);
    }
  }
  // New values start again from a new value on each worker.
  auto fresh = PerWorkerValues::Create("calls");
  ASSERT_TRUE(fresh.ok());
  counts = run(*fresh, 4);
  for (auto& worker : counts) {
    std::sort(worker.begin(), worker.end());
    if (!worker.empty()) {
      EXPECT_EQ(worker[0], 1);
    }
  }
  // Worker 0 restarts: its value of `calls` is made again, from 0.
  c->workers[0]->Stop();
  auto restarted = Server::Create(c->spec, "worker", 0);
  ASSERT_TRUE(restarted.ok()) << restarted.status();
  c->workers[0] = *std::move(restarted);
  install(*c->workers[0]);
  ASSERT_TRUE(c->workers[0]->Start().ok());
  bool worker_0_ran = false;
  for (int round = 0; round < 100 && !worker_0_ran; ++round) {
    counts = run(*calls, 1);
    if (!counts[0].empty()) {
      worker_0_ran = true;
      EXPECT_EQ(counts[0][0], 1);
    }
  }
  EXPECT_TRUE(worker_0_ran);

  // Values no worker can make fail the function that uses them.
  auto unknown = PerWorkerValues::Create("nothing");
  ASSERT_TRUE(unknown.ok());
  ASSERT_TRUE((*coordinator)->Schedule("count", {unknown->handle()}).ok());
  absl::Status joined = (*coordinator)->Join(kWait);
  EXPECT_EQ(joined.code(), absl::StatusCode::kNotFound) << joined;
  EXPECT_THAT(std::string(joined.message()),
              HasSubstr("no value function \"nothing\""));
  ASSERT_TRUE((*coordinator)
                  ->Schedule("count", {Tensor::FromVector<int64_t>({1})})
                  .ok());
  EXPECT_EQ((*coordinator)->Join(kWait).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PerWorkerValues::Create("").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RegisterWorkerValue(
                *c->workers[1], "calls",
                [](const InputContext&) -> absl::StatusOr<std::vector<Tensor>> {
                  return std::vector<Tensor>{};
                })
                .code(),
            absl::StatusCode::kAlreadyExists);
}

// As in TF, a scheduled function has no deadline by default: a step longer
// than any fixed bound still succeeds (here the bound it would have had is
// shrunk to show the contrast), and Get waits for it.
TEST(ClusterCoordinatorTest, ScheduledFunctionsHaveNoDeadlineByDefault) {
  EXPECT_EQ(ClusterCoordinatorOptions().call_timeout, absl::InfiniteDuration());
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  OnEveryWorker(*c, "slow",
                [](PsClient&,
                   std::vector<Tensor>) -> absl::StatusOr<std::vector<Tensor>> {
                  absl::SleepFor(absl::Milliseconds(300));
                  return std::vector<Tensor>{Tensor::FromVector<int64_t>({7})};
                });
  StartAll(*c);
  auto strategy = ParameterServerStrategy::Create(c->spec);
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  auto patient = ClusterCoordinator::Create(**strategy);
  ASSERT_TRUE(patient.ok()) << patient.status();
  auto value = (*patient)->Schedule("slow", {});
  ASSERT_TRUE(value.ok()) << value.status();
  auto got = value->Get();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ((*got)[0].ToVector<int64_t>(), (std::vector<int64_t>{7}));
  patient->reset();
  // With a bound shorter than the step, the call fails and is not rerun.
  ClusterCoordinatorOptions bounded;
  bounded.call_timeout = absl::Milliseconds(50);
  auto hasty = ClusterCoordinator::Create(**strategy, bounded);
  ASSERT_TRUE(hasty.ok()) << hasty.status();
  auto late = (*hasty)->Schedule("slow", {});
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_EQ(late->Get().status().code(), absl::StatusCode::kDeadlineExceeded);
}

TEST(PsCheckpointTest, SaveAndRestoreBringBackEveryVariable) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  StartAll(*c);
  ParameterServerStrategyOptions options;
  options.variable_partitioner = std::make_shared<FixedShardsPartitioner>(
      *FixedShardsPartitioner::Create(2));
  auto strategy = ParameterServerStrategy::Create(c->spec, options);
  ASSERT_TRUE(strategy.ok());
  // "a" (a scalar, never split) on ps 0; "m" and "b" each in two shards,
  // on ps 1 and ps 0.
  ASSERT_TRUE(
      (*strategy)
          ->CreateVariable("a", *Tensor::FromVector<float>({1}, Shape()))
          .ok());
  const std::vector<float> m = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  ASSERT_TRUE((*strategy)->CreateVariable("m", Floats(m, Shape({5, 2}))).ok());
  ASSERT_TRUE(
      (*strategy)->CreateVariable("b", Floats({5, 6}, Shape({2}))).ok());
  PsClient& client = (*strategy)->client();
  const std::string path = TmpPath("ps_ckpt");
  ASSERT_TRUE(SaveVariables(client, {"a", "m", "b"}, path).ok());

  // Training moves them on; restoring brings the saved values back.
  ASSERT_TRUE(
      client.AssignAdd("m", Floats(std::vector<float>(10, 1), Shape({5, 2})))
          .ok());
  ASSERT_TRUE(
      client.Assign("a", *Tensor::FromVector<float>({9}, Shape())).ok());
  ASSERT_TRUE(RestoreVariables(**strategy, path).ok());
  EXPECT_EQ(client.Read("m")->ToVector<float>(), m);
  EXPECT_EQ(client.Read("a")->ToVector<float>(), (std::vector<float>{1}));

  // Ps task 1 restarts without its variables: shard 0 of "m" and of "b" is
  // gone. Restoring creates them again where they were.
  RestartPs(*c, 1);
  EXPECT_EQ(c->stores[1]->size(), 0);
  auto fresh = ParameterServerStrategy::Create(c->spec, options);
  ASSERT_TRUE(fresh.ok());
  EXPECT_EQ((*fresh)->client().Read("m").status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*fresh)->client().Read("b").status().code(),
            absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE(RestoreVariables(**fresh, path).ok());
  EXPECT_EQ((*fresh)->client().Read("m")->ToVector<float>(), m);
  EXPECT_EQ((*fresh)->client().Read("b")->ToVector<float>(),
            (std::vector<float>{5, 6}));
  EXPECT_EQ((*fresh)->client().Read("a")->ToVector<float>(),
            (std::vector<float>{1}));
  // Shard 0 of "m" is back on ps 1, beside shard 1 on ps 0.
  absl::StatusOr<std::vector<ShardInfo>> shards =
      (*fresh)->client().Lookup("m");
  ASSERT_TRUE(shards.ok()) << shards.status();
  EXPECT_EQ((*shards)[0].ps, 1);
  EXPECT_EQ((*shards)[1].ps, 0);
  EXPECT_EQ(c->stores[1]->size(), 2);  // Shard 0 of "m" and of "b".
}

TEST(PsCheckpointTest, BadCheckpointsAndMismatchesAreErrors) {
  auto c = StartCluster();
  ASSERT_NE(c, nullptr);
  StartAll(*c);
  auto strategy = ParameterServerStrategy::Create(c->spec);
  ASSERT_TRUE(strategy.ok());
  ASSERT_TRUE(
      (*strategy)->CreateVariable("w", Floats({1, 2}, Shape({2}))).ok());
  PsClient& client = (*strategy)->client();
  EXPECT_EQ(SaveVariables(client, {"w", "nothing"}, TmpPath("x")).code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(SaveVariables(client, {"w", "w"}, TmpPath("x")).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(RestoreVariables(**strategy, TmpPath("no_such_ckpt")).code(),
            absl::StatusCode::kNotFound);

  // A checkpoint of another "w".
  auto other = StartCluster();
  ASSERT_NE(other, nullptr);
  StartAll(*other);
  auto elsewhere = ParameterServerStrategy::Create(other->spec);
  ASSERT_TRUE(elsewhere.ok());
  ASSERT_TRUE(
      (*elsewhere)->CreateVariable("w", Floats({1, 2, 3}, Shape({3}))).ok());
  const std::string path = TmpPath("other_w");
  ASSERT_TRUE(SaveVariables((*elsewhere)->client(), {"w"}, path).ok());
  absl::Status mismatch = RestoreVariables(**strategy, path);
  EXPECT_EQ(mismatch.code(), absl::StatusCode::kInvalidArgument) << mismatch;
  EXPECT_EQ(client.Read("w")->ToVector<float>(), (std::vector<float>{1, 2}));
}

}  // namespace
}  // namespace ps
}  // namespace distribute
