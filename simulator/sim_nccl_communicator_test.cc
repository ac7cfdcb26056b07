#include "simulator/sim_nccl_communicator.h"

#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/communicator.h"
#include "devices/kernel_costs.h"
#include "devices/tensor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "simulator/builtin_topologies.h"
#include "simulator/faults.h"
#include "simulator/nccl_model.h"
#include "simulator/sim_platform.h"
#include "simulator/sim_test_util.h"
#include "simulator/time.h"

namespace simulator {
namespace {

using ::testing::HasSubstr;

constexpr absl::Duration kWait = absl::Seconds(30);

std::unique_ptr<SimPlatform> MakePlatform(const std::string& topology,
                                          bool functional,
                                          SimPlatformOptions options = {}) {
  absl::StatusOr<Topology> t = BuiltinTopology(topology);
  EXPECT_TRUE(t.ok()) << t.status();
  options.functional = functional;
  options.deadlock_grace = absl::Milliseconds(20);
  absl::StatusOr<std::unique_ptr<SimPlatform>> platform =
      SimPlatform::Create(*std::move(t), std::move(options));
  EXPECT_TRUE(platform.ok()) << platform.status();
  return platform.ok() ? *std::move(platform) : nullptr;
}

std::vector<std::string> Gpus(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back(absl::StrCat("GPU:", i));
  return names;
}

std::unique_ptr<devices::Communicator> Nccl(SimPlatform& platform,
                                            const std::vector<std::string>& d) {
  auto comm = platform.CreateCommunicator(d);
  EXPECT_TRUE(comm.ok()) << comm.status();
  return comm.ok() ? *std::move(comm) : nullptr;
}

// Runs fn(rank, device) on one bound thread per device, after a start
// barrier.
void RunRanks(SimPlatform& platform, const std::vector<std::string>& names,
              const std::function<void(int, SimDevice&)>& fn) {
  BindingBarrier start(static_cast<int>(names.size()));
  std::vector<std::thread> threads;
  for (size_t r = 0; r < names.size(); ++r) {
    SimDevice* device = *platform.FindSimDevice(names[r]);
    threads.emplace_back([&, device, r] {
      std::unique_ptr<devices::ThreadBinding> bound = device->BindThread();
      start.Wait();
      fn(static_cast<int>(r), *device);
    });
  }
  for (std::thread& t : threads) t.join();
}

devices::Tensor Filled(SimDevice& device, const std::vector<float>& values) {
  absl::StatusOr<devices::Tensor> t =
      device.Allocate(devices::DType::kFloat32,
                      devices::Shape({static_cast<int64_t>(values.size())}));
  EXPECT_TRUE(t.ok()) << t.status();
  if (device.functional()) {
    EXPECT_TRUE(device.CopyFromHost(values.data(), *t).ok());
  }
  return *t;
}

std::vector<float> Values(const devices::Tensor& t) {
  return t.ToVector<float>();
}

NcclPrediction Predict(SimPlatform& platform, int n, NcclOp op, int64_t bytes) {
  std::vector<int> indices;
  for (int i = 0; i < n; ++i) {
    indices.push_back(
        (*platform.FindSimDevice(absl::StrCat("GPU:", i)))->index());
  }
  absl::StatusOr<NcclPrediction> p =
      PredictNccl(platform.topology(), indices, op, bytes);
  EXPECT_TRUE(p.ok()) << p.status();
  return p.ok() ? *p : NcclPrediction();
}

SimTime PredictedTime(SimPlatform& platform, int n, NcclOp op, int64_t bytes) {
  return static_cast<SimTime>(
      std::llround(Predict(platform, n, op, bytes).time_us * 1e6));
}

TEST(SimNcclCommunicatorTest, CreateChecksTheGroup) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("dgx_h100", false);
  ASSERT_NE(platform, nullptr);
  EXPECT_EQ(platform->CreateCommunicator({}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // Unknown names are NOT_FOUND, as for FindDevice and the CUDA platform.
  EXPECT_EQ(platform->CreateCommunicator({"GPU:0", "GPU:42"}).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(platform->CreateCommunicator({"GPU:1", "GPU:1"}).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::Status cpu = platform->CreateCommunicator({"GPU:0", "CPU:0"}).status();
  EXPECT_EQ(cpu.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(cpu.message().find("GPUs only"), std::string::npos) << cpu;
  std::unique_ptr<devices::Communicator> comm = Nccl(*platform, Gpus(4));
  ASSERT_NE(comm, nullptr);
  EXPECT_EQ(comm->name(), "nccl(sim)");
  EXPECT_EQ(comm->size(), 4);
  EXPECT_EQ(comm->device(3), "/job:worker/replica:0/task:0/device:GPU:3");
  EXPECT_EQ(comm->device(4), "");

  std::unique_ptr<SimPlatform> tpu = MakePlatform("tpu_v4:2x2x1", false);
  ASSERT_NE(tpu, nullptr);
  EXPECT_EQ(tpu->CreateCommunicator({"TPU:0", "TPU:1"}).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(SimNcclCommunicatorTest, CollectivesComputeInRankOrder) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("dgx_h100", true);
  ASSERT_NE(platform, nullptr);
  const int n = 4;
  std::unique_ptr<devices::Communicator> comm = Nccl(*platform, Gpus(n));
  ASSERT_NE(comm, nullptr);
  std::vector<std::vector<float>> all_reduce(n), mean(n), gathered(n),
      scattered(n), broadcast(n), reduced(n), all_to_all(n), received(n);
  RunRanks(*platform, Gpus(n), [&](int r, SimDevice& d) {
    const float x = static_cast<float>(r + 1);
    devices::Tensor in = Filled(d, {x, 10 * x, 100 * x, 1000 * x});
    devices::Tensor out = Filled(d, {0, 0, 0, 0});
    devices::CollectiveOptions o;
    o.timeout = kWait;
    ASSERT_TRUE(comm->AllReduce(r, in, out, o).ok());
    all_reduce[r] = Values(out);
    o.op = devices::ReduceOp::kMean;
    devices::Tensor inplace = Filled(d, {x, x, x, x});
    ASSERT_TRUE(comm->AllReduce(r, inplace, inplace, o).ok());
    mean[r] = Values(inplace);
    o.op = devices::ReduceOp::kSum;
    devices::Tensor one = Filled(d, {x});
    devices::Tensor all = Filled(d, std::vector<float>(n, 0));
    ASSERT_TRUE(comm->AllGather(r, one, all, o).ok());
    gathered[r] = Values(all);
    devices::Tensor block = Filled(d, {0});
    ASSERT_TRUE(comm->ReduceScatter(r, in, block, o).ok());
    scattered[r] = Values(block);
    devices::Tensor b = Filled(d, {x, x});
    ASSERT_TRUE(comm->Broadcast(r, 2, b, o).ok());
    broadcast[r] = Values(b);
    devices::Tensor red = Filled(d, {-1, -1, -1, -1});
    ASSERT_TRUE(comm->Reduce(r, 1, in, red, o).ok());
    reduced[r] = Values(red);
    devices::Tensor a2a = Filled(d, {0, 0, 0, 0});
    ASSERT_TRUE(comm->AllToAll(r, in, a2a, o).ok());
    all_to_all[r] = Values(a2a);
    // A ring of Send/Recv: rank r sends to r+1 and receives from r-1.
    devices::Tensor msg = Filled(d, {x});
    devices::Tensor got = Filled(d, {0});
    if (r % 2 == 0) {
      ASSERT_TRUE(comm->Send(r, (r + 1) % n, msg, o).ok());
      ASSERT_TRUE(comm->Recv(r, (r + n - 1) % n, got, o).ok());
    } else {
      ASSERT_TRUE(comm->Recv(r, (r + n - 1) % n, got, o).ok());
      ASSERT_TRUE(comm->Send(r, (r + 1) % n, msg, o).ok());
    }
    received[r] = Values(got);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(all_reduce[r], (std::vector<float>{10, 100, 1000, 10000}));
    EXPECT_EQ(mean[r], (std::vector<float>{2.5, 2.5, 2.5, 2.5}));
    EXPECT_EQ(gathered[r], (std::vector<float>{1, 2, 3, 4}));
    EXPECT_EQ(
        scattered[r],
        (std::vector<float>{10 * std::pow(10.0f, static_cast<float>(r))}));
    EXPECT_EQ(broadcast[r], (std::vector<float>{3, 3}));
    if (r == 1) {
      EXPECT_EQ(reduced[r], (std::vector<float>{10, 100, 1000, 10000}));
    } else {
      EXPECT_EQ(reduced[r], (std::vector<float>{-1, -1, -1, -1}));
    }
    std::vector<float> expected;
    for (int from = 0; from < n; ++from) {
      expected.push_back(static_cast<float>(from + 1) *
                         std::pow(10.0f, static_cast<float>(r)));
    }
    EXPECT_EQ(all_to_all[r], expected);
    EXPECT_EQ(received[r],
              (std::vector<float>{static_cast<float>((r + n - 1) % n + 1)}));
  }
}

// The call takes PredictNccl's time, from the last rank's arrival, on every
// rank; the trace names the algorithm and protocol.
TEST(SimNcclCommunicatorTest, RendezvousThenPredictedTime) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("dgx_h100", false);
  ASSERT_NE(platform, nullptr);
  const int n = 8;
  const int64_t elements = int64_t{1} << 20;  // 4 MiB of float32
  std::unique_ptr<devices::Communicator> comm = Nccl(*platform, Gpus(n));
  ASSERT_NE(comm, nullptr);
  std::vector<SimTime> arrived(n), ended(n);
  SimTime late = 0;
  RunRanks(*platform, Gpus(n), [&](int r, SimDevice& d) {
    if (r == 5) {
      // Rank 5 is late: a kernel first.
      d.Enqueue(devices::FillCost(devices::DType::kFloat32, elements * 64),
                [] { return absl::OkStatus(); });
      late = platform->now();
    }
    absl::StatusOr<devices::Tensor> t =
        d.Allocate(devices::DType::kFloat32, devices::Shape({elements}));
    ASSERT_TRUE(t.ok());
    arrived[r] = platform->now();
    devices::CollectiveOptions o;
    o.timeout = kWait;
    ASSERT_TRUE(comm->AllReduce(r, *t, *t, o).ok());
    ended[r] = platform->now();
  });
  ASSERT_GT(late, 0);
  const SimTime predicted =
      PredictedTime(*platform, n, NcclOp::kAllReduce, elements * 4);
  ASSERT_GT(predicted, 0);
  for (int r = 0; r < n; ++r) EXPECT_EQ(ended[r], late + predicted) << r;
  absl::StatusOr<SimDeviceStats> stats = platform->DeviceStats("GPU:0");
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->communication_time, predicted);
  const NcclPrediction p =
      Predict(*platform, n, NcclOp::kAllReduce, elements * 4);
  const std::string span = absl::StrCat("ncclAllReduce ", p.Label(), " 4 MiB");
  EXPECT_NE(platform->TraceJson().find(span), std::string::npos) << span;
}

TEST(SimNcclCommunicatorTest, EveryOperationTakesItsPredictedTime) {
  const int n = 4;
  const int64_t elements = 4096;
  struct Case {
    NcclOp op;
    int64_t model_bytes;  // nccl-tests' size
  };
  for (Case c : {Case{NcclOp::kAllGather, elements * 4 * n},
                 Case{NcclOp::kReduceScatter, elements * 4 * n},
                 Case{NcclOp::kBroadcast, elements * 4},
                 Case{NcclOp::kReduce, elements * 4},
                 Case{NcclOp::kAllToAll, elements * 4 * n}}) {
    std::unique_ptr<SimPlatform> platform = MakePlatform("dgx_a100", false);
    ASSERT_NE(platform, nullptr);
    std::unique_ptr<devices::Communicator> comm = Nccl(*platform, Gpus(n));
    ASSERT_NE(comm, nullptr);
    RunRanks(*platform, Gpus(n), [&](int r, SimDevice& d) {
      auto make = [&](int64_t count) {
        return *d.Allocate(devices::DType::kFloat32, devices::Shape({count}));
      };
      devices::CollectiveOptions o;
      o.timeout = kWait;
      absl::Status s;
      switch (c.op) {
        case NcclOp::kAllGather: {
          devices::Tensor in = make(elements), out = make(elements * n);
          s = comm->AllGather(r, in, out, o);
          break;
        }
        case NcclOp::kReduceScatter: {
          devices::Tensor in = make(elements * n), out = make(elements);
          s = comm->ReduceScatter(r, in, out, o);
          break;
        }
        case NcclOp::kBroadcast: {
          devices::Tensor t = make(elements);
          s = comm->Broadcast(r, 0, t, o);
          break;
        }
        case NcclOp::kReduce: {
          devices::Tensor in = make(elements), out = make(elements);
          s = comm->Reduce(r, 0, in, out, o);
          break;
        }
        default: {
          devices::Tensor in = make(elements * n), out = make(elements * n);
          s = comm->AllToAll(r, in, out, o);
          break;
        }
      }
      EXPECT_TRUE(s.ok()) << s;
    });
    EXPECT_EQ(platform->now(), PredictedTime(*platform, n, c.op, c.model_bytes))
        << NcclOpName(c.op);
  }
}

TEST(SimNcclCommunicatorTest, MissingPeerIsDeadlineExceeded) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("dgx_h100", false);
  ASSERT_NE(platform, nullptr);
  std::unique_ptr<devices::Communicator> comm = Nccl(*platform, Gpus(3));
  ASSERT_NE(comm, nullptr);
  std::vector<absl::Status> status(2);
  // Ranks 0 and 1 call; rank 2 never does.
  RunRanks(*platform, {"GPU:0", "GPU:1"}, [&](int r, SimDevice& d) {
    devices::Tensor t =
        *d.Allocate(devices::DType::kFloat32, devices::Shape({16}));
    devices::CollectiveOptions o;
    o.timeout = kWait;
    status[r] = comm->AllReduce(r, t, t, o);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(status[r].code(), absl::StatusCode::kDeadlineExceeded)
        << status[r];
    EXPECT_NE(status[r].message().find("rank(s) 2"), std::string::npos)
        << status[r];
  }
  // The communicator is aborted afterwards, as after ncclCommAbort.
  SimDevice* gpu0 = *platform->FindSimDevice("GPU:0");
  devices::Tensor t =
      *gpu0->Allocate(devices::DType::kFloat32, devices::Shape({16}));
  EXPECT_EQ(comm->AllReduce(0, t, t, {}).code(),
            absl::StatusCode::kUnavailable);
}

TEST(SimNcclCommunicatorTest, BadArgumentsAreRejected) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("dgx_h100", true);
  ASSERT_NE(platform, nullptr);
  std::unique_ptr<devices::Communicator> comm = Nccl(*platform, Gpus(2));
  ASSERT_NE(comm, nullptr);
  SimDevice* gpu0 = *platform->FindSimDevice("GPU:0");
  SimDevice* gpu1 = *platform->FindSimDevice("GPU:1");
  devices::Tensor a = Filled(*gpu0, {1, 2, 3});
  devices::Tensor b = Filled(*gpu1, {1, 2, 3});
  devices::Tensor two = Filled(*gpu0, {1, 2});
  devices::CollectiveOptions o;
  o.timeout = kWait;
  EXPECT_EQ(comm->AllReduce(2, a, a, o).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->AllReduce(0, b, b, o).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->AllReduce(0, a, two, o).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->ReduceScatter(0, a, a, o).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->AllToAll(0, two, two, o).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->Broadcast(0, 5, a, o).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->Send(0, 0, a, o).code(), absl::StatusCode::kInvalidArgument);
  o.timeout = absl::ZeroDuration();
  EXPECT_EQ(comm->AllReduce(0, a, a, o).code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(SimNcclCommunicatorTest, MismatchedCallsFailEveryRank) {
  std::unique_ptr<SimPlatform> platform = MakePlatform("dgx_h100", false);
  ASSERT_NE(platform, nullptr);
  std::unique_ptr<devices::Communicator> comm = Nccl(*platform, Gpus(2));
  ASSERT_NE(comm, nullptr);
  std::vector<absl::Status> status(2);
  RunRanks(*platform, Gpus(2), [&](int r, SimDevice& d) {
    devices::Tensor t = *d.Allocate(devices::DType::kFloat32,
                                    devices::Shape({r == 0 ? 16 : 32}));
    devices::CollectiveOptions o;
    o.timeout = kWait;
    status[r] = comm->AllReduce(r, t, t, o);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(status[r].code(), absl::StatusCode::kInvalidArgument)
        << status[r];
  }
}

TEST(SimNcclCommunicatorTest, DeadDeviceFailsTheCall) {
  SimPlatformOptions options;
  options.faults.KillDevice("GPU:1", FaultTrigger::AtTime(Microseconds(1)));
  std::unique_ptr<SimPlatform> platform =
      MakePlatform("dgx_h100", false, std::move(options));
  ASSERT_NE(platform, nullptr);
  std::unique_ptr<devices::Communicator> comm = Nccl(*platform, Gpus(2));
  ASSERT_NE(comm, nullptr);
  std::vector<absl::Status> status(2);
  RunRanks(*platform, Gpus(2), [&](int r, SimDevice& d) {
    devices::Tensor t = *d.Allocate(devices::DType::kFloat32,
                                    devices::Shape({int64_t{1} << 24}));
    devices::CollectiveOptions o;
    o.timeout = kWait;
    status[r] = comm->AllReduce(r, t, t, o);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(status[r].code(), absl::StatusCode::kUnavailable) << status[r];
    EXPECT_NE(status[r].message().find("GPU:1"), std::string::npos)
        << status[r];
  }
}

// A link of the ring through the ranks (here every network uplink of the
// second host) cut while the call runs fails it on every rank, naming the
// link; the next call fails at once.
TEST(SimNcclCommunicatorTest, CutLinkFailsTheCall) {
  SimPlatformOptions options;
  for (int nic = 0; nic < 8; ++nic) {
    options.faults.CutLink(
        absl::StrCat("node1/nic", nic, "->ib_leaf_r", nic, "_g0"),
        FaultTrigger::AtTime(Microseconds(1)));
  }
  std::unique_ptr<SimPlatform> platform =
      MakePlatform("dgx_h100_cluster:2", false, std::move(options));
  ASSERT_NE(platform, nullptr);
  const std::vector<std::string> gpus = {
      "/job:worker/replica:0/task:0/device:GPU:0",
      "/job:worker/replica:0/task:1/device:GPU:0"};
  std::unique_ptr<devices::Communicator> comm = Nccl(*platform, gpus);
  ASSERT_NE(comm, nullptr);
  std::vector<absl::Status> first(2), second(2);
  RunRanks(*platform, gpus, [&](int r, SimDevice& d) {
    devices::Tensor t = *d.Allocate(devices::DType::kFloat32,
                                    devices::Shape({int64_t{1} << 24}));
    devices::CollectiveOptions o;
    o.timeout = kWait;
    first[r] = comm->AllReduce(r, t, t, o);
    second[r] = comm->AllReduce(r, t, t, o);
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(first[r].code(), absl::StatusCode::kUnavailable) << first[r];
    EXPECT_THAT(first[r].message(), HasSubstr("did not complete"));
    EXPECT_THAT(first[r].message(), HasSubstr("node1/nic0")) << first[r];
    EXPECT_EQ(second[r].code(), absl::StatusCode::kUnavailable) << second[r];
    EXPECT_THAT(second[r].message(), HasSubstr("is cut")) << second[r];
  }
}

std::string RunAndTrace() {
  std::unique_ptr<SimPlatform> platform = MakePlatform("dgx_h100", true);
  if (platform == nullptr) return "";
  const int n = 8;
  std::unique_ptr<devices::Communicator> comm = Nccl(*platform, Gpus(n));
  if (comm == nullptr) return "";
  std::vector<std::vector<float>> out(n);
  RunRanks(*platform, Gpus(n), [&](int r, SimDevice& d) {
    std::vector<float> values(1000);
    for (size_t i = 0; i < values.size(); ++i) {
      values[i] = 0.1f * static_cast<float>(r) + 0.01f * static_cast<float>(i);
    }
    devices::Tensor t = Filled(d, values);
    devices::CollectiveOptions o;
    o.timeout = kWait;
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(comm->AllReduce(r, t, t, o).ok());
    out[r] = Values(t);
  });
  std::string result = platform->TraceJson();
  for (const std::vector<float>& v : out) {
    for (float x : v) absl::StrAppend(&result, ",", x);
  }
  return result;
}

TEST(SimNcclCommunicatorTest, Deterministic) {
  const std::string first = RunAndTrace();
  ASSERT_FALSE(first.empty());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(RunAndTrace(), first);
}

}  // namespace
}  // namespace simulator
