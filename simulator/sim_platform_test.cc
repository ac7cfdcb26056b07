#include "simulator/sim_platform.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/device.h"
#include "devices/kernel_costs.h"
#include "devices/platform_conformance.h"
#include "devices/platform_registry.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "gtest/gtest.h"
#include "simulator/builtin_topologies.h"
#include "simulator/routing.h"
#include "simulator/time.h"
#include "simulator/topology.h"

namespace simulator {
namespace {

using devices::DType;
using devices::Shape;

constexpr char kGpu0[] = "/job:worker/replica:0/task:0/device:GPU:0";

std::unique_ptr<SimPlatform> MakePlatform(absl::string_view spec) {
  absl::StatusOr<std::unique_ptr<SimPlatform>> platform =
      SimPlatform::FromSpec(spec);
  EXPECT_TRUE(platform.ok()) << platform.status();
  return platform.ok() ? *std::move(platform) : nullptr;
}

// The time `bytes` take from device `src` to `dst` by the topology's
// figures: the route's latencies plus the bytes at its slowest link.
SimTime HandTransferTime(const Topology& topology, int src, int dst,
                         double bytes) {
  Router router(topology);
  absl::StatusOr<std::vector<int>> route =
      router.Route(topology.device(src).node, topology.device(dst).node);
  EXPECT_TRUE(route.ok()) << route.status();
  SimTime latency = 0;
  double bandwidth = 1e300;
  for (int id : *route) {
    latency += topology.link(id).latency_ps;
    bandwidth =
        std::min(bandwidth, topology.link(id).capacity_bytes_per_second);
  }
  return latency + std::llround(bytes / bandwidth * 1e12);
}

TEST(SimPlatformTest, DgxH100DevicesHaveTensorFlowNames) {
  RegisterSimPlatform();
  RegisterSimPlatform();  // Idempotent.
  absl::StatusOr<std::unique_ptr<devices::Platform>> platform =
      devices::CreatePlatform("sim:dgx_h100");
  ASSERT_TRUE(platform.ok()) << platform.status();
  EXPECT_EQ((*platform)->name(), "sim:dgx_h100");
  std::vector<std::string> gpus;
  for (const std::string& name : (*platform)->DeviceNames()) {
    absl::StatusOr<devices::Device*> device = (*platform)->FindDevice(name);
    ASSERT_TRUE(device.ok());
    EXPECT_EQ((*device)->name(), name);
    if ((*device)->kind() == devices::DeviceKind::kGPU) gpus.push_back(name);
  }
  ASSERT_EQ(gpus.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(gpus[static_cast<size_t>(i)],
              absl::StrCat("/job:worker/replica:0/task:0/device:GPU:", i));
  }
  for (absl::string_view short_name : {"/gpu:3", "GPU:3", "/device:GPU:3",
                                       "/job:worker/task:0/device:GPU:3"}) {
    absl::StatusOr<devices::Device*> gpu3 = (*platform)->FindDevice(short_name);
    ASSERT_TRUE(gpu3.ok()) << short_name << ": " << gpu3.status();
    EXPECT_EQ((*gpu3)->name(), "/job:worker/replica:0/task:0/device:GPU:3");
    EXPECT_EQ((*gpu3)->memory_capacity(), int64_t{80} << 30);
    EXPECT_TRUE((*gpu3)->functional());
  }
  absl::StatusOr<devices::Device*> cpu = (*platform)->FindDevice("/cpu:0");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ((*cpu)->kind(), devices::DeviceKind::kCPU);
  EXPECT_EQ((*platform)->FindDevice("GPU:8").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ((*platform)->FindDevice("/gpu:x").status().code(),
            absl::StatusCode::kInvalidArgument);
  // GPU groups get a simulated NCCL (sim_nccl_communicator_test.cc); CPUs
  // do not.
  auto nccl = (*platform)->CreateCommunicator({"GPU:0", "GPU:1"});
  ASSERT_TRUE(nccl.ok()) << nccl.status();
  EXPECT_EQ((*nccl)->name(), "nccl(sim)");
  EXPECT_EQ((*platform)->CreateCommunicator({"CPU:0"}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(SimPlatformTest, ClusterHasOneTaskPerHost) {
  std::unique_ptr<SimPlatform> platform =
      MakePlatform("sim:dgx_h100_cluster:2");
  ASSERT_NE(platform, nullptr);
  int gpus[2] = {0, 0};
  for (const std::string& name : platform->DeviceNames()) {
    SimDevice* device = *platform->FindSimDevice(name);
    ASSERT_TRUE(device->task() == 0 || device->task() == 1) << name;
    if (device->kind() == devices::DeviceKind::kGPU) ++gpus[device->task()];
  }
  EXPECT_EQ(gpus[0], 8);
  EXPECT_EQ(gpus[1], 8);
  absl::StatusOr<SimDevice*> remote =
      platform->FindSimDevice("/job:worker/replica:0/task:1/device:GPU:7");
  ASSERT_TRUE(remote.ok()) << remote.status();
  EXPECT_EQ((*remote)->task(), 1);
  // Short names mean task 0.
  EXPECT_EQ((*platform->FindSimDevice("GPU:7"))->task(), 0);
}

TEST(SimPlatformTest, TpuCoresCarryMeshCoordinates) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("sim:tpu_v4:2x2x1");
  ASSERT_NE(platform, nullptr);
  ASSERT_TRUE(platform->mesh().has_value());
  EXPECT_EQ(platform->mesh()->x, 2);
  EXPECT_EQ(platform->mesh()->y, 2);
  EXPECT_EQ(platform->mesh()->z, 1);
  EXPECT_EQ(platform->mesh()->cores_per_chip, 2);
  // Cores are ordered by z, y, x, then core.
  const int expected[8][4] = {{0, 0, 0, 0}, {0, 0, 0, 1}, {1, 0, 0, 0},
                              {1, 0, 0, 1}, {0, 1, 0, 0}, {0, 1, 0, 1},
                              {1, 1, 0, 0}, {1, 1, 0, 1}};
  for (int i = 0; i < 8; ++i) {
    absl::StatusOr<SimDevice*> core =
        platform->FindSimDevice(absl::StrCat("TPU:", i));
    ASSERT_TRUE(core.ok()) << core.status();
    EXPECT_EQ((*core)->kind(), devices::DeviceKind::kTPU);
    EXPECT_EQ((*core)->name(),
              absl::StrCat("/job:worker/replica:0/task:0/device:TPU:", i));
    ASSERT_TRUE((*core)->coordinates().has_value());
    const MeshCoordinates& at = *(*core)->coordinates();
    EXPECT_EQ(at.x, expected[i][0]) << i;
    EXPECT_EQ(at.y, expected[i][1]) << i;
    EXPECT_EQ(at.z, expected[i][2]) << i;
    EXPECT_EQ(at.core, expected[i][3]) << i;
  }
  EXPECT_FALSE((*platform->FindSimDevice("CPU:0"))->coordinates().has_value());
}

TEST(SimPlatformTest, TpuTopologyPlacesEveryCoreTaskByTask) {
  // tpu_v4:4x4x1: 16 chips, 2 cores each, hosts of 2x2x1 chips (4 tasks).
  std::unique_ptr<SimPlatform> platform = MakePlatform("sim:tpu_v4:4x4x1");
  ASSERT_NE(platform, nullptr);
  absl::StatusOr<devices::TpuTopology> topology = platform->GetTpuTopology();
  ASSERT_TRUE(topology.ok()) << topology.status();
  EXPECT_EQ(topology->mesh_shape(), (std::array<int, 4>{4, 4, 1, 2}));
  EXPECT_EQ(topology->num_tasks(), 4);
  EXPECT_EQ(topology->num_tpus_per_task(), 8);
  EXPECT_TRUE(topology->missing_devices().empty());
  for (int t = 0; t < topology->num_tasks(); ++t) {
    const devices::TpuTopology::Task& task =
        topology->tasks()[static_cast<size_t>(t)];
    EXPECT_EQ(task.cpu_device,
              absl::StrCat("/job:worker/replica:0/task:", t, "/device:CPU:0"));
    for (int o = 0; o < 8; ++o) {
      const devices::TpuTopology::Core& core =
          task.tpus[static_cast<size_t>(o)];
      EXPECT_EQ(core.name, absl::StrCat("/job:worker/replica:0/task:", t,
                                        "/device:TPU:", o));
      // The topology agrees with the device's own coordinates.
      const MeshCoordinates& at =
          *(*platform->FindSimDevice(core.name))->coordinates();
      EXPECT_EQ(core.coordinates,
                (devices::TpuCoordinates{at.x, at.y, at.z, at.core}));
      EXPECT_EQ(*topology->TaskOrdinalAtCoordinates(core.coordinates), t);
      EXPECT_EQ(*topology->TpuDeviceOrdinalAtCoordinates(core.coordinates), o);
    }
  }
  // The chip at (2, 0) belongs to the second host.
  EXPECT_EQ(*topology->TpuDeviceNameAtCoordinates({2, 0, 0, 1}),
            "/job:worker/replica:0/task:1/device:TPU:1");
  EXPECT_EQ(topology->TpuDeviceNameAtCoordinates({4, 0, 0, 0}).status().code(),
            absl::StatusCode::kNotFound);
  // TF's serialized form carries it whole: read back, every core has its
  // place, ordinal and name (the platform names tasks as TF does).
  absl::StatusOr<devices::TpuTopology> read =
      devices::TpuTopology::FromSerialized(topology->Serialized());
  ASSERT_TRUE(read.ok()) << read.status();
  for (int t = 0; t < topology->num_tasks(); ++t) {
    const devices::TpuTopology::Task& task =
        topology->tasks()[static_cast<size_t>(t)];
    const devices::TpuTopology::Task& again =
        read->tasks()[static_cast<size_t>(t)];
    EXPECT_EQ(again.cpu_device, task.cpu_device);
    for (size_t o = 0; o < task.tpus.size(); ++o) {
      EXPECT_EQ(again.tpus[o].coordinates, task.tpus[o].coordinates);
      EXPECT_EQ(again.tpus[o].name, task.tpus[o].name);
    }
  }

  std::unique_ptr<SimPlatform> gpus = MakePlatform("sim:dgx_h100");
  ASSERT_NE(gpus, nullptr);
  EXPECT_EQ(gpus->GetTpuTopology().status().code(),
            absl::StatusCode::kUnimplemented);
}

TEST(SimPlatformTest, SpecsAndTheirErrors) {
  absl::StatusOr<SimPlatformSpec> spec = ParseSimPlatformSpec(
      "sim:dgx_h100_cluster:2;timing;notrace;dtype=bfloat16");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->topology, "dgx_h100_cluster:2");
  EXPECT_FALSE(spec->options.functional);
  EXPECT_FALSE(spec->options.trace);
  EXPECT_EQ(spec->options.compute_dtype, "bfloat16");
  EXPECT_EQ(spec->options.name, "sim:dgx_h100_cluster:2");
  EXPECT_EQ(ParseSimPlatformSpec("sim:").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSimPlatformSpec("host:2").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseSimPlatformSpec("sim:laptop;fast").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SimPlatform::FromSpec("sim:no_such_machine").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(
      SimPlatform::FromSpec("sim:/no/such/file.textproto").status().code(),
      absl::StatusCode::kNotFound);
  // A dtype some device has no peak for.
  EXPECT_EQ(SimPlatform::FromSpec("sim:laptop;dtype=tf32").status().code(),
            absl::StatusCode::kInvalidArgument);
  // A fault on a device that does not exist.
  SimPlatformOptions options;
  options.faults.KillDevice("GPU:9", FaultTrigger::AtTime(0));
  EXPECT_EQ(SimPlatform::Create(*BuiltinTopology("dgx_h100"), options)
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  std::unique_ptr<SimPlatform> timing = MakePlatform("sim:laptop;timing");
  ASSERT_NE(timing, nullptr);
  EXPECT_EQ(timing->name(), "sim:laptop");
  EXPECT_FALSE(timing->functional());
}

TEST(SimPlatformTest, TopologyFromAFile) {
  // The test's data: a copy of the pcie_4gpu built-in.
  std::unique_ptr<SimPlatform> platform =
      MakePlatform("sim:simulator/topologies/pcie_4gpu.textproto;timing");
  ASSERT_NE(platform, nullptr);
  EXPECT_EQ(platform->name(), "sim:simulator/topologies/pcie_4gpu.textproto");
  EXPECT_FALSE(platform->functional());
  int gpus = 0;
  for (const std::string& name : platform->DeviceNames()) {
    if ((*platform->FindDevice(name))->kind() == devices::DeviceKind::kGPU) {
      ++gpus;
    }
  }
  EXPECT_EQ(gpus, 4);
}

TEST(SimPlatformTest, AllocationBeyondCapacityIsOutOfMemory) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("sim:dgx_h100");
  ASSERT_NE(platform, nullptr);
  devices::Device* gpu = *platform->FindDevice("GPU:0");
  absl::StatusOr<devices::Tensor> small =
      gpu->Allocate(DType::kFloat32, Shape({256}));
  ASSERT_TRUE(small.ok());
  EXPECT_TRUE(small->has_data());
  EXPECT_EQ(small->device(), kGpu0);
  EXPECT_EQ(gpu->memory_in_use(), 1024);
  absl::StatusOr<devices::Tensor> huge =
      gpu->Allocate(DType::kFloat32, Shape({(int64_t{81} << 30) / 4}));
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(
      huge.status().message().find(absl::StrCat("out of memory on ", kGpu0)),
      std::string::npos)
      << huge.status();
}

TEST(SimPlatformTest, TimingOnlyModeNeverAllocates) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("sim:dgx_h100;timing");
  ASSERT_NE(platform, nullptr);
  devices::Device* gpu = *platform->FindDevice("GPU:0");
  EXPECT_FALSE(gpu->functional());
  EXPECT_EQ(gpu->allocator().memory_space(),
            devices::MemorySpace::kAccountingOnly);
  // 60 GiB: far more than a test may take from the host heap.
  absl::StatusOr<devices::Tensor> big =
      gpu->Allocate(DType::kFloat32, Shape({(int64_t{60} << 30) / 4}));
  ASSERT_TRUE(big.ok()) << big.status();
  EXPECT_FALSE(big->has_data());
  EXPECT_EQ(big->raw_data(), nullptr);
  EXPECT_EQ(gpu->memory_in_use(), int64_t{60} << 30);
  EXPECT_EQ(gpu->Allocate(DType::kFloat32, Shape({(int64_t{30} << 30) / 4}))
                .status()
                .code(),
            absl::StatusCode::kResourceExhausted);
  // Kernels charge time but do not run their data work.
  bool ran = false;
  std::shared_ptr<devices::Event> done = gpu->Enqueue(
      devices::FillCost(DType::kFloat32, big->num_elements()), [&] {
        ran = true;
        return absl::OkStatus();
      });
  EXPECT_TRUE(done->Wait(absl::Seconds(10)).ok());
  EXPECT_FALSE(ran);
  EXPECT_GT(platform->now(), 0);
  // Copies charge time without touching (null) buffers.
  EXPECT_TRUE(gpu->CopyFromHost(nullptr, *big).ok());
  devices::Device* gpu1 = *platform->FindDevice("GPU:1");
  absl::StatusOr<devices::Tensor> other =
      gpu1->Allocate(big->dtype(), big->shape());
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(gpu->CopyToDevice(*big, *other).ok());
}

TEST(SimPlatformTest, KernelTimeIsTheRoofline) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("sim:dgx_h100");
  ASSERT_NE(platform, nullptr);
  SimDevice* gpu = *platform->FindSimDevice("GPU:0");
  const DeviceSpec& spec = gpu->info().spec;
  const SimTime launch = Nanoseconds(spec.launch_overhead_ns());
  const double peak = spec.peak_flops().at("float32");  // 67 TFLOP/s
  // Compute-bound: 67e9 float32 FLOPs take 1 ms at 67 TFLOP/s.
  const devices::KernelCost matmul{"MatMul", 67e9, 1e6};
  const SimTime compute_bound =
      launch + std::llround(matmul.flops / peak * 1e12);
  EXPECT_EQ(compute_bound, Microseconds(1004));
  absl::Status status =
      gpu->Enqueue(matmul, [] { return absl::InternalError("kernel says no"); })
          ->Wait(absl::Seconds(10));
  EXPECT_EQ(status.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(platform->now(), compute_bound);
  // Memory-bound: 3.35 GB at 3.35 TB/s take 1 ms.
  const devices::KernelCost copy{
      "Copy", 1e6, spec.memory_bandwidth_bytes_per_second() / 1000};
  EXPECT_TRUE(gpu->Enqueue(copy, [] { return absl::OkStatus(); })
                  ->Wait(absl::Seconds(10))
                  .ok());
  EXPECT_EQ(platform->now(), compute_bound + launch + Milliseconds(1));
  // Synchronize reports the first error once.
  EXPECT_EQ(gpu->Synchronize(absl::Seconds(10)).code(),
            absl::StatusCode::kInternal);
  EXPECT_TRUE(gpu->Synchronize(absl::Seconds(10)).ok());
  absl::StatusOr<SimDeviceStats> stats = platform->DeviceStats("GPU:0");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->kernels, 2);
  EXPECT_EQ(stats->compute_time, platform->now());
  EXPECT_EQ(stats->busy_time, platform->now());
  EXPECT_EQ(stats->communication_time, 0);
  EXPECT_EQ(platform->DeviceStats("GPU:1")->busy_time, 0);
  EXPECT_EQ(platform->DeviceStats("GPU:99").status().code(),
            absl::StatusCode::kNotFound);
  // The trace has the kernels on the device's compute track.
  const std::string trace = platform->TraceJson();
  EXPECT_NE(trace.find("\"MatMul\""), std::string::npos);
  EXPECT_NE(trace.find(kGpu0), std::string::npos);
  Summary summary = platform->RunSummary();
  EXPECT_EQ(summary.end_time, platform->now());
}

TEST(SimPlatformTest, CopiesAreTransfersOverTheRoute) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("sim:dgx_h100");
  ASSERT_NE(platform, nullptr);
  SimDevice* gpu0 = *platform->FindSimDevice("GPU:0");
  SimDevice* gpu1 = *platform->FindSimDevice("GPU:1");
  SimDevice* cpu = *platform->FindSimDevice("CPU:0");
  const int64_t count = 63008;  // float32: 252032 bytes
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) values[static_cast<size_t>(i)] = 0.5f * i;
  absl::StatusOr<devices::Tensor> a =
      gpu0->Allocate(DType::kFloat32, Shape({count}));
  absl::StatusOr<devices::Tensor> b =
      gpu1->Allocate(DType::kFloat32, Shape({count}));
  ASSERT_TRUE(a.ok() && b.ok());
  const double bytes = static_cast<double>(a->bytes());

  ASSERT_TRUE(gpu0->CopyFromHost(values.data(), *a).ok());
  const SimTime up = HandTransferTime(platform->topology(), cpu->index(),
                                      gpu0->index(), bytes);
  EXPECT_EQ(platform->now(), up);

  ASSERT_TRUE(gpu0->CopyToDevice(*a, *b).ok());
  const SimTime across = HandTransferTime(platform->topology(), gpu0->index(),
                                          gpu1->index(), bytes);
  EXPECT_EQ(platform->now(), up + across);

  std::vector<float> back(static_cast<size_t>(count));
  ASSERT_TRUE(gpu1->CopyToHost(*b, back.data()).ok());
  EXPECT_EQ(back, values);
  EXPECT_EQ(platform->now(),
            up + across +
                HandTransferTime(platform->topology(), gpu1->index(),
                                 cpu->index(), bytes));
  absl::StatusOr<SimDeviceStats> stats = platform->DeviceStats("GPU:0");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->communication_time, up + across);
  EXPECT_EQ(stats->bytes_sent, a->bytes());
  EXPECT_EQ(stats->bytes_received, a->bytes());

  // A copy within one device is a Memcpy kernel at memory bandwidth.
  absl::StatusOr<devices::Tensor> c =
      gpu0->Allocate(DType::kFloat32, Shape({count}));
  ASSERT_TRUE(c.ok());
  const SimTime before = platform->now();
  ASSERT_TRUE(gpu0->CopyToDevice(*a, *c).ok());
  const DeviceSpec& spec = gpu0->info().spec;
  EXPECT_EQ(platform->now() - before,
            Nanoseconds(spec.launch_overhead_ns()) +
                std::llround(2 * bytes /
                             spec.memory_bandwidth_bytes_per_second() * 1e12));
  EXPECT_EQ(c->ToVector<float>(), values);

  // Misuse.
  EXPECT_EQ(gpu1->CopyToHost(*a, back.data()).code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<devices::Tensor> wrong =
      gpu1->Allocate(DType::kFloat32, Shape({3}));
  ASSERT_TRUE(wrong.ok());
  EXPECT_EQ(gpu0->CopyToDevice(*a, *wrong).code(),
            absl::StatusCode::kInvalidArgument);
  devices::Tensor host = devices::Tensor::FromVector<float>(values);
  EXPECT_EQ(gpu0->CopyToDevice(*a, host).code(),
            absl::StatusCode::kInvalidArgument);
}

devices::conformance::PlatformBackend SimBackend(std::string name,
                                                 std::string spec) {
  return {std::move(name),
          [spec]() -> absl::StatusOr<std::unique_ptr<devices::Platform>> {
            ASSIGN_OR_RETURN(std::unique_ptr<SimPlatform> p,
                             SimPlatform::FromSpec(spec));
            return std::unique_ptr<devices::Platform>(std::move(p));
          }};
}

using devices::conformance::PlatformConformanceTest;

INSTANTIATE_TEST_SUITE_P(
    Simulator, PlatformConformanceTest,
    ::testing::Values(SimBackend("dgx_h100", "sim:dgx_h100"),
                      SimBackend("dgx_h100_timing", "sim:dgx_h100;timing"),
                      SimBackend("tpu_v4", "sim:tpu_v4:2x2x1")),
    devices::conformance::PlatformBackendName);

}  // namespace
}  // namespace simulator
