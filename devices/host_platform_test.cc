#include "devices/host_platform.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "absl/synchronization/notification.h"
#include "devices/platform_conformance.h"
#include "devices/platform_registry.h"
#include "devices/status_macros.h"
#include "gtest/gtest.h"

namespace devices {
namespace {

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";
constexpr char kCpu2[] = "/job:localhost/replica:0/task:0/device:CPU:2";

std::unique_ptr<HostPlatform> MakePlatform(int devices) {
  HostPlatformOptions options;
  options.num_devices = devices;
  absl::StatusOr<std::unique_ptr<HostPlatform>> platform =
      HostPlatform::Create(options);
  EXPECT_TRUE(platform.ok()) << platform.status();
  return std::move(*platform);
}

TEST(HostPlatformTest, ParseSpec) {
  EXPECT_EQ(HostPlatform::ParseSpec("host")->num_devices, 1);
  EXPECT_EQ(HostPlatform::ParseSpec("host:8")->num_devices, 8);
  EXPECT_EQ(HostPlatform::ParseSpec("host")->memory_capacity,
            kDefaultHostMemoryCapacity);
  for (const char* bad : {"host:", "host:0", "host:-1", "host:x",
                          "host:4096000", "hostx", "cuda", "host:2:3", ""}) {
    EXPECT_EQ(HostPlatform::ParseSpec(bad).status().code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(HostPlatformTest, CreateValidatesOptions) {
  HostPlatformOptions options;
  options.num_devices = 0;
  EXPECT_EQ(HostPlatform::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.num_devices = 1;
  options.memory_capacity = -1;
  EXPECT_EQ(HostPlatform::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.memory_capacity = 1024;
  options.job_prefix = "/job:worker/device:CPU:0";
  EXPECT_EQ(HostPlatform::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.job_prefix = "/job:";
  EXPECT_EQ(HostPlatform::Create(options).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HostPlatformTest, DeviceNamesAndProperties) {
  auto platform = MakePlatform(3);
  EXPECT_EQ(platform->name(), "host");
  EXPECT_EQ(platform->DeviceNames(),
            (std::vector<std::string>{kCpu0, kCpu1, kCpu2}));
  for (const std::string& name : platform->DeviceNames()) {
    absl::StatusOr<Device*> device = platform->FindDevice(name);
    ASSERT_TRUE(device.ok()) << device.status();
    EXPECT_EQ((*device)->name(), name);
    EXPECT_EQ((*device)->kind(), DeviceKind::kCPU);
    EXPECT_EQ((*device)->memory_capacity(), kDefaultHostMemoryCapacity);
  }
}

TEST(HostPlatformTest, FindDeviceByShortNames) {
  auto platform = MakePlatform(3);
  Device* cpu1 = *platform->FindDevice(kCpu1);
  for (const char* name :
       {"/cpu:1", "CPU:1", "cpu:1", "/device:CPU:1", "/job:localhost/cpu:1",
        "/job:localhost/replica:0/task:0/device:CPU:1", "/task:0/cpu:1"}) {
    absl::StatusOr<Device*> device = platform->FindDevice(name);
    ASSERT_TRUE(device.ok()) << name << ": " << device.status();
    EXPECT_EQ(*device, cpu1) << name;
  }
  EXPECT_EQ(*platform->FindDevice(""), *platform->FindDevice(kCpu0));
  EXPECT_EQ(*platform->FindDevice("/cpu:*"), *platform->FindDevice(kCpu0));
}

TEST(HostPlatformTest, FindDeviceErrors) {
  auto platform = MakePlatform(2);
  for (const char* missing :
       {"/gpu:0", "/cpu:2", "/job:worker/cpu:0", "/task:1/cpu:0"}) {
    absl::StatusOr<Device*> device = platform->FindDevice(missing);
    ASSERT_EQ(device.status().code(), absl::StatusCode::kNotFound) << missing;
    EXPECT_NE(device.status().message().find(kCpu0), absl::string_view::npos);
    EXPECT_NE(device.status().message().find(kCpu1), absl::string_view::npos);
  }
  EXPECT_EQ(platform->FindDevice("foo").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(platform->FindDevice("/cpu:-1").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HostPlatformTest, CustomJobPrefixAndCapacity) {
  HostPlatformOptions options;
  options.num_devices = 2;
  options.memory_capacity = 4096;
  options.job_prefix = "/job:worker/task:3";
  auto platform = HostPlatform::Create(options);
  ASSERT_TRUE(platform.ok()) << platform.status();
  EXPECT_EQ(
      (*platform)->DeviceNames(),
      (std::vector<std::string>{"/job:worker/replica:0/task:3/device:CPU:0",
                                "/job:worker/replica:0/task:3/device:CPU:1"}));
  absl::StatusOr<Device*> device = (*platform)->FindDevice("/cpu:1");
  ASSERT_TRUE(device.ok()) << device.status();
  EXPECT_EQ((*device)->name(), "/job:worker/replica:0/task:3/device:CPU:1");
  EXPECT_EQ((*device)->memory_capacity(), 4096);
  EXPECT_EQ((*device)->Allocate(DType::kFloat32, Shape({2000})).status().code(),
            absl::StatusCode::kResourceExhausted);
  EXPECT_EQ((*platform)->FindDevice("/job:localhost/cpu:0").status().code(),
            absl::StatusCode::kNotFound);
}

TEST(HostPlatformTest, TransportGroupFromShortNames) {
  auto platform = MakePlatform(3);
  auto group = platform->CreateTransportGroup({"/cpu:2", "CPU:0"});
  ASSERT_TRUE(group.ok()) << group.status();
  ASSERT_EQ(group->size(), 2u);
  EXPECT_EQ((*group)[0]->device(0), kCpu2);
  EXPECT_EQ((*group)[0]->device(1), kCpu0);
  EXPECT_EQ((*group)[1]->rank(), 1);
  const std::vector<std::byte> message(1000, std::byte{7});
  std::vector<std::byte> out(1000);
  std::thread receiver([&] {
    auto recv = (*group)[1]->Recv(0, 0, absl::MakeSpan(out));
    ASSERT_TRUE(recv.ok());
    EXPECT_TRUE((*recv)->Wait(absl::Seconds(30)).ok());
  });
  auto send = (*group)[0]->Send(1, 0, message);
  ASSERT_TRUE(send.ok());
  EXPECT_TRUE((*send)->Wait(absl::Seconds(30)).ok());
  receiver.join();
  EXPECT_EQ(out, message);
}

TEST(HostPlatformTest, TransportGroupErrors) {
  auto platform = MakePlatform(2);
  EXPECT_EQ(platform->CreateTransportGroup({}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(platform->CreateTransportGroup({"/cpu:0", kCpu0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      platform->CreateTransportGroup({"/cpu:0", "/gpu:0"}).status().code(),
      absl::StatusCode::kNotFound);
  EXPECT_EQ(platform->CreateTransportGroup({"bad name"}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HostPlatformTest, NoCommunicator) {
  auto platform = MakePlatform(2);
  absl::StatusOr<std::unique_ptr<Communicator>> comm =
      platform->CreateCommunicator(platform->DeviceNames());
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(comm.status().message().find("host platform"),
            absl::string_view::npos);
}

TEST(HostPlatformTest, RegisteredFactory) {
  RegisterHostPlatform();
  RegisterHostPlatform();  // Idempotent.
  const std::vector<std::string> names = ListPlatformFactories();
  EXPECT_NE(std::find(names.begin(), names.end(), "host"), names.end());
  absl::StatusOr<std::unique_ptr<Platform>> platform = CreatePlatform("host:4");
  ASSERT_TRUE(platform.ok()) << platform.status();
  EXPECT_EQ((*platform)->DeviceNames().size(), 4u);
  absl::StatusOr<std::unique_ptr<Platform>> single = CreatePlatform("host");
  ASSERT_TRUE(single.ok());
  EXPECT_EQ((*single)->DeviceNames(), std::vector<std::string>{kCpu0});
  EXPECT_EQ(CreatePlatform("host:zero").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HostPlatformTest, DevicesRunIndependently) {
  auto platform = MakePlatform(2);
  Device* cpu0 = *platform->FindDevice("/cpu:0");
  Device* cpu1 = *platform->FindDevice("/cpu:1");
  // cpu0's queue is blocked until cpu1's work runs: they must not share a
  // worker thread.
  absl::Notification ran_on_cpu1;
  auto blocked = cpu0->Enqueue(KernelCost{"Wait", 0, 0}, [&] {
    return ran_on_cpu1.WaitForNotificationWithTimeout(absl::Seconds(30))
               ? absl::OkStatus()
               : absl::DeadlineExceededError("cpu1 never ran");
  });
  auto other = cpu1->Enqueue(KernelCost{"Signal", 0, 0}, [&] {
    ran_on_cpu1.Notify();
    return absl::OkStatus();
  });
  EXPECT_TRUE(other->Wait(absl::Seconds(30)).ok());
  EXPECT_TRUE(blocked->Wait(absl::Seconds(30)).ok());
}

using conformance::PlatformConformanceTest;

INSTANTIATE_TEST_SUITE_P(Host, PlatformConformanceTest,
                         ::testing::Values(conformance::PlatformBackend{
                             "host",
                             []() -> absl::StatusOr<std::unique_ptr<Platform>> {
                               HostPlatformOptions options;
                               options.num_devices = 2;
                               ASSIGN_OR_RETURN(std::unique_ptr<HostPlatform> p,
                                                HostPlatform::Create(options));
                               return std::unique_ptr<Platform>(std::move(p));
                             }}),
                         conformance::PlatformBackendName);

}  // namespace
}  // namespace devices
