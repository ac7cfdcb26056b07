// MultiWorkerMirroredStrategy in one process: its errors, the one-worker
// case, and two workers (two strategies on two host platforms, each on its
// own thread, talking over gRPC on 127.0.0.1) for global replica ids,
// all-reduce, Reduce, the chief's initial values and dataset sharding.
// tests/multi_worker_mirrored_test.cc runs workers as real processes.
#include "distribute/multi_worker_mirrored_strategy.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "devices/host_platform.h"
#include "devices/status_macros.h"
#include "distribute/cluster/simple_cluster_resolver.h"
#include "distribute/cluster/tf_config_cluster_resolver.h"
#include "distribute/input/dataset.h"
#include "distribute/input_lib.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace distribute {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<devices::HostPlatform> Host(int task, int num_devices = 1) {
  devices::HostPlatformOptions options;
  options.num_devices = num_devices;
  options.job_prefix = absl::StrCat("/job:worker/replica:0/task:", task);
  return *devices::HostPlatform::Create(options);
}

std::unique_ptr<cluster::ClusterResolver> Resolver(
    const std::string& tf_config) {
  auto r = cluster::TFConfigClusterResolver::FromJson(tf_config);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? std::unique_ptr<cluster::ClusterResolver>(*std::move(r))
                : nullptr;
}

// Create's options with `resolver` and `communication`.
MultiWorkerMirroredStrategy::Options With(
    std::unique_ptr<cluster::ClusterResolver> resolver,
    CommunicationOptions communication = {}) {
  MultiWorkerMirroredStrategy::Options options;
  options.cluster_resolver = std::move(resolver);
  options.communication = communication;
  return options;
}

std::vector<int> FreePorts(int n) {
  std::vector<int> fds, ports;
  for (int i = 0; i < n; ++i) {
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    fds.push_back(fd);
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) close(fd);
  return ports;
}

devices::Tensor Floats(const std::vector<float>& v) {
  devices::Tensor t =
      *devices::Tensor::Host(devices::DType::kFloat32,
                             devices::Shape({static_cast<int64_t>(v.size())}));
  for (size_t i = 0; i < v.size(); ++i) t.data<float>()[i] = v[i];
  return t;
}

TEST(MultiWorkerMirroredStrategyTest, NoClusterTrainsAlone) {
  auto platform = Host(0);
  auto strategy =
      MultiWorkerMirroredStrategy::Create(*platform, With(Resolver("")));
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  EXPECT_EQ((*strategy)->name(), "MultiWorkerMirroredStrategy");
  EXPECT_EQ((*strategy)->NumWorkers(), 1);
  EXPECT_EQ((*strategy)->NumReplicasInSync(), 1);
  EXPECT_TRUE((*strategy)->IsChief());
  EXPECT_EQ((*strategy)->server(), nullptr);
  EXPECT_NE((*strategy)->ClusterResolver(), nullptr);
  EXPECT_EQ((*strategy)->extended().cross_device_ops().name(),
            "CollectiveAllReduce");
}

TEST(MultiWorkerMirroredStrategyTest, NcclIsFailedPrecondition) {
  auto platform = Host(0);
  CommunicationOptions options;
  options.implementation = CommunicationImplementation::kNccl;
  auto strategy = MultiWorkerMirroredStrategy::Create(
      *platform, With(Resolver(""), options));
  EXPECT_EQ(strategy.status().code(), absl::StatusCode::kFailedPrecondition);
}

// As TF: an evaluator task (TF's side-car evaluation) is a cluster of its
// own and its chief; it starts no server and joins no collective of the
// workers (which are not even running here).
TEST(MultiWorkerMirroredStrategyTest, AnEvaluatorTrainsAlone) {
  auto platform = Host(0);
  auto strategy = MultiWorkerMirroredStrategy::Create(
      *platform,
      With(Resolver(
          "{\"cluster\": {\"worker\": [\"127.0.0.1:1\", \"127.0.0.1:2\"], "
          "\"evaluator\": [\"127.0.0.1:3\"]}, "
          "\"task\": {\"type\": \"evaluator\", \"index\": 0}}")));
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  EXPECT_EQ((*strategy)->NumWorkers(), 1);
  EXPECT_EQ((*strategy)->WorkerIndex(), 0);
  EXPECT_TRUE((*strategy)->IsChief());
  EXPECT_EQ((*strategy)->server(), nullptr);
  auto sum = (*strategy)->Reduce(
      ReduceOp::kSum,
      PerReplica({*devices::Tensor::FromVector<float>({2}, {1})}));
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(sum->ToVector<float>(), (std::vector<float>{2}));
}

// The chief, the broadcast root and the checkpoint writer are task 0: task
// indices with gaps (a sparse TF_CONFIG job) or two chiefs are refused.
TEST(MultiWorkerMirroredStrategyTest, WorkersMustBeNumberedFromZero) {
  auto platform = Host(0);
  auto sparse = MultiWorkerMirroredStrategy::Create(
      *platform,
      With(Resolver("{\"cluster\": {\"worker\": {\"1\": \"127.0.0.1:1\", "
                    "\"2\": \"127.0.0.1:2\"}}, \"task\": {\"type\": "
                    "\"worker\", \"index\": 1}}")));
  EXPECT_EQ(sparse.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(sparse.status().message(), HasSubstr("1,2 are not 0..1"));
  // TF_CONFIG refuses two chiefs itself; a resolver of another kind may not.
  cluster::SimpleClusterResolverOptions options;
  options.task_type = "worker";
  options.task_id = 0;
  auto two_chiefs = cluster::SimpleClusterResolver::Create(
      *cluster::ClusterSpec::Create({{"chief", {"127.0.0.1:1", "127.0.0.1:2"}},
                                     {"worker", {"127.0.0.1:3"}}}),
      options);
  ASSERT_TRUE(two_chiefs.ok()) << two_chiefs.status();
  auto chiefs = MultiWorkerMirroredStrategy::Create(
      *platform, With(*std::move(two_chiefs)));
  EXPECT_EQ(chiefs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(chiefs.status().message(), HasSubstr("at most one \"chief\""));
}

TEST(MultiWorkerMirroredStrategyTest, UnknownRpcLayerNamesTfConfigField) {
  auto platform = Host(0);
  auto strategy = MultiWorkerMirroredStrategy::Create(
      *platform,
      With(Resolver("{\"cluster\": {\"worker\": [\"127.0.0.1:1\", "
                    "\"127.0.0.1:2\"]}, \"task\": {\"type\": \"worker\", "
                    "\"index\": 0}, \"rpc_layer\": \"grpc+verbs\"}")));
  EXPECT_EQ(strategy.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(strategy.status().message(), HasSubstr("\"rpc_layer\""));
  EXPECT_THAT(strategy.status().message(), HasSubstr("grpc+verbs"));
}

// TF_CONFIG for worker `w` of a two-worker cluster on 127.0.0.1:ports[0..1].
std::string TwoWorkerConfig(const std::vector<int>& ports, int w) {
  return absl::StrCat("{\"cluster\": {\"worker\": [\"127.0.0.1:", ports[0],
                      "\", \"127.0.0.1:", ports[1],
                      "\"]}, \"task\": {\"type\": \"worker\", \"index\": ", w,
                      "}}");
}

// Runs fn(strategy) for worker 0 and worker 1 of a two-worker cluster, each
// on its own thread with its own platform. Both workers live until both are
// done (a worker whose peer already left is refused at the rendezvous).
void TwoWorkers(
    const std::function<void(MultiWorkerMirroredStrategy&, int worker)>& fn,
    CommunicationOptions options = {}, int local_devices = 1) {
  const std::vector<int> ports = FreePorts(2);
  std::vector<std::unique_ptr<devices::HostPlatform>> platforms(2);
  std::vector<std::unique_ptr<MultiWorkerMirroredStrategy>> strategies(2);
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      platforms[w] = Host(w, local_devices);
      devices::HostPlatform* platform = platforms[w].get();
      // Every host device is a replica.
      MultiWorkerMirroredStrategy::Options mw =
          With(Resolver(TwoWorkerConfig(ports, w)), options);
      mw.local_devices = platform->DeviceNames();
      auto strategy =
          MultiWorkerMirroredStrategy::Create(*platform, std::move(mw));
      ASSERT_TRUE(strategy.ok()) << strategy.status();
      strategies[w] = *std::move(strategy);
      fn(*strategies[w], w);
    });
  }
  for (auto& t : threads) t.join();
  strategies.clear();  // Before their platforms.
}

// Makes both workers of a two-worker cluster with `options`, each on its
// own thread and platform; `strategies[w]` is null where Create failed.
// Returns each Create's status. Clear `strategies` before `platforms`.
// Worker 1 takes `worker1_options` when given, else `options` as worker 0.
std::vector<absl::Status> MakeTwo(
    CommunicationOptions options,
    std::vector<std::unique_ptr<devices::HostPlatform>>& platforms,
    std::vector<std::unique_ptr<MultiWorkerMirroredStrategy>>& strategies,
    std::optional<CommunicationOptions> worker1_options = std::nullopt) {
  const std::vector<int> ports = FreePorts(2);
  std::vector<absl::Status> status(2);
  platforms.resize(2);
  strategies.resize(2);
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      platforms[w] = Host(w);
      auto strategy = MultiWorkerMirroredStrategy::Create(
          *platforms[w],
          With(Resolver(TwoWorkerConfig(ports, w)),
               w == 1 && worker1_options.has_value() ? *worker1_options
                                                     : options));
      status[w] = strategy.status();
      if (strategy.ok()) strategies[w] = *std::move(strategy);
    });
  }
  for (auto& t : threads) t.join();
  return status;
}

// Two workers' Create with `options`; their results and ops' names.
std::vector<absl::Status> CreateTwo(CommunicationOptions options,
                                    std::vector<std::string>* ops_names) {
  // Both workers live until both are made: a worker whose peer has already
  // left (its server stopped) is refused, as its first collective would be.
  std::vector<std::unique_ptr<devices::HostPlatform>> platforms;
  std::vector<std::unique_ptr<MultiWorkerMirroredStrategy>> strategies;
  std::vector<absl::Status> status = MakeTwo(options, platforms, strategies);
  ops_names->assign(2, "");
  for (int w = 0; w < 2; ++w) {
    if (strategies[w] != nullptr) {
      (*ops_names)[w] = strategies[w]->extended().cross_device_ops().name();
    }
  }
  strategies.clear();  // Before their platforms.
  return status;
}

TEST(MultiWorkerMirroredStrategyTest, NcclAcrossWorkersNeedsTheNcclLibrary) {
  CommunicationOptions options;
  options.implementation = CommunicationImplementation::kNccl;
  std::vector<std::string> names;
  for (const absl::Status& s : CreateTwo(options, &names)) {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_THAT(s.message(), HasSubstr("//distribute:multi_worker_nccl"));
  }
}

TEST(MultiWorkerMirroredStrategyTest, NativeOpsServeNcclButNotAutoOnCpus) {
  // A stand-in for NCCL's factory: records what each worker hands it and
  // returns an all-reduce over the worker's own devices.
  absl::Mutex mu;
  std::vector<CrossWorkerContext> seen;
  SetCrossWorkerNativeOps(
      [&](const CrossWorkerContext& context)
          -> absl::StatusOr<std::shared_ptr<CrossDeviceOps>> {
        absl::MutexLock lock(&mu);
        seen.push_back(context);
        return std::shared_ptr<CrossDeviceOps>(
            std::make_shared<CollectiveAllReduce>());
      });
  // Uninstalled however the test ends (it captures locals).
  absl::Cleanup uninstall = [] { SetCrossWorkerNativeOps(nullptr); };
  CommunicationOptions nccl;
  nccl.implementation = CommunicationImplementation::kNccl;
  std::vector<std::string> names;
  for (const absl::Status& s : CreateTwo(nccl, &names)) {
    EXPECT_TRUE(s.ok()) << s;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"CollectiveAllReduce",
                                             "CollectiveAllReduce"}));
  {
    absl::MutexLock lock(&mu);
    ASSERT_EQ(seen.size(), 2u);
    for (const CrossWorkerContext& context : seen) {
      EXPECT_NE(context.platform, nullptr);
      EXPECT_NE(context.server, nullptr);
      EXPECT_TRUE(context.required);
      ASSERT_EQ(context.worker_addresses.size(), 2u);
      EXPECT_EQ(context.local_devices.size(), 1u);
      EXPECT_EQ(context.options.implementation,
                CommunicationImplementation::kNccl);
    }
    EXPECT_NE(seen[0].worker_index, seen[1].worker_index);
    seen.clear();
  }
  // AUTO on CPUs keeps the collectives over gRPC.
  for (const absl::Status& s : CreateTwo({}, &names)) {
    EXPECT_TRUE(s.ok()) << s;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"MultiWorkerAllReduce",
                                             "MultiWorkerAllReduce"}));
  {
    absl::MutexLock lock(&mu);
    EXPECT_TRUE(seen.empty());
  }
}

// A factory that declines (returns null) under NCCL is a bug in the
// factory, reported as such rather than a silent fallback to gRPC.
TEST(MultiWorkerMirroredStrategyTest, NativeOpsThatDeclineNcclAreAnError) {
  SetCrossWorkerNativeOps([](const CrossWorkerContext&) {
    return absl::StatusOr<std::shared_ptr<CrossDeviceOps>>(
        std::shared_ptr<CrossDeviceOps>());
  });
  absl::Cleanup uninstall = [] { SetCrossWorkerNativeOps(nullptr); };
  CommunicationOptions nccl;
  nccl.implementation = CommunicationImplementation::kNccl;
  std::vector<std::string> names;
  for (const absl::Status& s : CreateTwo(nccl, &names)) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInternal) << s;
    EXPECT_THAT(s.message(), HasSubstr("returned nothing"));
  }
}

// A stand-in for a native (NCCL) group across workers whose collectives
// finish only when the group is aborted, as NCCL's wait for a frozen peer.
class WaitsForAbort : public devices::Communicator {
 public:
  WaitsForAbort(std::vector<std::string> devices)
      : devices_(std::move(devices)) {}
  const std::string& name() const override { return name_; }
  int size() const override { return static_cast<int>(devices_.size()); }
  const std::string& device(int rank) const override {
    return devices_[static_cast<size_t>(rank)];
  }
  absl::Status AllReduce(int, const devices::Tensor&, devices::Tensor&,
                         const devices::CollectiveOptions&) override {
    absl::MutexLock lock(&mu_);
    // Bounded, so that a missing abort fails the test instead of hanging it.
    auto aborted = [this] { return !reason_.ok(); };
    mu_.AwaitWithTimeout(absl::Condition(&aborted), absl::Seconds(15));
    if (reason_.ok()) {
      return absl::DeadlineExceededError("the stand-in group was not aborted");
    }
    return absl::UnavailableError(absl::StrCat("aborted: ", reason_.message()));
  }
  absl::Status Abort(absl::Status reason) override {
    absl::MutexLock lock(&mu_);
    if (reason_.ok()) reason_ = std::move(reason);
    return absl::OkStatus();
  }

 private:
  const std::string name_ = "waits-for-abort";
  const std::vector<std::string> devices_;
  absl::Mutex mu_;
  absl::Status reason_ ABSL_GUARDED_BY(mu_);
};

class WaitsForAbortOps : public CrossDeviceOps {
 public:
  explicit WaitsForAbortOps(int worker_index) { set_rank_offset(worker_index); }
  std::string name() const override { return "WaitsForAbortOps"; }

 protected:
  absl::StatusOr<std::unique_ptr<devices::Communicator>> MakeCommunicator(
      devices::Platform&, const std::vector<std::string>&) override {
    // One replica on each of the two workers.
    return std::unique_ptr<devices::Communicator>(
        new WaitsForAbort({"/job:worker/replica:0/task:0/device:CPU:0",
                           "/job:worker/replica:0/task:1/device:CPU:0"}));
  }
};

// Installs WaitsForAbortOps as the native (NCCL) ops until the returned
// cleanup runs.
auto InstallWaitsForAbortOps() {
  SetCrossWorkerNativeOps(
      [](const CrossWorkerContext& context)
          -> absl::StatusOr<std::shared_ptr<CrossDeviceOps>> {
        return std::shared_ptr<CrossDeviceOps>(
            std::make_shared<WaitsForAbortOps>(context.worker_index));
      });
  return absl::Cleanup([] { SetCrossWorkerNativeOps(nullptr); });
}

// Heartbeats reach a native (NCCL) group too: when a worker dies, the
// others' pending collectives fail with UNAVAILABLE naming its task instead
// of waiting for the group's own timeout.
TEST(MultiWorkerMirroredStrategyTest, ADeadWorkerAbortsTheNativeGroup) {
  auto uninstall = InstallWaitsForAbortOps();
  CommunicationOptions nccl;
  nccl.implementation = CommunicationImplementation::kNccl;
  std::vector<std::unique_ptr<devices::HostPlatform>> platforms;
  std::vector<std::unique_ptr<MultiWorkerMirroredStrategy>> strategies;
  for (const absl::Status& made : MakeTwo(nccl, platforms, strategies)) {
    ASSERT_TRUE(made.ok()) << made;
  }
  EXPECT_EQ(strategies[0]->extended().cross_device_ops().name(),
            "WaitsForAbortOps");
  strategies[1].reset();  // Worker 1 dies: its server stops answering.
  auto out = strategies[0]->Run(
      [](ReplicaContext& ctx, const std::vector<devices::Tensor>&)
          -> absl::StatusOr<std::vector<devices::Tensor>> {
        ASSIGN_OR_RETURN(auto sum,
                         ctx.AllReduce(ReduceOp::kSum, {Floats({1.0f})}));
        return sum;
      });
  EXPECT_EQ(out.status().code(), absl::StatusCode::kUnavailable)
      << out.status();
  // The stand-in's own abort, carrying the heartbeats' reason.
  EXPECT_THAT(out.status().message(), HasSubstr("aborted: "));
  EXPECT_THAT(out.status().message(), HasSubstr("/job:worker/task:1"));
  strategies.clear();
}

// Workers that would take different all-reduces (here the native one on
// worker 0, gRPC's on worker 1; in the field, NCCL on a worker of GPUs
// beside a worker of CPUs) fail at once, both naming every worker's choice.
// Before, both were created and their first collective waited for ever.
TEST(MultiWorkerMirroredStrategyTest, WorkersTakingDifferentAllReducesFail) {
  auto uninstall = InstallWaitsForAbortOps();
  CommunicationOptions nccl;
  nccl.implementation = CommunicationImplementation::kNccl;
  CommunicationOptions ring;
  ring.implementation = CommunicationImplementation::kRing;
  std::vector<std::unique_ptr<devices::HostPlatform>> platforms;
  std::vector<std::unique_ptr<MultiWorkerMirroredStrategy>> strategies;
  const std::vector<absl::Status> made =
      MakeTwo(nccl, platforms, strategies, ring);
  for (const absl::Status& s : made) {
    EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
    EXPECT_THAT(s.message(), HasSubstr("take different all-reduces"));
    EXPECT_THAT(s.message(),
                HasSubstr("/job:worker/task:0 takes WaitsForAbortOps "
                          "with bytes_per_pack 0 on 1 local device (CPU:0)"));
    EXPECT_THAT(s.message(),
                HasSubstr("/job:worker/task:1 takes MultiWorkerAllReduce "
                          "(RING over grpc) with bytes_per_pack 0 on 1 local "
                          "device (CPU:0)"));
  }
  strategies.clear();
}

// Both on gRPC's all-reduce, but with options that shape their collectives
// differently (RING against AUTO's cost model, packs of different sizes):
// they would not meet either.
TEST(MultiWorkerMirroredStrategyTest, WorkersWithDifferentOptionsFail) {
  CommunicationOptions ring;
  ring.implementation = CommunicationImplementation::kRing;
  CommunicationOptions packed = ring;
  packed.bytes_per_pack = 4096;
  for (const CommunicationOptions& other : {CommunicationOptions{}, packed}) {
    std::vector<std::unique_ptr<devices::HostPlatform>> platforms;
    std::vector<std::unique_ptr<MultiWorkerMirroredStrategy>> strategies;
    for (const absl::Status& s : MakeTwo(ring, platforms, strategies, other)) {
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
      EXPECT_THAT(s.message(),
                  HasSubstr("/job:worker/task:0 takes MultiWorkerAllReduce "
                            "(RING over grpc) with bytes_per_pack 0"));
      EXPECT_THAT(s.message(), HasSubstr("same CommunicationOptions"));
    }
    strategies.clear();
  }
}

TEST(MultiWorkerMirroredStrategyTest, ReplicasAreGlobal) {
  TwoWorkers([](MultiWorkerMirroredStrategy& strategy, int w) {
    EXPECT_EQ(strategy.NumWorkers(), 2);
    EXPECT_EQ(strategy.WorkerIndex(), w);
    EXPECT_EQ(strategy.NumReplicasInSync(), 2);
    EXPECT_EQ(strategy.extended().WorkerDevices().size(), 1u);
    EXPECT_EQ(strategy.IsChief(), w == 0);
    auto out = strategy.Run(
        [&](ReplicaContext& ctx, const std::vector<devices::Tensor>&)
            -> absl::StatusOr<std::vector<devices::Tensor>> {
          EXPECT_EQ(ctx.ReplicaIdInSyncGroup(), w);
          EXPECT_EQ(ctx.LocalReplicaId(), 0);
          EXPECT_EQ(ctx.NumReplicasInSync(), 2);
          ASSIGN_OR_RETURN(
              auto sum, ctx.AllReduce(ReduceOp::kSum,
                                      {Floats({1.0f + w, 10.0f * (w + 1)})}));
          ASSIGN_OR_RETURN(auto gathered,
                           ctx.AllGather(Floats({static_cast<float>(w)})));
          return std::vector<devices::Tensor>{sum[0], gathered};
        });
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].value(0).data<float>()[0], 3.0f);
    EXPECT_EQ((*out)[0].value(0).data<float>()[1], 30.0f);
    EXPECT_EQ((*out)[1].value(0).data<float>()[0], 0.0f);
    EXPECT_EQ((*out)[1].value(0).data<float>()[1], 1.0f);
    // Reduce spans the workers too.
    auto mean =
        strategy.Reduce(ReduceOp::kMean, PerReplica({Floats({2.0f * w})}));
    ASSERT_TRUE(mean.ok()) << mean.status();
    EXPECT_EQ(mean->data<float>()[0], 1.0f);
    auto along = strategy.Reduce(
        ReduceOp::kMean, PerReplica({w == 0 ? Floats({1, 2, 3}) : Floats({6})}),
        0);
    ASSERT_TRUE(along.ok()) << along.status();
    EXPECT_EQ(along->data<float>()[0], 3.0f);
    // Gather spans the workers too (TF's strategy.gather under
    // MultiWorkerMirroredStrategy): every worker gets every replica's rows,
    // in replica order, sizes along the axis may differ.
    auto rows =
        strategy.Gather(PerReplica({w == 0 ? Floats({1, 2, 3}) : Floats({6})}));
    ASSERT_TRUE(rows.ok()) << rows.status();
    ASSERT_EQ(rows->shape(), devices::Shape({4}));
    EXPECT_EQ(rows->data<float>()[2], 3.0f);
    EXPECT_EQ(rows->data<float>()[3], 6.0f);
    // Along axis 1: worker w's [2, w + 1] make a [2, 3].
    auto columns = strategy.Gather(
        PerReplica({*devices::Tensor::FromVector<float>(
            w == 0 ? std::vector<float>{1, 2} : std::vector<float>{3, 4, 5, 6},
            devices::Shape({2, w + 1}))}),
        1);
    ASSERT_TRUE(columns.ok()) << columns.status();
    ASSERT_EQ(columns->shape(), devices::Shape({2, 3}));
    const float want[] = {1, 3, 4, 2, 5, 6};
    for (int i = 0; i < 6; ++i) {
      EXPECT_EQ(columns->data<float>()[i], want[i]) << i;
    }
    // This worker's replicas, not more: refused before any collective.
    EXPECT_EQ(
        strategy.Gather(PerReplica({Floats({1}), Floats({2})})).status().code(),
        absl::StatusCode::kInvalidArgument);
  });
}

// CommunicationOptions::bytes_per_pack sets the size of the chunks the
// workers' messages stream in over gRPC, as well as the packing.
TEST(MultiWorkerMirroredStrategyTest, BytesPerPackChunksTheMessages) {
  constexpr int64_t kPack = 1024;
  constexpr int kFloats = 8192;  // 32 KiB: several packs per message.
  CommunicationOptions options;
  options.bytes_per_pack = kPack;
  TwoWorkers(
      [&](MultiWorkerMirroredStrategy& strategy, int w) {
        ASSERT_NE(strategy.server(), nullptr);
        auto out = strategy.Run(
            [&](ReplicaContext& ctx, const std::vector<devices::Tensor>&)
                -> absl::StatusOr<std::vector<devices::Tensor>> {
              return ctx.AllReduce(
                  ReduceOp::kSum,
                  {Floats(std::vector<float>(kFloats, 1.0f + w))});
            });
        ASSERT_TRUE(out.ok()) << out.status();
        EXPECT_EQ((*out)[0].value(0).data<float>()[kFloats - 1], 3.0f);
        const Server::ReceiveStats got = strategy.server()->received();
        // At least half of the other worker's tensor came over, in chunks
        // of a pack on average at most (one pack each, as sent).
        EXPECT_GE(got.bytes, kFloats * 4 / 2);
        EXPECT_GE(got.chunks * kPack, got.bytes)
            << got.messages << " messages, " << got.chunks << " chunks";
        EXPECT_GT(got.chunks, got.messages);
      },
      options);
}

// Workers of two devices each: the hierarchical all-reduce moves data
// between a worker's own devices in memory, so only the leaders' exchange
// reaches the servers (before, every local hop went through the worker's
// own server as well: three times the bytes).
TEST(MultiWorkerMirroredStrategyTest, LocalDevicesExchangeInMemory) {
  constexpr int kFloats = 16384;  // 64 KiB per replica.
  constexpr int64_t kBytes = kFloats * 4;
  TwoWorkers(
      [&](MultiWorkerMirroredStrategy& strategy, int w) {
        ASSERT_EQ(strategy.NumReplicasInSync(), 4);
        ASSERT_NE(strategy.server(), nullptr);
        const Server::ReceiveStats before = strategy.server()->received();
        auto out = strategy.Run(
            [&](ReplicaContext& ctx, const std::vector<devices::Tensor>&)
                -> absl::StatusOr<std::vector<devices::Tensor>> {
              const float mine = 1.0f + ctx.ReplicaIdInSyncGroup();
              return ctx.AllReduce(ReduceOp::kSum,
                                   {Floats(std::vector<float>(kFloats, mine))});
            });
        ASSERT_TRUE(out.ok()) << out.status();
        for (int r = 0; r < 2; ++r) {
          EXPECT_EQ((*out)[0].value(r).data<float>()[kFloats - 1], 10.0f)
              << "worker " << w << " local replica " << r;
        }
        const Server::ReceiveStats after = strategy.server()->received();
        // The other worker's reduced data came over, once.
        EXPECT_GE(after.bytes - before.bytes, kBytes / 2);
        EXPECT_LE(after.bytes - before.bytes, kBytes + kBytes / 2)
            << "worker " << w << ": local hops went through the server";
      },
      {}, /*local_devices=*/2);
}

TEST(MultiWorkerMirroredStrategyTest, VariablesStartFromTheChief) {
  TwoWorkers([](MultiWorkerMirroredStrategy& strategy, int w) {
    auto scope = strategy.Scope();
    ASSERT_TRUE(scope.ok()) << scope.status();
    auto v = strategy.CreateVariable(Floats({100.0f + w}));
    ASSERT_TRUE(v.ok()) << v.status();
    EXPECT_EQ((*v)->values()[0].data<float>()[0], 100.0f);
  });
}

// A cross-replica assign of a sync-on-read SUM variable spreads the value
// over every worker's replicas (TF divides by num_replicas_in_sync), so its
// SUM read, which adds every worker's components, gives the value back.
TEST(MultiWorkerMirroredStrategyTest, SyncOnReadSumAssignSpansTheWorkers) {
  TwoWorkers(
      [](MultiWorkerMirroredStrategy& strategy, int) {
        ASSERT_EQ(strategy.NumReplicasInSync(), 4);
        auto scope = strategy.Scope();
        ASSERT_TRUE(scope.ok()) << scope.status();
        VariableOptions options;
        options.synchronization = VariableSynchronization::kOnRead;
        options.aggregation = VariableAggregation::kSum;
        auto v = strategy.CreateVariable(Floats({0.0f}), options);
        ASSERT_TRUE(v.ok()) << v.status();
        ASSERT_TRUE((*v)->Assign(Floats({8.0f})).ok());
        auto read = (*v)->Read();
        ASSERT_TRUE(read.ok()) << read.status();
        EXPECT_EQ(read->data<float>()[0], 8.0f);
      },
      {}, /*local_devices=*/2);
}

TEST(MultiWorkerMirroredStrategyTest, DatasetIsShardedAcrossWorkers) {
  TwoWorkers([](MultiWorkerMirroredStrategy& strategy, int w) {
    auto batched = data::Dataset::Range(8).Batch(4);
    ASSERT_TRUE(batched.ok()) << batched.status();
    auto dist = ExperimentalDistributeDataset(strategy, *batched);
    ASSERT_TRUE(dist.ok()) << dist.status();
    auto it = dist->MakeIterator();
    ASSERT_TRUE(it.ok()) << it.status();
    std::vector<int64_t> seen;
    while (true) {
      auto step = (*it)->GetNextAsOptional();
      ASSERT_TRUE(step.ok()) << step.status();
      if (!step->has_value()) break;
      const devices::Tensor& t = (**step)[0].value(0);
      for (int64_t i = 0; i < t.num_elements(); ++i) {
        seen.push_back(t.data<int64_t>()[i]);
      }
    }
    // Each global batch of 4 is split 2 + 2: worker w takes its half.
    const std::vector<int64_t> expected =
        w == 0 ? std::vector<int64_t>{0, 1, 4, 5}
               : std::vector<int64_t>{2, 3, 6, 7};
    EXPECT_EQ(seen, expected);
  });
}

// Workers whose inputs run out at different steps: both run while either
// has data (one all-reduce of the flag per step, as TF), the one without
// data giving its replica empty batches, so their collectives still meet.
TEST(MultiWorkerMirroredStrategyTest, UnevenInputKeepsTheWorkersInStep) {
  TwoWorkers([](MultiWorkerMirroredStrategy& strategy, int w) {
    auto dist = DistributeDatasetsFromFunction(
        strategy, [](const InputContext& ctx) -> absl::StatusOr<data::Dataset> {
          // Worker 0: 0 2 4 6 8 (3 batches); worker 1: 1 3 5 7 (2 batches).
          ASSIGN_OR_RETURN(auto shard, data::Dataset::Range(9).Shard(
                                           ctx.num_input_pipelines(),
                                           ctx.input_pipeline_id()));
          return shard.Batch(2);
        });
    ASSERT_TRUE(dist.ok()) << dist.status();
    auto it = dist->MakeIterator();
    ASSERT_TRUE(it.ok()) << it.status();
    std::vector<int64_t> rows;
    while (true) {
      auto step = (*it)->GetNextAsOptional();
      ASSERT_TRUE(step.ok()) << step.status();
      if (!step->has_value()) break;
      const devices::Tensor& batch = (**step)[0].value(0);
      rows.push_back(batch.shape().dim(0));
      // Every step's collective meets the other worker's.
      auto total = strategy.Run(
          [](ReplicaContext& ctx, const std::vector<devices::Tensor>& args)
              -> absl::StatusOr<std::vector<devices::Tensor>> {
            return ctx.AllReduce(
                ReduceOp::kSum,
                {Floats({static_cast<float>(args[0].shape().dim(0))})});
          },
          {(**step)[0]});
      ASSERT_TRUE(total.ok()) << total.status();
    }
    const std::vector<int64_t> expected =
        w == 0 ? std::vector<int64_t>{2, 2, 1} : std::vector<int64_t>{2, 2, 0};
    EXPECT_EQ(rows, expected);
  });
}

// PER_REPLICA pipelines end on their own, with no agreement across workers,
// so across workers they are refused, as in TF.
TEST(MultiWorkerMirroredStrategyTest, PerReplicaInputIsRefusedAcrossWorkers) {
  TwoWorkers([](MultiWorkerMirroredStrategy& strategy, int) {
    InputOptions options;
    options.experimental_fetch_to_device = false;
    options.experimental_replication_mode = InputReplicationMode::kPerReplica;
    auto dist = DistributeDatasetsFromFunction(
        strategy,
        [](const InputContext&) -> absl::StatusOr<data::Dataset> {
          return data::Dataset::Range(4).Batch(2);
        },
        options);
    EXPECT_EQ(dist.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_NE(dist.status().message().find("PER_WORKER"), std::string::npos)
        << dist.status();
  });
}

}  // namespace
}  // namespace distribute
