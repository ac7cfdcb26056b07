#include "simulator/sim_transport.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "devices/kernel_costs.h"
#include "devices/status_macros.h"
#include "devices/transport.h"
#include "devices/transport_conformance.h"
#include "gtest/gtest.h"
#include "simulator/builtin_topologies.h"
#include "simulator/faults.h"
#include "simulator/routing.h"
#include "simulator/sim_platform.h"
#include "simulator/time.h"
#include "simulator/topology.h"
#include "simulator/trace.h"

namespace simulator {
namespace {

using Endpoints = std::vector<std::unique_ptr<devices::Transport>>;

constexpr absl::Duration kWait = absl::Seconds(30);

std::unique_ptr<SimPlatform> MakePlatform(absl::string_view spec,
                                          SimPlatformOptions options = {}) {
  absl::StatusOr<SimPlatformSpec> parsed = ParseSimPlatformSpec(spec);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<Topology> topology = BuiltinTopology(parsed->topology);
  EXPECT_TRUE(topology.ok()) << topology.status();
  options.functional = parsed->options.functional;
  options.deadlock_grace = absl::Milliseconds(20);
  absl::StatusOr<std::unique_ptr<SimPlatform>> platform =
      SimPlatform::Create(*std::move(topology), std::move(options));
  EXPECT_TRUE(platform.ok()) << platform.status();
  return platform.ok() ? *std::move(platform) : nullptr;
}

Endpoints Group(SimPlatform& platform, const std::vector<std::string>& names) {
  absl::StatusOr<Endpoints> endpoints = platform.CreateTransportGroup(names);
  EXPECT_TRUE(endpoints.ok()) << endpoints.status();
  return endpoints.ok() ? *std::move(endpoints) : Endpoints();
}

// Route latency and slowest link between two devices, from the topology.
struct RouteFigures {
  SimTime latency = 0;
  double bandwidth = 0;
};

RouteFigures Figures(SimPlatform& platform, absl::string_view from,
                     absl::string_view to) {
  const Topology& topology = platform.topology();
  Router router(topology);
  const int src = (*platform.FindSimDevice(from))->info().node;
  const int dst = (*platform.FindSimDevice(to))->info().node;
  absl::StatusOr<std::vector<int>> route = router.Route(src, dst);
  EXPECT_TRUE(route.ok()) << route.status();
  RouteFigures figures{0, 1e300};
  for (int id : *route) {
    figures.latency += topology.link(id).latency_ps;
    figures.bandwidth = std::min(figures.bandwidth,
                                 topology.link(id).capacity_bytes_per_second);
  }
  return figures;
}

// A shape-only message of `bytes` (timing-only platforms never touch it).
absl::Span<const std::byte> NoData(size_t bytes) {
  return absl::Span<const std::byte>(nullptr, bytes);
}
absl::Span<std::byte> NoBuffer(size_t bytes) {
  return absl::Span<std::byte>(nullptr, bytes);
}

TEST(SimTransportTest, SendTakesLatencyPlusBytesOverBandwidth) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("sim:dgx_h100;timing");
  ASSERT_NE(platform, nullptr);
  Endpoints group = Group(*platform, {"GPU:0", "GPU:1"});
  ASSERT_EQ(group.size(), 2u);
  EXPECT_EQ(group[1]->device(0), "/job:worker/replica:0/task:0/device:GPU:0");
  const size_t bytes = 45'000'000;
  auto send = group[0]->Send(1, 7, NoData(bytes));
  auto recv = group[1]->Recv(0, 7, NoBuffer(bytes));
  ASSERT_TRUE(send.ok() && recv.ok());
  EXPECT_TRUE((*recv)->Wait(kWait).ok());
  EXPECT_TRUE((*send)->IsComplete());
  EXPECT_TRUE((*send)->Wait(kWait).ok());
  // NVSwitch: 2 x 250 ns, 18 NVLinks of 25 GB/s: 100 us for 45 MB.
  const RouteFigures route = Figures(*platform, "GPU:0", "GPU:1");
  EXPECT_EQ(route.latency, Nanoseconds(500));
  EXPECT_DOUBLE_EQ(route.bandwidth, 450e9);
  const SimTime expected =
      route.latency + std::llround(bytes / route.bandwidth * 1e12);
  EXPECT_EQ(platform->now(), expected);
  EXPECT_EQ(expected, Nanoseconds(100'500));
  absl::StatusOr<SimDeviceStats> stats = platform->DeviceStats("GPU:1");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->communication_time, expected);
  EXPECT_EQ(stats->bytes_received, static_cast<int64_t>(bytes));
  // The link tracks of the trace show the transfer, and the summary counts
  // its bytes on both links of the route.
  const std::string trace = platform->TraceJson();
  EXPECT_NE(trace.find("gpu0->nvswitch"), std::string::npos);
  const Summary summary = platform->RunSummary();
  EXPECT_EQ(summary.end_time, expected);
  int links_used = 0;
  for (const LinkUsage& link : summary.links) {
    if (link.bytes == 0) continue;
    ++links_used;
    EXPECT_EQ(link.bytes, static_cast<int64_t>(bytes)) << link.name;
    EXPECT_EQ(link.flows, 1) << link.name;
  }
  EXPECT_EQ(links_used, 2);
  const std::string path = testing::TempDir() + "/sim_transport_trace.json";
  ASSERT_TRUE(platform->WriteTrace(path).ok());
  std::ifstream file(path);
  std::stringstream written;
  written << file.rdbuf();
  EXPECT_EQ(written.str(), trace);
}

TEST(SimTransportTest, SendsSharingALinkTakeTwiceAsLong) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("sim:dgx_h100;timing");
  ASSERT_NE(platform, nullptr);
  Endpoints group = Group(*platform, {"GPU:0", "GPU:1", "GPU:2"});
  const size_t bytes = 45'000'000;
  // GPU:0 -> GPU:1 and GPU:2 -> GPU:1 share the link nvswitch -> gpu1.
  auto a = group[0]->Send(1, 1, NoData(bytes));
  auto b = group[2]->Send(1, 2, NoData(bytes));
  auto ra = group[1]->Recv(0, 1, NoBuffer(bytes));
  auto rb = group[1]->Recv(2, 2, NoBuffer(bytes));
  ASSERT_TRUE(a.ok() && b.ok() && ra.ok() && rb.ok());
  EXPECT_TRUE((*ra)->Wait(kWait).ok());
  EXPECT_TRUE((*rb)->IsComplete());
  const RouteFigures route = Figures(*platform, "GPU:0", "GPU:1");
  EXPECT_EQ(platform->now(),
            route.latency + std::llround(2 * bytes / route.bandwidth * 1e12));
  EXPECT_TRUE((*a)->Wait(kWait).ok());
  EXPECT_TRUE((*b)->Wait(kWait).ok());
}

TEST(SimTransportTest, FunctionalMessagesArriveIntact) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("sim:dgx_h100");
  ASSERT_NE(platform, nullptr);
  Endpoints group = Group(*platform, {"GPU:3", "GPU:5"});
  std::vector<std::byte> data(4096);
  for (size_t i = 0; i < data.size(); ++i) data[i] = std::byte(i * 7 + 1);
  std::vector<std::byte> first(data.size()), second(data.size()), self(16);
  // Two messages with one tag arrive in order; a rank may send to itself.
  auto r1 = group[1]->Recv(0, 9, absl::MakeSpan(first));
  auto r2 = group[1]->Recv(0, 9, absl::MakeSpan(second));
  auto s1 = group[0]->Send(1, 9, absl::MakeConstSpan(data));
  std::vector<std::byte> reversed(data.rbegin(), data.rend());
  auto s2 = group[0]->Send(1, 9, absl::MakeConstSpan(reversed));
  auto self_send = group[0]->Send(0, 3, absl::MakeConstSpan(data).first(16));
  auto self_recv = group[0]->Recv(0, 3, absl::MakeSpan(self));
  for (auto* request : {&r1, &r2, &s1, &s2, &self_send, &self_recv}) {
    ASSERT_TRUE(request->ok());
    EXPECT_TRUE((**request)->Wait(kWait).ok());
  }
  EXPECT_EQ(first, data);
  EXPECT_EQ(second, reversed);
  EXPECT_TRUE(std::equal(self.begin(), self.end(), data.begin()));
}

TEST(SimTransportTest, SizeMismatchFailsBothSides) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("sim:dgx_h100");
  ASSERT_NE(platform, nullptr);
  Endpoints group = Group(*platform, {"GPU:0", "GPU:1"});
  std::vector<std::byte> out(8), in(16);
  auto send = group[0]->Send(1, 4, absl::MakeConstSpan(out));
  auto recv = group[1]->Recv(0, 4, absl::MakeSpan(in));
  ASSERT_TRUE(send.ok() && recv.ok());
  EXPECT_EQ((*send)->Wait(kWait).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*recv)->Wait(kWait).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(group[0]->Send(2, 0, absl::MakeConstSpan(out)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(SimTransportTest, GroupErrors) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("sim:dgx_h100");
  ASSERT_NE(platform, nullptr);
  EXPECT_EQ(platform->CreateTransportGroup({}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(platform->CreateTransportGroup({"GPU:0", "/gpu:0"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(platform->CreateTransportGroup({"GPU:0", "GPU:42"}).status().code(),
            absl::StatusCode::kNotFound);
}

// Both threads are bound; the receiver's peer never posts.
TEST(SimTransportTest, APeerThatNeverArrivesIsDeadlineExceeded) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("sim:dgx_h100");
  ASSERT_NE(platform, nullptr);
  Endpoints group = Group(*platform, {"GPU:0", "GPU:1"});
  SimDevice* gpu1 = *platform->FindSimDevice("GPU:1");
  absl::Status waited;
  std::thread receiver([&] {
    std::unique_ptr<devices::ThreadBinding> bound = gpu1->BindThread();
    std::vector<std::byte> buffer(64);
    auto recv = group[1]->Recv(0, 77, absl::MakeSpan(buffer));
    ASSERT_TRUE(recv.ok());
    waited = (*recv)->Wait(kWait);
    // The request is still posted: a late send completes it.
    auto send = group[0]->Send(1, 77, absl::MakeConstSpan(buffer));
    ASSERT_TRUE(send.ok());
    EXPECT_TRUE((*recv)->Wait(kWait).ok());
    EXPECT_TRUE((*send)->Wait(kWait).ok());
  });
  receiver.join();
  EXPECT_EQ(waited.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(waited.message().find("rank 0"), std::string::npos) << waited;
  EXPECT_NE(waited.message().find("tag 77"), std::string::npos) << waited;
  EXPECT_NE(waited.message().find("Send"), std::string::npos) << waited;
  // An unbound wait for a message that never comes fails the same way.
  std::vector<std::byte> buffer(8);
  auto lonely = group[0]->Recv(1, 5, absl::MakeSpan(buffer));
  ASSERT_TRUE(lonely.ok());
  EXPECT_EQ((*lonely)->Wait(kWait).code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ((*lonely)->Wait(absl::ZeroDuration()).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE((*lonely)->IsComplete());
}

TEST(SimTransportTest, DeadDeviceIsUnavailable) {
  SimPlatformOptions options;
  options.faults.KillDevice("GPU:1", FaultTrigger::AtTime(Microseconds(1)));
  std::unique_ptr<SimPlatform> platform =
      MakePlatform("sim:dgx_h100", std::move(options));
  ASSERT_NE(platform, nullptr);
  devices::Device* gpu0 = *platform->FindDevice("GPU:0");
  devices::Device* gpu1 = *platform->FindDevice("GPU:1");
  // A kernel on GPU:0 takes simulated time past the fault.
  ASSERT_TRUE(gpu0->Enqueue(devices::KernelCost{"Work", 0, 1e9},
                            [] { return absl::OkStatus(); })
                  ->Wait(kWait)
                  .ok());
  const std::string dead = "/job:worker/replica:0/task:0/device:GPU:1";
  absl::Status kernel = gpu1->Enqueue(devices::KernelCost{"Work", 0, 1e6},
                                      [] { return absl::OkStatus(); })
                            ->Wait(kWait);
  EXPECT_EQ(kernel.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(kernel.message().find(dead), std::string::npos) << kernel;
  Endpoints group = Group(*platform, {"GPU:0", "GPU:1"});
  std::vector<std::byte> out(64), in(64);
  auto send = group[0]->Send(1, 1, absl::MakeConstSpan(out));
  auto recv = group[1]->Recv(0, 1, absl::MakeSpan(in));
  ASSERT_TRUE(send.ok() && recv.ok());
  absl::Status sent = (*send)->Wait(kWait);
  EXPECT_EQ(sent.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(sent.message().find(dead), std::string::npos) << sent;
  EXPECT_EQ((*recv)->Wait(kWait).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(platform->FiredFaults().size(), 1u);
}

TEST(SimTransportTest, CutLinkIsUnavailable) {
  SimPlatformOptions options;
  options.faults.CutLink("nvswitch->gpu1", FaultTrigger::AtTime(0));
  std::unique_ptr<SimPlatform> platform =
      MakePlatform("sim:dgx_h100", std::move(options));
  ASSERT_NE(platform, nullptr);
  // Let the fault fire.
  ASSERT_TRUE((*platform->FindDevice("GPU:2"))
                  ->Enqueue(devices::KernelCost{"Work", 0, 1e6},
                            [] { return absl::OkStatus(); })
                  ->Wait(kWait)
                  .ok());
  Endpoints group = Group(*platform, {"GPU:0", "GPU:1"});
  std::vector<std::byte> out(64), in(64);
  auto send = group[0]->Send(1, 1, absl::MakeConstSpan(out));
  auto recv = group[1]->Recv(0, 1, absl::MakeSpan(in));
  ASSERT_TRUE(send.ok() && recv.ok());
  absl::Status received = (*recv)->Wait(kWait);
  EXPECT_EQ(received.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(received.message().find("nvswitch->gpu1"), std::string::npos)
      << received;
  // The other direction still works.
  auto back = group[1]->Send(0, 2, absl::MakeConstSpan(in));
  auto back_recv = group[0]->Recv(1, 2, absl::MakeSpan(out));
  ASSERT_TRUE(back.ok() && back_recv.ok());
  EXPECT_TRUE((*back_recv)->Wait(kWait).ok());
}

TEST(SimTransportTest, AbortFailsPendingAndLaterRequests) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("sim:dgx_h100");
  ASSERT_NE(platform, nullptr);
  Endpoints group = Group(*platform, {"GPU:0", "GPU:1"});
  std::vector<std::byte> buffer(32);
  auto recv = group[1]->Recv(0, 3, absl::MakeSpan(buffer));
  ASSERT_TRUE(recv.ok());
  EXPECT_EQ(group[0]->Abort(absl::OkStatus()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(group[0]->Abort(absl::InternalError("step failed")).ok());
  EXPECT_TRUE(group[1]->Abort(absl::InternalError("second")).ok());
  absl::Status status = (*recv)->Wait(kWait);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("step failed"), std::string::npos) << status;
  EXPECT_EQ(group[0]->Send(1, 3, absl::MakeConstSpan(buffer)).status().code(),
            absl::StatusCode::kUnavailable);
  // A destroyed endpoint makes its rank gone.
  Endpoints other = Group(*platform, {"GPU:2", "GPU:3"});
  auto orphan = other[0]->Recv(1, 1, absl::MakeSpan(buffer));
  ASSERT_TRUE(orphan.ok());
  other[1].reset();
  EXPECT_EQ((*orphan)->Wait(kWait).code(), absl::StatusCode::kUnavailable);
}

TEST(SimTransportTest, AbortForATimeoutIsDeadlineExceededEverywhere) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("sim:dgx_h100");
  ASSERT_NE(platform, nullptr);
  Endpoints group = Group(*platform, {"GPU:0", "GPU:1"});
  std::vector<std::byte> buffer(32);
  auto recv = group[1]->Recv(0, 3, absl::MakeSpan(buffer));
  ASSERT_TRUE(recv.ok());
  EXPECT_TRUE(
      group[0]->Abort(absl::DeadlineExceededError("step 3 timed out")).ok());
  absl::Status status = (*recv)->Wait(kWait);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_NE(status.message().find("step 3 timed out"), std::string::npos)
      << status;
}

TEST(SimTransportTest, DestroyingAnUnmatchedRequestWithdrawsIt) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("sim:dgx_h100");
  ASSERT_NE(platform, nullptr);
  Endpoints group = Group(*platform, {"GPU:0", "GPU:1"});
  std::vector<std::byte> data(16, std::byte{5}), stale(16), fresh(16);
  {
    auto withdrawn = group[1]->Recv(0, 8, absl::MakeSpan(stale));
    ASSERT_TRUE(withdrawn.ok());
  }
  auto recv = group[1]->Recv(0, 8, absl::MakeSpan(fresh));
  auto send = group[0]->Send(1, 8, absl::MakeConstSpan(data));
  ASSERT_TRUE(recv.ok() && send.ok());
  EXPECT_TRUE((*recv)->Wait(kWait).ok());
  EXPECT_EQ(fresh, data);
  EXPECT_EQ(stale, std::vector<std::byte>(16));
}

}  // namespace
}  // namespace simulator

namespace simulator {
namespace {

using devices::conformance::TransportConformanceTest;

// A functional platform (messages carry their bytes), with the default
// deadlock grace: the suite's waits are on the host's clock.
INSTANTIATE_TEST_SUITE_P(
    Simulator, TransportConformanceTest,
    ::testing::Values(devices::conformance::TransportBackend{
        "sim",
        [](int n) -> absl::StatusOr<devices::conformance::TransportGroup> {
          ASSIGN_OR_RETURN(Topology topology, BuiltinTopology("dgx_h100"));
          ASSIGN_OR_RETURN(std::unique_ptr<SimPlatform> platform,
                           SimPlatform::Create(std::move(topology)));
          std::vector<std::string> names;
          for (int r = 0; r < n; ++r) names.push_back(absl::StrCat("GPU:", r));
          ASSIGN_OR_RETURN(Endpoints endpoints,
                           platform->CreateTransportGroup(names));
          devices::conformance::TransportGroup group;
          group.owner = std::shared_ptr<SimPlatform>(std::move(platform));
          group.endpoints = std::move(endpoints);
          return group;
        }}),
    devices::conformance::BackendName);

}  // namespace
}  // namespace simulator
