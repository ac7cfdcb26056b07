// The training program on simulated devices: the same weights as on the
// host platform (the values are computed the same way; only time is
// simulated), and the same simulated time and byte-identical trace on every
// run, whatever the host's thread scheduling.
#include <memory>
#include <string>
#include <vector>

#include "devices/host_platform.h"
#include "distribute/central_storage_strategy.h"
#include "distribute/cluster/simple_cluster_resolver.h"
#include "distribute/cluster/tf_config_cluster_resolver.h"
#include "distribute/cross_device_ops.h"
#include "distribute/mirrored_strategy.h"
#include "distribute/multi_worker_mirrored_strategy.h"
#include "distribute/one_device_strategy.h"
#include "distribute/tpu/tpu_strategy.h"
#include "gtest/gtest.h"
#include "simulator/builtin_topologies.h"
#include "simulator/faults.h"
#include "simulator/sim_platform.h"
#include "simulator/time.h"
#include "tools/distsim/classifier_training.h"

namespace {

using distribute::CentralStorageStrategy;
using distribute::MirroredStrategy;
using distribute::OneDeviceStrategy;
using distsim::TrainClassifier;
using distsim::TrainOptions;

TrainOptions Options() {
  TrainOptions o;
  o.steps = 4;
  o.global_batch = 64;
  o.num_features = 16;
  o.num_classes = 4;
  o.hidden = {32};
  o.seed = 11;
  return o;
}

std::vector<std::string> Devices(const std::string& kind, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i)
    out.push_back("/" + kind + ":" + std::to_string(i));
  return out;
}

std::unique_ptr<simulator::SimPlatform> Dgx() {
  auto p = simulator::SimPlatform::FromSpec("sim:dgx_h100");
  EXPECT_TRUE(p.ok()) << p.status();
  return *std::move(p);
}

TEST(SimulatedTrainingTest, SameWeightsAsOnTheHost) {
  devices::HostPlatformOptions host_options;
  host_options.num_devices = 8;
  auto host = *devices::HostPlatform::Create(host_options);
  auto sim = Dgx();
  for (int n : {1, 8}) {
    auto on_host = *MirroredStrategy::Create(
        *host, Devices("cpu", n),
        std::make_shared<distribute::ReductionToOneDevice>());
    auto on_sim = *MirroredStrategy::Create(
        *sim, Devices("gpu", n),
        std::make_shared<distribute::ReductionToOneDevice>());
    auto a = TrainClassifier(*on_host, Options());
    auto b = TrainClassifier(*on_sim, Options());
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ(a->weights_checksum, b->weights_checksum) << n << " replicas";
    EXPECT_LT(*b->final_loss, *b->initial_loss);
  }
  auto one = *OneDeviceStrategy::Create(*sim, "/gpu:3");
  auto central = *CentralStorageStrategy::Create(*sim, Devices("gpu", 4));
  auto r1 = TrainClassifier(*one, Options());
  auto r2 = TrainClassifier(*central, Options());
  ASSERT_TRUE(r1.ok()) << r1.status();
  ASSERT_TRUE(r2.ok()) << r2.status();
  EXPECT_NEAR(*r1->final_loss, *r2->final_loss, 1e-4);
}

TEST(SimulatedTrainingTest, SameTraceAndTimeOnEveryRun) {
  std::string first_trace;
  simulator::SimTime first_time = 0;
  for (int run = 0; run < 5; ++run) {
    auto sim = Dgx();
    auto strategy = *MirroredStrategy::Create(*sim, Devices("gpu", 8));
    auto r = TrainClassifier(*strategy, Options());
    ASSERT_TRUE(r.ok()) << r.status();
    if (run == 0) {
      first_trace = sim->TraceJson();
      first_time = sim->now();
      EXPECT_GT(first_time, 0);
      continue;
    }
    EXPECT_EQ(sim->now(), first_time) << "run " << run;
    EXPECT_TRUE(sim->TraceJson() == first_trace) << "run " << run;
  }
}

// CentralStorageStrategy reduces on the CPU, as TF's: the GPUs' gradients
// cross PCIe to the host, the CPU's kernels add them, the sums come back;
// the same trace on every run (the replicas meet through simulated
// collectives, not host waits).
TEST(SimulatedTrainingTest, CentralStorageReducesOnTheCpu) {
  std::string first_trace;
  simulator::SimTime first_time = 0;
  for (int run = 0; run < 3; ++run) {
    auto sim = Dgx();
    auto strategy = *CentralStorageStrategy::Create(*sim, Devices("gpu", 4));
    auto r = TrainClassifier(*strategy, Options());
    ASSERT_TRUE(r.ok()) << r.status();
    auto cpu = sim->DeviceStats("/cpu:0");
    ASSERT_TRUE(cpu.ok()) << cpu.status();
    EXPECT_GT(cpu->kernels, 0);
    EXPECT_GT(cpu->bytes_received, 0);
    if (run == 0) {
      first_trace = sim->TraceJson();
      first_time = sim->now();
      continue;
    }
    EXPECT_EQ(sim->now(), first_time) << "run " << run;
    EXPECT_TRUE(sim->TraceJson() == first_trace) << "run " << run;
  }
}

// The same on a timing-only platform: no values, the reductions' costs
// still charged to the CPU.
TEST(SimulatedTrainingTest, CentralStorageReducesOnTheCpuTimingOnly) {
  auto sim = simulator::SimPlatform::FromSpec("sim:dgx_h100;timing");
  ASSERT_TRUE(sim.ok()) << sim.status();
  auto strategy = *CentralStorageStrategy::Create(**sim, Devices("gpu", 4));
  auto r = TrainClassifier(*strategy, Options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->final_loss.has_value());
  auto cpu = (*sim)->DeviceStats("/cpu:0");
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_GT(cpu->kernels, 0);
  EXPECT_GT(cpu->compute_time, 0);
}

TEST(SimulatedTrainingTest, ADeviceThatDiesFailsTrainingWithUnavailable) {
  simulator::SimPlatformOptions options;
  // GPU:3 dies 50 us into the run, in the middle of the first steps.
  options.faults.KillDevice(
      "GPU:3", simulator::FaultTrigger::AtTime(simulator::Microseconds(50)));
  auto sim = simulator::SimPlatform::Create(
      *simulator::BuiltinTopology("dgx_h100"), std::move(options));
  ASSERT_TRUE(sim.ok()) << sim.status();
  auto strategy = *MirroredStrategy::Create(**sim, Devices("gpu", 4));
  auto r = TrainClassifier(*strategy, Options());
  // The replicas waiting on GPU:3 fail too; whichever error leads, the
  // cause (the dead device, UNAVAILABLE) is reported.
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("replica 3: UNAVAILABLE"),
            std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find("GPU:3"), std::string::npos)
      << r.status();
}

// TPUStrategy on a simulated TPU v4 slice trains as MirroredStrategy does on
// as many host CPUs: the same reduction gives the same weights, bit for bit,
// and its own all-reduce over the ICI torus trains as well.
TEST(SimulatedTrainingTest, TPUStrategyTrainsOnASimulatedSlice) {
  devices::HostPlatformOptions host_options;
  host_options.num_devices = 8;
  auto host = *devices::HostPlatform::Create(host_options);
  auto slice = simulator::SimPlatform::FromSpec("sim:tpu_v4:2x2x1");
  ASSERT_TRUE(slice.ok()) << slice.status();
  auto on_host = *MirroredStrategy::Create(
      *host, Devices("cpu", 8),
      std::make_shared<distribute::ReductionToOneDevice>());
  distribute::TPUStrategy::Options same;
  same.cross_device_ops = std::make_shared<distribute::ReductionToOneDevice>();
  auto tpu = distribute::TPUStrategy::Create(**slice, same);
  ASSERT_TRUE(tpu.ok()) << tpu.status();
  auto a = TrainClassifier(*on_host, Options());
  auto b = TrainClassifier(**tpu, Options());
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(a->weights_checksum, b->weights_checksum);

  auto every_core = distribute::TPUStrategy::Create(**slice);
  ASSERT_TRUE(every_core.ok()) << every_core.status();
  auto c = TrainClassifier(**every_core, Options());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_LT(*c->final_loss, *c->initial_loss);
  EXPECT_NEAR(*c->final_loss, *b->final_loss, 1e-4);
}

// tf.distribute's rule on the simulator: NcclAllReduce when every device is
// a GPU and the platform makes a communicator (a simulated NCCL), else
// ReductionToOneDevice.
TEST(SimulatedTrainingTest, SelectionPicksNcclOnSimulatedGpus) {
  auto sim = Dgx();
  distribute::CrossDeviceOpsChoice gpus =
      distribute::SelectCrossDeviceOps(*sim, Devices("gpu", 8));
  EXPECT_EQ(gpus.ops->name(), "NcclAllReduce") << gpus.reason;
  distribute::CrossDeviceOpsChoice mixed =
      distribute::SelectCrossDeviceOps(*sim, {"/gpu:0", "/cpu:0"});
  EXPECT_EQ(mixed.ops->name(), "ReductionToOneDevice");
  distribute::CrossDeviceOpsChoice none =
      distribute::SelectCrossDeviceOps(*sim, {});
  EXPECT_EQ(none.ops->name(), "ReductionToOneDevice");
  EXPECT_EQ(none.reason, "No devices were given, not using nccl allreduce.");
  auto strategy = *MirroredStrategy::Create(*sim, Devices("gpu", 8));
  EXPECT_EQ(strategy->extended().cross_device_ops().name(), "NcclAllReduce");

  auto tpu = simulator::SimPlatform::FromSpec("sim:tpu_v4:2x2x1");
  ASSERT_TRUE(tpu.ok()) << tpu.status();
  distribute::CrossDeviceOpsChoice cores =
      distribute::SelectCrossDeviceOps(**tpu, Devices("tpu", 4));
  EXPECT_EQ(cores.ops->name(), "ReductionToOneDevice");
}

// TF's choice of a worker's replicas when none are given: a resolver other
// than TF_CONFIG's says how many GPUs through num_accelerators (Slurm's
// gpus per task), TF_CONFIG's worker takes every GPU of the process.
TEST(SimulatedTrainingTest, WorkerReplicasFollowTheResolversAccelerators) {
  auto sim = Dgx();  // 8 GPUs.
  auto spec =
      distribute::cluster::ClusterSpec::Create({{"worker", {"host0:2222"}}});
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto worker = [&](distribute::cluster::AcceleratorCounts counts) {
    distribute::cluster::SimpleClusterResolverOptions options;
    options.task_type = "worker";
    options.task_id = 0;
    options.num_accelerators = std::move(counts);
    auto resolver =
        distribute::cluster::SimpleClusterResolver::Create(*spec, options);
    EXPECT_TRUE(resolver.ok()) << resolver.status();
    distribute::MultiWorkerMirroredStrategy::Options mw;
    mw.cluster_resolver = *std::move(resolver);
    return distribute::MultiWorkerMirroredStrategy::Create(*sim, std::move(mw));
  };
  auto two = worker({{"GPU", 2}});
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ((*two)->NumReplicasInSync(), 2);
  EXPECT_EQ(
      (*two)->extended().WorkerDevices(),
      (std::vector<std::string>{"/job:worker/replica:0/task:0/device:GPU:0",
                                "/job:worker/replica:0/task:0/device:GPU:1"}));
  auto none = worker({});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(
      (*none)->extended().WorkerDevices(),
      (std::vector<std::string>{"/job:worker/replica:0/task:0/device:CPU:0"}));
  auto too_many = worker({{"GPU", 16}});
  EXPECT_EQ(too_many.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(too_many.status().message().find("each worker 16 GPU but platform"),
            std::string::npos)
      << too_many.status();

  auto tf_config = distribute::cluster::TFConfigClusterResolver::FromJson(
      R"({"cluster": {"worker": ["host0:2222"]},
          "task": {"type": "worker", "index": 0}})");
  ASSERT_TRUE(tf_config.ok()) << tf_config.status();
  distribute::MultiWorkerMirroredStrategy::Options mw;
  mw.cluster_resolver = *std::move(tf_config);
  auto all =
      distribute::MultiWorkerMirroredStrategy::Create(*sim, std::move(mw));
  ASSERT_TRUE(all.ok()) << all.status();
  EXPECT_EQ((*all)->NumReplicasInSync(), 8);
}

// NcclAllReduce on simulated GPUs trains to what ReductionToOneDevice
// computes: both reduce in replica order.
TEST(SimulatedTrainingTest, NcclAllReduceTrainsOnSimulatedGpus) {
  auto sim = Dgx();
  auto nccl = *MirroredStrategy::Create(
      *sim, Devices("gpu", 8), std::make_shared<distribute::NcclAllReduce>());
  auto a = TrainClassifier(*nccl, Options());
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_LT(*a->final_loss, *a->initial_loss);
  EXPECT_NE(sim->TraceJson().find("ncclAllReduce"), std::string::npos);
  auto other = Dgx();
  auto to_one = *MirroredStrategy::Create(
      *other, Devices("gpu", 8),
      std::make_shared<distribute::ReductionToOneDevice>());
  auto b = TrainClassifier(*to_one, Options());
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NEAR(*a->final_loss, *b->final_loss, 1e-5);
}

TEST(SimulatedTrainingTest, UnknownDeviceIsNotFound) {
  auto sim = Dgx();
  EXPECT_EQ(
      MirroredStrategy::Create(*sim, {"/gpu:0", "/gpu:8"}).status().code(),
      absl::StatusCode::kNotFound);
}

}  // namespace
