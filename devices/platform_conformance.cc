#include "devices/platform_conformance.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "devices/device.h"
#include "devices/dtype.h"
#include "devices/event.h"
#include "devices/kernel_costs.h"
#include "devices/shape.h"
#include "devices/tensor.h"
#include "devices/thread_binding.h"

namespace devices {
namespace conformance {
namespace {

constexpr absl::Duration kLong = absl::Seconds(30);

std::vector<float> Ramp(int64_t n, float start) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + i;
  return v;
}

}  // namespace

// Linked into tests that instantiate it, and into others that share their
// dependencies.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(PlatformConformanceTest);

void PrintTo(const PlatformBackend& backend, std::ostream* os) {
  *os << backend.name;
}

std::string PlatformBackendName(
    const ::testing::TestParamInfo<PlatformBackend>& info) {
  return info.param.name;
}

void PlatformConformanceTest::SetUp() {
  absl::StatusOr<std::unique_ptr<Platform>> made = GetParam().make();
  if (!made.ok() && (absl::IsFailedPrecondition(made.status()) ||
                     absl::IsUnavailable(made.status()))) {
    GTEST_SKIP() << GetParam().name
                 << " cannot run here: " << made.status().message();
  }
  ASSERT_TRUE(made.ok()) << made.status();
  platform_ = *std::move(made);
}

// Every device has a full, unique name that finds it again; bad names are
// told apart from unknown ones.
TEST_P(PlatformConformanceTest, DevicesAreNamedAndFound) {
  EXPECT_FALSE(platform().name().empty());
  const std::vector<std::string> names = platform().DeviceNames();
  ASSERT_FALSE(names.empty());
  std::set<std::string> seen;
  for (const std::string& name : names) {
    EXPECT_TRUE(seen.insert(name).second) << name << " listed twice";
    EXPECT_TRUE(absl::StartsWith(name, "/job:")) << name;
    absl::StatusOr<Device*> device = platform().FindDevice(name);
    ASSERT_TRUE(device.ok()) << name << ": " << device.status();
    EXPECT_EQ((*device)->name(), name);
    EXPECT_TRUE(absl::StrContains(
        name, absl::StrCat("/device:", DeviceKindName((*device)->kind()))))
        << name;
  }
  EXPECT_EQ(platform().FindDevice("not a device name").status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status unknown =
      platform()
          .FindDevice("/job:nowhere/replica:0/task:0/device:CPU:977")
          .status();
  EXPECT_EQ(unknown.code(), absl::StatusCode::kNotFound) << unknown;
}

// Host to device and back, on every device, and the memory it holds
// while the tensor lives.
TEST_P(PlatformConformanceTest, AllocatesAndCopiesOnEveryDevice) {
  for (const std::string& name : platform().DeviceNames()) {
    Device* device = *platform().FindDevice(name);
    std::unique_ptr<ThreadBinding> bound = device->BindThread();
    const int64_t before = device->memory_in_use();
    {
      absl::StatusOr<Tensor> t =
          device->Allocate(DType::kFloat32, Shape({1000}));
      ASSERT_TRUE(t.ok()) << name << ": " << t.status();
      EXPECT_EQ(t->device(), name);
      EXPECT_EQ(t->num_elements(), 1000);
      EXPECT_GE(device->memory_in_use(), before + 4000) << name;
      EXPECT_LE(device->memory_in_use(), device->memory_capacity()) << name;
      const std::vector<float> in = Ramp(1000, 3);
      ASSERT_TRUE(device->CopyFromHost(in.data(), *t).ok()) << name;
      std::vector<float> out(1000, -1);
      ASSERT_TRUE(device->CopyToHost(*t, out.data()).ok()) << name;
      if (device->functional()) {
        EXPECT_EQ(out, in) << name;
      } else {
        EXPECT_FALSE(t->has_data()) << name;
      }
    }
    EXPECT_EQ(device->memory_in_use(), before) << name;
  }
}

TEST_P(PlatformConformanceTest, AllocationBeyondTheMemoryIsExhausted) {
  const std::string name = platform().DeviceNames()[0];
  Device* device = *platform().FindDevice(name);
  const int64_t elements = device->memory_capacity() / 4 + 1;
  absl::StatusOr<Tensor> t =
      device->Allocate(DType::kFloat32, Shape({elements}));
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted)
      << t.status();
  EXPECT_TRUE(absl::StrContains(t.status().message(), name)) << t.status();
}

// Queued work runs once each, in order; an error completes its own event
// and is what the next Synchronize reports, once.
TEST_P(PlatformConformanceTest, QueueRunsInOrderAndReportsTheFirstError) {
  const std::string name = platform().DeviceNames()[0];
  Device* device = *platform().FindDevice(name);
  std::unique_ptr<ThreadBinding> bound = device->BindThread();
  std::vector<int> ran;
  std::vector<std::shared_ptr<Event>> events;
  for (int i = 0; i < 4; ++i) {
    events.push_back(device->Enqueue(KernelCost{}, [&ran, i]() -> absl::Status {
      ran.push_back(i);
      if (i == 1) return absl::InternalError("item 1 failed");
      if (i == 2) return absl::DataLossError("item 2 failed too");
      return absl::OkStatus();
    }));
  }
  const absl::Status first = device->Synchronize(kLong);
  if (!device->functional()) {
    // Data work does not run on a timing-only device; its time is charged.
    EXPECT_TRUE(first.ok()) << first;
    EXPECT_TRUE(ran.empty());
    for (const auto& event : events) EXPECT_TRUE(event->Wait(kLong).ok());
    return;
  }
  EXPECT_EQ(first.code(), absl::StatusCode::kInternal) << first;
  EXPECT_TRUE(absl::StrContains(first.message(), "item 1 failed")) << first;
  EXPECT_EQ(ran, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(events[0]->Wait(kLong).ok());
  EXPECT_EQ(events[1]->Wait(kLong).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(events[2]->Wait(kLong).code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(events[3]->Wait(kLong).ok());
  EXPECT_TRUE(device->Synchronize(kLong).ok()) << "the error was reported";
}

// A tensor copied between two devices of the platform, and copies given a
// tensor of another device.
TEST_P(PlatformConformanceTest, CopiesBetweenDevices) {
  const std::vector<std::string> names = platform().DeviceNames();
  if (names.size() < 2) {
    GTEST_SKIP() << "one device";
  }
  Device* a = *platform().FindDevice(names[0]);
  Device* b = *platform().FindDevice(names[1]);
  std::unique_ptr<ThreadBinding> bound = a->BindThread();
  absl::StatusOr<Tensor> src = a->Allocate(DType::kFloat32, Shape({64}));
  absl::StatusOr<Tensor> dst = b->Allocate(DType::kFloat32, Shape({64}));
  ASSERT_TRUE(src.ok() && dst.ok());
  const std::vector<float> in = Ramp(64, 7);
  ASSERT_TRUE(a->CopyFromHost(in.data(), *src).ok());
  ASSERT_TRUE(a->CopyToDevice(*src, *dst).ok());
  std::vector<float> out(64, -1);
  ASSERT_TRUE(b->CopyToHost(*dst, out.data()).ok());
  if (a->functional() && b->functional()) {
    EXPECT_EQ(out, in);
  }
  // `dst` is b's: a cannot copy into it from the host.
  EXPECT_EQ(a->CopyFromHost(in.data(), *dst).code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<Tensor> other_shape =
      b->Allocate(DType::kFloat32, Shape({63}));
  ASSERT_TRUE(other_shape.ok());
  EXPECT_EQ(a->CopyToDevice(*src, *other_shape).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_P(PlatformConformanceTest, GroupFactoriesCheckTheirDevices) {
  const std::vector<std::string> names = platform().DeviceNames();
  EXPECT_EQ(platform().CreateTransportGroup({}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      platform().CreateTransportGroup({names[0], names[0]}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(platform()
                .CreateTransportGroup(
                    {"/job:nowhere/replica:0/task:0/device:CPU:977"})
                .status()
                .code(),
            absl::StatusCode::kNotFound);
  absl::StatusOr<std::vector<std::unique_ptr<Transport>>> group =
      platform().CreateTransportGroup({names[0]});
  ASSERT_TRUE(group.ok()) << group.status();
  ASSERT_EQ(group->size(), 1u);
  EXPECT_EQ((*group)[0]->device(0), names[0]);
  // A native collective library over every kind of device it spans, or
  // UNIMPLEMENTED naming the platform; a device it does not span is
  // FAILED_PRECONDITION naming the device.
  for (const std::string& name : names) {
    absl::StatusOr<std::unique_ptr<Communicator>> comm =
        platform().CreateCommunicator({name});
    if (comm.ok()) continue;
    const absl::Status& s = comm.status();
    if (absl::IsUnimplemented(s)) {
      EXPECT_TRUE(absl::StrContains(s.message(), platform().name())) << s;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition) << s;
      EXPECT_TRUE(absl::StrContains(s.message(), name)) << s;
    }
  }
}

}  // namespace conformance
}  // namespace devices
