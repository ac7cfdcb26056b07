// The collective layer over the simulated platform's transport: an
// all-reduce among the 8 GPUs of a DGX H100, from 8 bound threads, computes
// the right values in a reproducible simulated time.
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "devices/communicator.h"
#include "devices/communicator_conformance.h"
#include "devices/dtype.h"
#include "devices/reduce_op.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "devices/thread_binding.h"
#include "distribute/collective/schedule_communicator.h"
#include "gtest/gtest.h"
#include "simulator/builtin_topologies.h"
#include "simulator/sim_platform.h"
#include "simulator/sim_test_util.h"
#include "simulator/time.h"

namespace simulator {
namespace {

constexpr int kRanks = 8;
// Not a multiple of the group size.
constexpr int64_t kCount = 100'003;

struct AllReduceRun {
  SimTime end = 0;
  std::string trace;
};

AllReduceRun RunAllReduce(absl::string_view spec) {
  AllReduceRun run;
  absl::StatusOr<std::unique_ptr<SimPlatform>> platform =
      SimPlatform::FromSpec(spec);
  EXPECT_TRUE(platform.ok()) << platform.status();
  if (!platform.ok()) return run;
  const bool functional = (*platform)->functional();
  std::vector<std::string> names;
  for (int r = 0; r < kRanks; ++r) names.push_back(absl::StrCat("/gpu:", r));
  auto endpoints = (*platform)->CreateTransportGroup(names);
  EXPECT_TRUE(endpoints.ok()) << endpoints.status();
  if (!endpoints.ok()) return run;
  auto comm = distribute::collective::ScheduleCommunicator::Create(
      *std::move(endpoints), {});
  EXPECT_TRUE(comm.ok()) << comm.status();
  if (!comm.ok()) return run;
  BindingBarrier start(kRanks);
  std::vector<std::thread> threads;
  for (int rank = 0; rank < kRanks; ++rank) {
    threads.emplace_back([&, rank] {
      std::mt19937 random(std::random_device{}());
      absl::SleepFor(absl::Microseconds(
          std::uniform_int_distribution<int>(0, 2000)(random)));
      SimDevice* gpu = *(*platform)->FindSimDevice(names[rank]);
      std::unique_ptr<devices::ThreadBinding> bound = gpu->BindThread();
      start.Wait();
      absl::StatusOr<devices::Tensor> input =
          gpu->Allocate(devices::DType::kFloat32, devices::Shape({kCount}));
      absl::StatusOr<devices::Tensor> output =
          gpu->Allocate(devices::DType::kFloat32, devices::Shape({kCount}));
      ASSERT_TRUE(input.ok() && output.ok());
      if (functional) {
        float* in = input->data<float>();
        for (int64_t i = 0; i < kCount; ++i) {
          in[i] = static_cast<float>((rank + 1) * (i % 7));
        }
      }
      devices::CollectiveOptions options;
      options.op = devices::ReduceOp::kSum;
      options.timeout = absl::Seconds(60);
      absl::Status status = (*comm)->AllReduce(rank, *input, *output, options);
      ASSERT_TRUE(status.ok()) << "rank " << rank << ": " << status;
      if (functional) {
        const float* out = output->data<float>();
        for (int64_t i = 0; i < kCount; ++i) {
          // sum over ranks of (rank + 1) = 36.
          ASSERT_EQ(out[i], static_cast<float>(36 * (i % 7)))
              << "rank " << rank << " element " << i;
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  run.end = (*platform)->now();
  run.trace = (*platform)->TraceJson();
  return run;
}

TEST(SimCollectivesTest, AllReduceOnDgxH100IsRightAndReproducible) {
  const AllReduceRun first = RunAllReduce("sim:dgx_h100");
  ASSERT_GT(first.end, 0);
  // 400 KB over 450 GB/s links: tens of microseconds, not milliseconds.
  EXPECT_LT(first.end, Milliseconds(1));
  for (int run = 1; run < 3; ++run) {
    const AllReduceRun again = RunAllReduce("sim:dgx_h100");
    EXPECT_EQ(again.end, first.end) << "run " << run;
    EXPECT_TRUE(again.trace == first.trace) << "run " << run;
  }
  // Timing-only mode moves no data and takes the same simulated time.
  const AllReduceRun timing = RunAllReduce("sim:dgx_h100;timing");
  EXPECT_EQ(timing.end, first.end);
}

// The Communicator contract on a functional simulated DGX H100: the
// simulated NCCL, and ScheduleCommunicator over the simulated transport with
// AUTO and the ring; every rank on a thread bound to its GPU, started
// together (a BindingBarrier), as strategies run them.
enum class SimBackend { kNccl, kAuto, kRing };

devices::conformance::CommunicatorBackend SimCommunicators(std::string name,
                                                           SimBackend kind) {
  return {
      std::move(name),
      [kind](int n) -> absl::StatusOr<devices::conformance::CommunicatorGroup> {
        ASSIGN_OR_RETURN(Topology topology, BuiltinTopology("dgx_h100"));
        ASSIGN_OR_RETURN(std::unique_ptr<SimPlatform> made,
                         SimPlatform::Create(std::move(topology)));
        std::shared_ptr<SimPlatform> platform = std::move(made);
        std::vector<std::string> names;
        for (int r = 0; r < n; ++r) names.push_back(absl::StrCat("GPU:", r));
        devices::conformance::CommunicatorGroup group;
        if (kind == SimBackend::kNccl) {
          ASSIGN_OR_RETURN(auto comm, platform->CreateCommunicator(names));
          group.communicator = std::move(comm);
        } else {
          ASSIGN_OR_RETURN(auto endpoints,
                           platform->CreateTransportGroup(names));
          distribute::collective::ScheduleCommunicatorOptions options;
          if (kind == SimBackend::kRing) {
            options.all_reduce_algorithm =
                distribute::collective::Algorithm::kRing;
          }
          ASSIGN_OR_RETURN(auto comm,
                           distribute::collective::ScheduleCommunicator::Create(
                               std::move(endpoints), options));
          group.communicator = std::move(comm);
        }
        SimPlatform* p = platform.get();
        group.run_ranks = [p, names](const std::function<void(int)>& body) {
          BindingBarrier start(static_cast<int>(names.size()));
          std::vector<std::thread> threads;
          for (size_t r = 0; r < names.size(); ++r) {
            SimDevice* device = *p->FindSimDevice(names[r]);
            threads.emplace_back([&, device, r] {
              std::unique_ptr<devices::ThreadBinding> bound =
                  device->BindThread();
              start.Wait();
              body(static_cast<int>(r));
            });
          }
          for (std::thread& t : threads) t.join();
        };
        group.owner = std::move(platform);
        return group;
      }};
}

using devices::conformance::CommunicatorConformanceTest;

INSTANTIATE_TEST_SUITE_P(
    Simulator, CommunicatorConformanceTest,
    ::testing::Values(SimCommunicators("sim_nccl", SimBackend::kNccl),
                      SimCommunicators("sim_auto", SimBackend::kAuto),
                      SimCommunicators("sim_ring", SimBackend::kRing)),
    devices::conformance::CommunicatorBackendName);

}  // namespace
}  // namespace simulator
