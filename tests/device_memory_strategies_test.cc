// The strategies on devices whose memory the host must not touch (the
// opaque-memory test platform, which stands in for GPUs where there is
// none): model ops run on each device's kernels, variables update through
// device copies and kernels, ReductionToOneDevice reduces on the reduce
// device, AllGather stages through the host. The results equal the host
// platform's bit for bit, since the staged kernels are the host kernels.
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/host_platform.h"
#include "devices/platform.h"
#include "devices/status_macros.h"
#include "distribute/central_storage_strategy.h"
#include "distribute/cluster/tf_config_cluster_resolver.h"
#include "distribute/cross_device_ops.h"
#include "distribute/mirrored_strategy.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "distribute/one_device_strategy.h"
#include "distribute/strategy.h"
#include "distribute/variables.h"
#include "gtest/gtest.h"
#include "tests/opaque_memory_platform.h"
#include "tests/subprocess.h"
#include "tools/distsim/classifier_training.h"

namespace {

using devices::Tensor;
using distribute::CentralStorageStrategy;
using distribute::MirroredStrategy;
using distribute::OneDeviceStrategy;
using distribute::ReplicaContext;
using distsim::TrainClassifier;
using distsim::TrainOptions;
using distsim_testing::OpaqueMemoryPlatform;

TrainOptions Options(const std::string& optimizer) {
  TrainOptions o;
  o.steps = 3;
  o.global_batch = 32;
  o.num_features = 8;
  o.num_classes = 3;
  o.hidden = {16};
  o.seed = 5;
  o.optimizer = optimizer;
  return o;
}

std::vector<std::string> Cpus(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("/cpu:" + std::to_string(i));
  return out;
}

std::unique_ptr<devices::HostPlatform> Host(int n) {
  devices::HostPlatformOptions options;
  options.num_devices = n;
  return *devices::HostPlatform::Create(options);
}

TEST(DeviceMemoryStrategiesTest, OneDeviceAndMirroredTrainAsOnTheHost) {
  auto opaque = *OpaqueMemoryPlatform::Create(2);
  auto host = Host(2);
  for (const std::string optimizer : {"sgd", "adam"}) {
    auto a =
        TrainClassifier(*OneDeviceStrategy::Create(*opaque, "/cpu:1").value(),
                        Options(optimizer));
    auto b =
        TrainClassifier(*OneDeviceStrategy::Create(*host, "/cpu:1").value(),
                        Options(optimizer));
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(a->weights_checksum, b->weights_checksum) << optimizer;
    EXPECT_EQ(*a->final_loss, *b->final_loss) << optimizer;

    auto c =
        TrainClassifier(*MirroredStrategy::Create(*opaque, Cpus(2)).value(),
                        Options(optimizer));
    auto d = TrainClassifier(*MirroredStrategy::Create(*host, Cpus(2)).value(),
                             Options(optimizer));
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_TRUE(d.ok()) << d.status();
    EXPECT_EQ(c->weights_checksum, d->weights_checksum) << optimizer;
    EXPECT_EQ(*c->final_loss, *d->final_loss) << optimizer;
    EXPECT_LT(*c->final_loss, *c->initial_loss) << optimizer;
  }
}

TEST(DeviceMemoryStrategiesTest, CentralStorageTrainsAsOnTheHost) {
  // Variables on CPU:0, replicas on CPU:1 and CPU:2: reads copy the
  // variables to each replica's device, updates run on CPU:0.
  auto opaque = *OpaqueMemoryPlatform::Create(3);
  auto host = Host(3);
  const std::vector<std::string> compute = {"/cpu:1", "/cpu:2"};
  auto a = TrainClassifier(
      *CentralStorageStrategy::Create(*opaque, compute, "/cpu:0").value(),
      Options("sgd"));
  auto b = TrainClassifier(
      *CentralStorageStrategy::Create(*host, compute, "/cpu:0").value(),
      Options("sgd"));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->weights_checksum, b->weights_checksum);
  EXPECT_EQ(*a->final_loss, *b->final_loss);
}

TEST(DeviceMemoryStrategiesTest, VariablesUpdateInDeviceMemory) {
  auto opaque = *OpaqueMemoryPlatform::Create(2);
  auto strategy = *MirroredStrategy::Create(*opaque, Cpus(2));
  std::shared_ptr<distribute::Variable> v;
  {
    auto scope = strategy->Scope();
    ASSERT_TRUE(scope.ok()) << scope.status();
    auto created = strategy->CreateVariable(
        Tensor::FromVector<float>({1, 2, 3}), {.name = "v"});
    ASSERT_TRUE(created.ok()) << created.status();
    v = *created;
  }
  ASSERT_FALSE(v->values()[0].host_accessible());
  ASSERT_TRUE(v->AssignAdd(Tensor::FromVector<float>({10, 20, 30})).ok());
  ASSERT_TRUE(v->AssignSub(Tensor::FromVector<float>({1, 1, 1})).ok());
  for (const Tensor& component : v->values()) {
    std::vector<float> got(3);
    auto device = opaque->FindDevice(component.device());
    ASSERT_TRUE(device.ok());
    ASSERT_TRUE((*device)->CopyToHost(component, got.data()).ok());
    EXPECT_EQ(got, (std::vector<float>{10, 21, 32})) << component.device();
  }
  ASSERT_TRUE(v->Assign(Tensor::FromVector<float>({7, 8, 9})).ok());
  auto total = strategy->Reduce(distribute::ReduceOp::kSum,
                                distribute::PerReplica(v->values()));
  ASSERT_TRUE(total.ok()) << total.status();
  EXPECT_EQ(total->ToVector<float>(), (std::vector<float>{14, 16, 18}));
}

TEST(DeviceMemoryStrategiesTest, AllReduceAndAllGatherOfDeviceTensors) {
  auto opaque = *OpaqueMemoryPlatform::Create(2);
  auto strategy = *MirroredStrategy::Create(*opaque, Cpus(2));
  auto out = strategy->Run([](ReplicaContext& ctx, const std::vector<Tensor>&)
                               -> absl::StatusOr<std::vector<Tensor>> {
    const float r = static_cast<float>(ctx.ReplicaIdInSyncGroup());
    ASSIGN_OR_RETURN(auto value,
                     ctx.device().Allocate(devices::DType::kFloat32, {1, 2}));
    const std::vector<float> host = {r, r + 10};
    RETURN_IF_ERROR(ctx.device().CopyFromHost(host.data(), value));
    ASSIGN_OR_RETURN(auto sum,
                     ctx.AllReduce(distribute::ReduceOp::kSum, {value}));
    ASSIGN_OR_RETURN(auto gathered, ctx.AllGather(value, /*axis=*/1));
    return std::vector<Tensor>{sum[0], gathered};
  });
  ASSERT_TRUE(out.ok()) << out.status();
  for (int r = 0; r < 2; ++r) {
    const Tensor& sum = (*out)[0].value(r);
    const Tensor& gathered = (*out)[1].value(r);
    EXPECT_FALSE(sum.host_accessible());
    EXPECT_EQ(gathered.shape(), devices::Shape({1, 4}));
    auto device = opaque->FindDevice(sum.device());
    ASSERT_TRUE(device.ok());
    std::vector<float> s(2), g(4);
    ASSERT_TRUE((*device)->CopyToHost(sum, s.data()).ok());
    ASSERT_TRUE((*device)->CopyToHost(gathered, g.data()).ok());
    EXPECT_EQ(s, (std::vector<float>{1, 21}));
    EXPECT_EQ(g, (std::vector<float>{0, 10, 1, 11}));
  }
}

TEST(DeviceMemoryStrategiesTest, ReductionToOneDeviceTimesOutWithoutPeers) {
  auto opaque = *OpaqueMemoryPlatform::Create(2);
  distribute::ReductionToOneDevice ops;
  ASSERT_TRUE(ops.Bind(*opaque, {"/cpu:0", "/cpu:1"}).ok());
  distribute::CommunicationOptions fast;
  fast.timeout_seconds = 0.05;
  auto value = [&](int r, float x) {
    devices::Device& d = **opaque->FindDevice("/cpu:" + std::to_string(r));
    Tensor t = *d.Allocate(devices::DType::kFloat32, {1});
    EXPECT_TRUE(d.CopyFromHost(&x, t).ok());
    return t;
  };
  // Alone, the root (replica 0) and a peer (replica 1) both give up.
  for (int r : {0, 1}) {
    auto alone = ops.ReplicaAllReduce(r, distribute::ReduceOp::kSum,
                                      {value(r, 1)}, fast);
    EXPECT_EQ(alone.status().code(), absl::StatusCode::kDeadlineExceeded)
        << r << ": " << alone.status();
  }
  // A full round afterwards sees only its own values.
  std::vector<absl::StatusOr<std::vector<Tensor>>> out(
      2, absl::UnknownError("not run"));
  std::thread peer([&] {
    out[1] = ops.ReplicaAllReduce(1, distribute::ReduceOp::kSum, {value(1, 5)});
  });
  out[0] = ops.ReplicaAllReduce(0, distribute::ReduceOp::kSum, {value(0, 2)});
  peer.join();
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(out[r].ok()) << out[r].status();
    float got = 0;
    devices::Device& d = **opaque->FindDevice((*out[r])[0].device());
    ASSERT_TRUE(d.CopyToHost((*out[r])[0], &got).ok());
    EXPECT_EQ(got, 7.0f) << r;
  }
}

}  // namespace

// Every cross-device ops on device tensors: all-reduce of two tensors (SUM
// and MEAN), and a gather of rows. Their collectives' host code must not
// read device memory (the opaque platform's masked bytes would give wrong
// sums), so schedules stage through host memory and ReductionToOneDevice
// reduces on the reduce device.
// On `opaque`'s first n devices, of which the last host_memory keep host
// memory.
static void ExpectEveryCrossDeviceOpsReduces(OpaqueMemoryPlatform& opaque,
                                             int n, int host_memory) {
  distribute::CommunicationOptions ring;
  ring.implementation = distribute::CommunicationImplementation::kRing;
  std::vector<std::shared_ptr<distribute::CrossDeviceOps>> all = {
      std::make_shared<distribute::ReductionToOneDevice>(),
      std::make_shared<distribute::ReductionToOneDevice>("/cpu:2"),
      std::make_shared<distribute::HierarchicalCopyAllReduce>(),
      std::make_shared<distribute::CollectiveAllReduce>(),
      std::make_shared<distribute::CollectiveAllReduce>(ring)};
  for (const auto& ops : all) {
    SCOPED_TRACE(ops->name());
    auto strategy = MirroredStrategy::Create(opaque, Cpus(n), ops);
    ASSERT_TRUE(strategy.ok()) << strategy.status();
    auto out = (*strategy)->Run(
        [](ReplicaContext& ctx,
           const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
          const float r = static_cast<float>(ctx.ReplicaIdInSyncGroup());
          auto on_device = [&](std::vector<float> values,
                               devices::Shape shape) -> absl::StatusOr<Tensor> {
            ASSIGN_OR_RETURN(
                auto t, ctx.device().Allocate(devices::DType::kFloat32, shape));
            RETURN_IF_ERROR(ctx.device().CopyFromHost(values.data(), t));
            return t;
          };
          auto a = on_device({r, r + 10}, {2});
          auto b = on_device({2 * r, 1, 3, 4, 5}, {5});
          RETURN_IF_ERROR(a.status());
          RETURN_IF_ERROR(b.status());
          ASSIGN_OR_RETURN(auto sum,
                           ctx.AllReduce(distribute::ReduceOp::kSum, {*a, *b}));
          ASSIGN_OR_RETURN(auto mean,
                           ctx.AllReduce(distribute::ReduceOp::kMean, {*a}));
          ASSIGN_OR_RETURN(auto rows, on_device({r, -r}, {1, 2}));
          ASSIGN_OR_RETURN(auto gathered, ctx.AllGather(rows, /*axis=*/0));
          return std::vector<Tensor>{sum[0], sum[1], mean[0], gathered};
        });
    ASSERT_TRUE(out.ok()) << out.status();
    for (int r = 0; r < n; ++r) {
      auto host = [&](const Tensor& t) {
        EXPECT_EQ(t.host_accessible(), r >= n - host_memory);
        EXPECT_EQ(t.device(), (*opaque.FindDevice(Cpus(n)[r]))->name());
        std::vector<float> v(static_cast<size_t>(t.num_elements()));
        devices::Device& d = **opaque.FindDevice(t.device());
        EXPECT_TRUE(d.CopyToHost(t, v.data()).ok());
        return v;
      };
      EXPECT_EQ(host((*out)[0].value(r)), (std::vector<float>{6, 46}));
      EXPECT_EQ(host((*out)[1].value(r)),
                (std::vector<float>{12, 4, 12, 16, 20}));
      EXPECT_EQ(host((*out)[2].value(r)), (std::vector<float>{1.5, 11.5}));
      EXPECT_EQ(host((*out)[3].value(r)),
                (std::vector<float>{0, 0, 1, -1, 2, -2, 3, -3}));
      EXPECT_EQ((*out)[3].value(r).shape(), devices::Shape({4, 2}));
    }
  }
}

TEST(DeviceMemoryStrategiesTest, EveryCrossDeviceOpsReducesDeviceTensors) {
  auto opaque = *OpaqueMemoryPlatform::Create(4);
  ExpectEveryCrossDeviceOpsReduces(*opaque, 4, /*host_memory=*/0);
}

// Replicas on GPUs and on CPUs in one group: every replica takes the
// device-memory path, so all issue the same collectives (a CPU replica
// packing two tensors into one all-reduce while the GPUs reduced them one
// by one used to leave both waiting until their timeout), and copies
// between the memories go through the device that can make them.
TEST(DeviceMemoryStrategiesTest, MixedDeviceAndHostMemoryReplicas) {
  auto opaque = *OpaqueMemoryPlatform::Create(4, /*num_host_memory_devices=*/2);
  ASSERT_FALSE((*opaque->FindDevice("/cpu:1"))->allocator().memory_space() ==
               devices::MemorySpace::kHost);
  ASSERT_TRUE((*opaque->FindDevice("/cpu:2"))->allocator().memory_space() ==
              devices::MemorySpace::kHost);
  ExpectEveryCrossDeviceOpsReduces(*opaque, 4, /*host_memory=*/2);

  // Training on two GPUs and two CPUs reaches the weights of four GPUs
  // (the same reductions in the same order: ReductionToOneDevice sums on
  // the first device, in replica order).
  auto gpus = *OpaqueMemoryPlatform::Create(4);
  auto a = TrainClassifier(*MirroredStrategy::Create(*opaque, Cpus(4)).value(),
                           Options("adam"));
  auto b = TrainClassifier(*MirroredStrategy::Create(*gpus, Cpus(4)).value(),
                           Options("adam"));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->weights_checksum, b->weights_checksum);
  EXPECT_EQ(*a->final_loss, *b->final_loss);
}

// A worker of GPUs beside a worker of CPUs, both on gRPC's all-reduce (RING
// here; AUTO too where NCCL is not linked in). The CPU worker must take the
// device-memory path as the GPU worker does: packing two tensors into one
// all-reduce while its peer reduced them one by one left both waiting for
// collectives the other never called, until their timeout. Their
// bytes_per_pack may differ, since such a group never packs.
TEST(DeviceMemoryStrategiesTest, AWorkerOfGpusBesideAWorkerOfCpus) {
  absl::StatusOr<std::vector<int>> ports = distsim_test::FreePorts(2);
  ASSERT_TRUE(ports.ok()) << ports.status();
  distribute::CommunicationOptions options;
  options.implementation = distribute::CommunicationImplementation::kRing;
  options.timeout_seconds = 20;  // a failure, not a hang, without the fix
  std::vector<std::unique_ptr<devices::Platform>> platforms(2);
  std::vector<std::unique_ptr<distribute::MultiWorkerMirroredStrategy>>
      strategies(2);
  std::vector<absl::StatusOr<std::vector<Tensor>>> sums(2);
  std::vector<absl::StatusOr<distsim::TrainResult>> trained(
      2, absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      const std::string task = absl::StrCat("/job:worker/replica:0/task:", w);
      if (w == 0) {
        platforms[w] = *OpaqueMemoryPlatform::Create(1, 0, task);
      } else {
        devices::HostPlatformOptions host;
        host.job_prefix = task;
        platforms[w] = *devices::HostPlatform::Create(host);
      }
      auto resolver = distribute::cluster::TFConfigClusterResolver::FromJson(
          absl::StrCat("{\"cluster\": {\"worker\": [\"127.0.0.1:", (*ports)[0],
                       "\", \"127.0.0.1:", (*ports)[1],
                       "\"]}, \"task\": {\"type\": \"worker\", "
                       "\"index\": ",
                       w, "}}"));
      ASSERT_TRUE(resolver.ok()) << resolver.status();
      distribute::CommunicationOptions mine = options;
      if (w == 1) mine.bytes_per_pack = 4;
      distribute::MultiWorkerMirroredStrategy::Options options;
      options.cluster_resolver = *std::move(resolver);
      options.communication = mine;
      auto strategy = distribute::MultiWorkerMirroredStrategy::Create(
          *platforms[w], std::move(options));
      ASSERT_TRUE(strategy.ok()) << strategy.status();
      strategies[w] = *std::move(strategy);
      auto out = strategies[w]->Run(
          [w](ReplicaContext& ctx, const std::vector<Tensor>&)
              -> absl::StatusOr<std::vector<Tensor>> {
            const float f = static_cast<float>(w);
            return ctx.AllReduce(distribute::ReduceOp::kSum,
                                 {Tensor::FromVector<float>({f, f + 10}),
                                  Tensor::FromVector<float>({100 * f + 1})});
          });
      if (!out.ok()) {
        sums[w] = out.status();
      } else {
        sums[w] = std::vector<Tensor>{(*out)[0].value(0), (*out)[1].value(0)};
      }
      trained[w] = TrainClassifier(*strategies[w], Options("adam"));
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(
      (*platforms[0]->FindDevice("/cpu:0"))->allocator().memory_space() ==
      devices::MemorySpace::kHost);
  auto mirrored = TrainClassifier(
      *MirroredStrategy::Create(*Host(2), Cpus(2)).value(), Options("adam"));
  ASSERT_TRUE(mirrored.ok()) << mirrored.status();
  for (int w = 0; w < 2; ++w) {
    ASSERT_TRUE(sums[w].ok()) << "worker " << w << ": " << sums[w].status();
    ASSERT_TRUE((*sums[w])[0].host_accessible()) << "worker " << w;
    EXPECT_EQ((*sums[w])[0].ToVector<float>(), (std::vector<float>{1, 21}));
    EXPECT_EQ((*sums[w])[1].ToVector<float>(), (std::vector<float>{102}));
    ASSERT_TRUE(trained[w].ok())
        << "worker " << w << ": " << trained[w].status();
    // The same weights as two replicas of one process.
    EXPECT_EQ(trained[w]->weights_checksum, mirrored->weights_checksum);
  }
  strategies.clear();  // Before their platforms.
}

// A host tensor all-reduced on a device with memory of its own crosses into
// device memory only where the reduction needs it there: not at all for the
// collectives' host code (which once copied it in, out, in and out again),
// once into the reduce device and once out for ReductionToOneDevice. An
// all-gather over the collectives' host code copies only its results in.
TEST(DeviceMemoryStrategiesTest, HostTensorsOnDevicesAreNotCopiedThroughThem) {
  struct Case {
    std::shared_ptr<distribute::CrossDeviceOps> ops;
    int64_t copies;
  };
  for (const Case& c :
       {Case{std::make_shared<distribute::CollectiveAllReduce>(), 0},
        Case{std::make_shared<distribute::ReductionToOneDevice>(), 4}}) {
    SCOPED_TRACE(c.ops->name());
    auto opaque = *OpaqueMemoryPlatform::Create(2);
    auto strategy = MirroredStrategy::Create(*opaque, Cpus(2), c.ops);
    ASSERT_TRUE(strategy.ok()) << strategy.status();
    const int64_t before = opaque->copies();
    auto out = (*strategy)->Run(
        [](ReplicaContext& ctx,
           const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
          const float r = static_cast<float>(ctx.ReplicaIdInSyncGroup());
          return ctx.AllReduce(distribute::ReduceOp::kSum,
                               {Tensor::FromVector<float>({r, r + 10})});
        });
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(opaque->copies() - before, c.copies);
    for (int r = 0; r < 2; ++r) {
      const Tensor& sum = (*out)[0].value(r);
      ASSERT_TRUE(sum.host_accessible()) << r;
      EXPECT_EQ(sum.ToVector<float>(), (std::vector<float>{1, 21})) << r;
    }
  }

  auto opaque = *OpaqueMemoryPlatform::Create(2);
  auto strategy = MirroredStrategy::Create(
      *opaque, Cpus(2), std::make_shared<distribute::CollectiveAllReduce>());
  ASSERT_TRUE(strategy.ok()) << strategy.status();
  const int64_t before = opaque->copies();
  auto out = (*strategy)->Run(
      [](ReplicaContext& ctx,
         const std::vector<Tensor>&) -> absl::StatusOr<std::vector<Tensor>> {
        const float r = static_cast<float>(ctx.ReplicaIdInSyncGroup());
        ASSIGN_OR_RETURN(auto gathered,
                         ctx.AllGather(Tensor::FromVector<float>({r, r + 10})));
        return std::vector<Tensor>{gathered};
      });
  ASSERT_TRUE(out.ok()) << out.status();
  // Each replica's result, and the gathered ranks it checks first (into
  // device memory and out).
  EXPECT_EQ(opaque->copies() - before, 2 * 3);
  for (int r = 0; r < 2; ++r) {
    const Tensor& gathered = (*out)[0].value(r);
    ASSERT_FALSE(gathered.host_accessible()) << r;
    std::vector<float> got(4);
    ASSERT_TRUE((*opaque->FindDevice(gathered.device()))
                    ->CopyToHost(gathered, got.data())
                    .ok());
    EXPECT_EQ(got, (std::vector<float>{0, 10, 1, 11})) << r;
  }
}

TEST(DeviceMemoryStrategiesTest, CopyTensorBetweenEveryKindOfMemory) {
  auto opaque = *OpaqueMemoryPlatform::Create(3, /*num_host_memory_devices=*/1);
  const std::vector<float> values = {1.5f, -2, 3};
  Tensor host = *Tensor::Host(devices::DType::kFloat32, devices::Shape({3}));
  std::memcpy(host.raw_data(), values.data(), host.bytes());
  auto read = [&](const Tensor& t) {
    std::vector<float> v(3);
    Tensor h = *devices::ToHostTensor(*opaque, t);
    std::memcpy(v.data(), h.raw_data(), h.bytes());
    return v;
  };
  // gpu0, gpu1 (device memory), cpu2 (host memory), and a host tensor.
  std::vector<Tensor> places;
  for (const char* name : {"/cpu:0", "/cpu:1", "/cpu:2"}) {
    places.push_back(
        *(*opaque->FindDevice(name))->Allocate(devices::DType::kFloat32, {3}));
  }
  places.push_back(*Tensor::Host(devices::DType::kFloat32, {3}));
  for (size_t from = 0; from < places.size(); ++from) {
    ASSERT_TRUE(devices::CopyTensor(*opaque, host, places[from]).ok());
    for (size_t to = 0; to < places.size(); ++to) {
      if (to == from) continue;
      std::vector<float> zeros(3, 0.0f);
      Tensor z = *Tensor::Host(devices::DType::kFloat32, {3});
      std::memcpy(z.raw_data(), zeros.data(), z.bytes());
      ASSERT_TRUE(devices::CopyTensor(*opaque, z, places[to]).ok());
      absl::Status s = devices::CopyTensor(*opaque, places[from], places[to]);
      ASSERT_TRUE(s.ok()) << from << " -> " << to << ": " << s;
      EXPECT_EQ(read(places[to]), values) << from << " -> " << to;
    }
  }
  Tensor other = *Tensor::Host(devices::DType::kFloat32, {2});
  EXPECT_EQ(devices::CopyTensor(*opaque, host, other).code(),
            absl::StatusCode::kInvalidArgument);
}

// After AbortCollectives, a device-memory reduction that starts later fails
// at once with the abort's reason instead of waiting for peers.
TEST(DeviceMemoryStrategiesTest, ReductionToOneDeviceFailsLaterCallsOnAbort) {
  auto opaque = *OpaqueMemoryPlatform::Create(2);
  distribute::ReductionToOneDevice ops;
  ASSERT_TRUE(ops.Bind(*opaque, {"/cpu:0", "/cpu:1"}).ok());
  devices::Device& d = **opaque->FindDevice("/cpu:0");
  Tensor t = *d.Allocate(devices::DType::kFloat32, {1});
  const float one = 1;
  ASSERT_TRUE(d.CopyFromHost(&one, t).ok());
  ASSERT_TRUE(
      ops.AbortCollectives(absl::UnavailableError("worker 3 died")).ok());
  distribute::CommunicationOptions patient;
  patient.timeout_seconds = 600;
  for (int r : {0, 1}) {
    auto late =
        ops.ReplicaAllReduce(r, distribute::ReduceOp::kSum, {t}, patient);
    EXPECT_EQ(late.status().code(), absl::StatusCode::kUnavailable) << r;
    EXPECT_NE(late.status().message().find("worker 3 died"), std::string::npos)
        << late.status();
  }
}
