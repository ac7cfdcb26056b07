// The CUDA platform, its devices (memory, queue, events, copies) and its
// transport, on real GPUs; the spec parsing and the no-GPU error run
// everywhere.
#include "devices/cuda/cuda_platform.h"

#include <cuda_runtime.h>

#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devices/cuda/cuda_kernels.h"
#include "devices/cuda/cuda_status.h"
#include "devices/cuda/cuda_test_util.h"
#include "devices/cuda/cuda_transport.h"
#include "devices/cuda/ops.h"
#include "devices/cuda/test_values.h"
#include "devices/platform_conformance.h"
#include "devices/platform_registry.h"
#include "devices/status_macros.h"
#include "devices/transport_conformance.h"
#include "gtest/gtest.h"

namespace devices {
namespace cuda {
namespace {

TEST(CudaPlatformSpecTest, ParsesCudaAndCudaN) {
  EXPECT_EQ(CudaPlatform::ParseSpec("cuda")->num_gpus, -1);
  EXPECT_EQ(CudaPlatform::ParseSpec("cuda:2")->num_gpus, 2);
  for (const char* bad :
       {"cuda:", "cuda:0", "cuda:-1", "cuda:x", "cudax", "host"}) {
    EXPECT_EQ(CudaPlatform::ParseSpec(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(CudaPlatformSpecTest, RejectsBadOptionsBeforeLookingForGpus) {
  CudaPlatformOptions options;
  options.num_gpus = 0;
  EXPECT_EQ(CudaPlatform::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.num_gpus = -1;
  options.job_prefix = "/job:a/device:GPU:0";
  EXPECT_EQ(CudaPlatform::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CudaPlatformSpecTest, WithoutAGpuTheFactoryFailsCleanly) {
  if (!NoGpuReason().has_value()) GTEST_SKIP() << "this machine has a GPU";
  RegisterCudaPlatform();
  RegisterCudaPlatform();  // Idempotent.
  absl::StatusOr<std::unique_ptr<Platform>> platform = CreatePlatform("cuda");
  EXPECT_EQ(platform.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(platform.status().message().find(
                "no CUDA GPU found (cudaGetDeviceCount: "),
            std::string::npos)
      << platform.status();
}

class CudaPlatformTest : public GpuTest {};

TEST_F(CudaPlatformTest, ListsAndFindsDevices) {
  std::vector<std::string> names = platform().DeviceNames();
  ASSERT_EQ(names.size(), static_cast<size_t>(num_gpus() + 1));
  for (int i = 0; i < num_gpus(); ++i) {
    EXPECT_EQ(names[i],
              absl::StrCat("/job:localhost/replica:0/task:0/device:GPU:", i));
    EXPECT_EQ(gpu(i).ordinal(), i);
    EXPECT_EQ(gpu(i).kind(), DeviceKind::kGPU);
    EXPECT_GT(gpu(i).memory_capacity(), 0);
    EXPECT_FALSE(gpu(i).description().empty());
  }
  EXPECT_EQ(names.back(), "/job:localhost/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(*platform().FindDevice("/gpu:0"), &gpu(0));
  EXPECT_EQ(*platform().FindDevice("GPU:0"), &gpu(0));
  EXPECT_EQ((*platform().FindDevice("/cpu:0"))->kind(), DeviceKind::kCPU);
  EXPECT_EQ(platform().FindDevice("/gpu:99").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(platform().FindDevice("not a device").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(platform().FindGpu("/cpu:0").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CudaPlatformTest, RegistryMakesThePlatform) {
  RegisterCudaPlatform();
  absl::StatusOr<std::unique_ptr<Platform>> made = CreatePlatform("cuda:1");
  ASSERT_TRUE(made.ok()) << made.status();
  EXPECT_EQ((*made)->name(), "cuda");
  EXPECT_EQ((*made)->DeviceNames().size(), 2u);  // GPU:0 and CPU:0.
  EXPECT_EQ(CreatePlatform("cuda:4096").status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(CudaPlatformTest, CopiesRoundTrip) {
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1000}, int64_t{1} << 20}) {
    Tensor host = TestValues(DType::kFloat32, n, 1);
    Tensor on_gpu = ToGpu(gpu(), host);
    EXPECT_EQ(on_gpu.device(), gpu().name());
    EXPECT_FALSE(on_gpu.host_accessible());
    EXPECT_EQ(FirstDifference(ToHost(gpu(), on_gpu), host), "") << n;
    // Within the GPU and to the host CPU device.
    Tensor copy = *gpu().Allocate(DType::kFloat32, Shape({n}));
    ASSERT_TRUE(gpu().CopyToDevice(on_gpu, copy).ok());
    EXPECT_EQ(FirstDifference(ToHost(gpu(), copy), host), "") << n;
    Device* cpu = *platform().FindDevice("/cpu:0");
    Tensor on_cpu = *cpu->Allocate(DType::kFloat32, Shape({n}));
    ASSERT_TRUE(gpu().CopyToDevice(on_gpu, on_cpu).ok());
    EXPECT_EQ(FirstDifference(on_cpu, host), "") << n;
  }
}

TEST_F(CudaPlatformTest, PeerCopies) {
  if (num_gpus() < 2) GTEST_SKIP() << "needs 2 GPUs, found " << num_gpus();
  Tensor host = TestValues(DType::kFloat64, 12345, 2);
  for (int from = 0; from < num_gpus(); ++from) {
    const int to = (from + 1) % num_gpus();
    Tensor src = ToGpu(gpu(from), host);
    Tensor dst = *gpu(to).Allocate(DType::kFloat64, host.shape());
    ASSERT_TRUE(gpu(from).CopyToDevice(src, dst).ok());
    EXPECT_EQ(FirstDifference(ToHost(gpu(to), dst), host), "")
        << from << " -> " << to;
  }
}

TEST_F(CudaPlatformTest, CopyErrors) {
  Tensor x = *gpu().Allocate(DType::kFloat32, Shape({4}));
  Tensor y = *gpu().Allocate(DType::kFloat32, Shape({5}));
  Tensor host = *Tensor::Host(DType::kFloat32, Shape({4}));
  EXPECT_EQ(gpu().CopyToDevice(x, y).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu().CopyToHost(host, host.raw_data()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu().CopyFromHost(nullptr, x).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu().CopyToHost(x, nullptr).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(CudaPlatformTest, AllocatorAccountsCachesAndRunsOut) {
  CudaAllocator& allocator = gpu().cuda_allocator();
  const int64_t before = gpu().memory_in_use();
  {
    Tensor t = *gpu().Allocate(DType::kFloat32, Shape({1000}));
    EXPECT_EQ(gpu().memory_in_use(), before + 4000);
  }
  EXPECT_EQ(gpu().memory_in_use(), before);
  EXPECT_GE(allocator.cached_bytes(), 4000);
  allocator.ReleaseCache();
  EXPECT_EQ(allocator.cached_bytes(), 0);
  EXPECT_EQ(CudaAllocator::RoundedSize(1), 512u);
  EXPECT_EQ(CudaAllocator::RoundedSize(8192), 8192u);
  EXPECT_EQ(CudaAllocator::RoundedSize(8193), 9216u);

  CudaPlatformOptions options;
  options.num_gpus = 1;
  options.gpu_memory_limit = 1 << 20;
  std::unique_ptr<CudaPlatform> small = *CudaPlatform::Create(options);
  EXPECT_EQ(small->gpu(0)->memory_capacity(), 1 << 20);
  absl::StatusOr<Tensor> too_big =
      small->gpu(0)->Allocate(DType::kFloat32, Shape({1 << 20}));
  EXPECT_EQ(too_big.status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(CudaPlatformTest, QueueRunsInOrderAndEventsComplete) {
  Tensor x = *gpu().Allocate(DType::kInt64, Shape({1000}));
  std::vector<int> order;
  std::vector<std::shared_ptr<Event>> events;
  for (int i = 0; i < 10; ++i) {
    events.push_back(gpu().Enqueue(FillCost(DType::kInt64, 1000), [&, i] {
      order.push_back(i);
      return Fill(gpu(), i, x).status();
    }));
  }
  for (auto& event : events) EXPECT_TRUE(event->Wait(absl::Seconds(30)).ok());
  EXPECT_TRUE(events.back()->IsReady());
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(ToHost(gpu(), x).ToVector<int64_t>(),
            std::vector<int64_t>(1000, 9));
}

TEST_F(CudaPlatformTest, EventWaitTimesOutWhileTheGpuIsBusy) {
  std::shared_ptr<Event> busy =
      gpu().Enqueue(KernelCost{"Sleep", 0, 0}, [this] {
        return CudaStatus(LaunchSleep(2000000000, gpu().stream()),
                          "LaunchSleep");
      });
  absl::Status waited = busy->Wait(absl::Milliseconds(10));
  EXPECT_EQ(waited.code(), absl::StatusCode::kDeadlineExceeded) << waited;
  EXPECT_NE(waited.message().find("Sleep on"), std::string::npos) << waited;
  EXPECT_EQ(gpu().Synchronize(absl::Milliseconds(10)).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(busy->Wait(absl::Seconds(60)).ok());
  EXPECT_TRUE(gpu().Synchronize(absl::Seconds(60)).ok());
}

TEST_F(CudaPlatformTest, SynchronizeReportsTheFirstError) {
  gpu().Enqueue(KernelCost{"Bad", 0, 0},
                [] { return absl::InternalError("first"); });
  gpu().Enqueue(KernelCost{"Bad", 0, 0},
                [] { return absl::InternalError("second"); });
  absl::Status s = gpu().Synchronize(absl::Seconds(30));
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "first");
  EXPECT_TRUE(gpu().Synchronize(absl::Seconds(30)).ok());
}

TEST_F(CudaPlatformTest, BindThreadMakesTheGpuCurrent) {
  const int last = num_gpus() - 1;
  std::thread thread([&] {
    std::unique_ptr<ThreadBinding> binding = gpu(last).BindThread();
    int current = -1;
    ASSERT_EQ(cudaGetDevice(&current), cudaSuccess);
    EXPECT_EQ(current, last);
  });
  thread.join();
}

TEST_F(CudaPlatformTest, TransportMovesDataBetweenGpusAndHost) {
  std::vector<std::string> names;
  for (int i = 0; i < num_gpus(); ++i) names.push_back(gpu(i).name());
  names.push_back("/cpu:0");
  auto group = platform().CreateTransportGroup(names);
  ASSERT_TRUE(group.ok()) << group.status();
  const int size = static_cast<int>(group->size());
  Tensor host = TestValues(DType::kFloat32, 4096, 3);
  // Each GPU rank sends to the next rank (the last GPU to the CPU rank).
  std::vector<Tensor> sent;
  std::vector<Tensor> received;
  Device* cpu = *platform().FindDevice("/cpu:0");
  for (int r = 0; r < size; ++r) {
    sent.push_back(r < num_gpus() ? ToGpu(gpu(r), host) : Tensor());
    received.push_back(r == 0 ? Tensor()
                       : r < num_gpus()
                           ? *gpu(r).Allocate(DType::kFloat32, host.shape())
                           : *cpu->Allocate(DType::kFloat32, host.shape()));
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      Transport& t = *(*group)[r];
      std::unique_ptr<Request> send;
      std::unique_ptr<Request> recv;
      if (r + 1 < size) {
        send = *t.Send(r + 1, 5,
                       {static_cast<const std::byte*>(sent[r].raw_data()),
                        sent[r].bytes()});
      }
      if (r > 0) {
        recv = *t.Recv(r - 1, 5,
                       {static_cast<std::byte*>(received[r].raw_data()),
                        received[r].bytes()});
      }
      if (send) {
        EXPECT_TRUE(send->Wait(absl::Seconds(30)).ok());
      }
      if (recv) {
        EXPECT_TRUE(recv->Wait(absl::Seconds(30)).ok());
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int r = 1; r < size; ++r) {
    Tensor back = r < num_gpus() ? ToHost(gpu(r), received[r]) : received[r];
    EXPECT_EQ(FirstDifference(back, host), "") << "rank " << r;
  }
}

TEST_F(CudaPlatformTest, TransportErrors) {
  auto group = platform().CreateTransportGroup({"/gpu:0", "/cpu:0"});
  ASSERT_TRUE(group.ok()) << group.status();
  Tensor x = *gpu().Allocate(DType::kFloat32, Shape({4}));
  std::vector<float> small(3);
  auto send = (*group)[0]->Send(
      1, 1, {static_cast<const std::byte*>(x.raw_data()), x.bytes()});
  auto recv =
      (*group)[1]->Recv(0, 1, {reinterpret_cast<std::byte*>(small.data()), 12});
  EXPECT_EQ((*recv)->Wait(absl::Seconds(10)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*send)->Wait(absl::Seconds(10)).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*group)[0]->Send(2, 1, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto pending = (*group)[1]->Recv(0, 2, {});
  EXPECT_EQ((*pending)->Wait(absl::Milliseconds(1)).code(),
            absl::StatusCode::kDeadlineExceeded);
  ASSERT_TRUE((*group)[0]->Abort(absl::CancelledError("test")).ok());
  EXPECT_EQ((*pending)->Wait(absl::Seconds(10)).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(
      platform().CreateTransportGroup({"/gpu:0", "/gpu:0"}).status().code(),
      absl::StatusCode::kInvalidArgument);
}

TEST_F(CudaPlatformTest, CommunicatorsSpanDistinctGpusOnly) {
  EXPECT_EQ(platform().CreateCommunicator({"/cpu:0"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(platform().CreateCommunicator({"/gpu:0", "GPU:0"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(platform().CreateCommunicator({"/gpu:77"}).status().code(),
            absl::StatusCode::kNotFound);
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      platform().CreateCommunicator({"/gpu:0"});
  ASSERT_TRUE(comm.ok()) << comm.status();
  EXPECT_EQ((*comm)->name(), "nccl");
  EXPECT_EQ((*comm)->size(), 1);
}

// The Transport contract, with host buffers (the suite's), which the CUDA
// transport moves as the host transport does; skipped without a GPU.
using conformance::TransportConformanceTest;

INSTANTIATE_TEST_SUITE_P(
    Cuda, TransportConformanceTest,
    ::testing::Values(conformance::TransportBackend{
        "cuda",
        [](int n) -> absl::StatusOr<conformance::TransportGroup> {
          if (std::optional<std::string> why = NoGpuReason()) {
            return absl::FailedPreconditionError(
                absl::StrCat("no CUDA GPU found: ", *why));
          }
          std::vector<std::string> names;
          for (int r = 0; r < n; ++r) {
            names.push_back(
                absl::StrCat("/job:localhost/replica:0/task:0/device:GPU:", r));
          }
          ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Transport>> group,
                           CreateCudaTransportGroup(names));
          conformance::TransportGroup out;
          out.endpoints = std::move(group);
          return out;
        }}),
    conformance::BackendName);

using conformance::PlatformConformanceTest;

INSTANTIATE_TEST_SUITE_P(Cuda, PlatformConformanceTest,
                         ::testing::Values(conformance::PlatformBackend{
                             "cuda",
                             []() -> absl::StatusOr<std::unique_ptr<Platform>> {
                               if (std::optional<std::string> why =
                                       NoGpuReason()) {
                                 return absl::FailedPreconditionError(
                                     absl::StrCat("no CUDA GPU found: ", *why));
                               }
                               ASSIGN_OR_RETURN(std::unique_ptr<CudaPlatform> p,
                                                CudaPlatform::Create());
                               return std::unique_ptr<Platform>(std::move(p));
                             }}),
                         conformance::PlatformBackendName);

}  // namespace
}  // namespace cuda
}  // namespace devices
