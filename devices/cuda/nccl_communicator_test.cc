// NcclCommunicator on every local GPU (a group of one where there is one
// GPU): each collective against the host's answer, the single-thread group
// call, the multi-process entry points used within one process, and the
// timeout path. The dtype and op mapping runs everywhere; the rest is
// skipped without a GPU.
#include "devices/cuda/nccl_communicator.h"

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devices/communicator_conformance.h"
#include "devices/cuda/cuda_kernels.h"
#include "devices/cuda/cuda_platform.h"
#include "devices/cuda/cuda_status.h"
#include "devices/cuda/cuda_test_util.h"
#include "devices/cuda/kernel_math.h"
#include "devices/cuda/ops.h"
#include "devices/cuda/test_values.h"
#include "devices/kernels.h"
#include "devices/status_macros.h"
#include "gtest/gtest.h"

namespace devices {
namespace cuda {
namespace {

TEST(NcclApiTest, MapsDTypesAndReduceOps) {
  EXPECT_GE(NcclVersion(), 21000);
  std::set<int> types;
  for (DType dtype : kAllDTypes) {
    const int type = NcclDataTypeOf(static_cast<int>(dtype));
    EXPECT_GE(type, 0) << DTypeName(dtype);
    if (dtype != DType::kBool) types.insert(type);
  }
  EXPECT_EQ(types.size(), 7u);  // Distinct for every dtype but bool...
  EXPECT_EQ(NcclDataTypeOf(math::kBool), NcclDataTypeOf(math::kUInt8));
  // ...which reduces as or (max) and and (min) of bytes.
  EXPECT_EQ(NcclRedOpOf(math::kBool, math::kSum),
            NcclRedOpOf(math::kFloat32, math::kMax));
  EXPECT_EQ(NcclRedOpOf(math::kBool, math::kMax),
            NcclRedOpOf(math::kFloat32, math::kMax));
  EXPECT_EQ(NcclRedOpOf(math::kBool, math::kProd),
            NcclRedOpOf(math::kFloat32, math::kMin));
  EXPECT_EQ(NcclRedOpOf(math::kBool, math::kMean), -1);
  std::set<int> ops;
  for (int op = math::kSum; op <= math::kProd; ++op) {
    ops.insert(NcclRedOpOf(math::kFloat32, op));
  }
  EXPECT_EQ(ops.size(), 5u);  // MEAN is ncclAvg, not ncclSum.
  EXPECT_EQ(NcclDataTypeOf(99), -1);
}

class NcclTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    std::vector<CudaDevice*> devices;
    for (int i = 0; i < num_gpus(); ++i) devices.push_back(&gpu(i));
    absl::StatusOr<std::unique_ptr<NcclCommunicator>> comm =
        NcclCommunicator::CreateLocal(devices);
    ASSERT_TRUE(comm.ok()) << comm.status();
    comm_ = *std::move(comm);
  }
  void TearDown() override { comm_.reset(); }

  int n() const { return num_gpus(); }

  // Runs fn(rank) on one thread per rank and returns the statuses.
  std::vector<absl::Status> OnEveryRank(std::function<absl::Status(int)> fn) {
    std::vector<absl::Status> statuses(static_cast<size_t>(n()));
    std::vector<std::thread> threads;
    for (int r = 0; r < n(); ++r) {
      threads.emplace_back([&, r] { statuses[r] = fn(r); });
    }
    for (auto& thread : threads) thread.join();
    return statuses;
  }

  void ExpectAllOk(const std::vector<absl::Status>& statuses) {
    for (size_t r = 0; r < statuses.size(); ++r) {
      EXPECT_TRUE(statuses[r].ok()) << "rank " << r << ": " << statuses[r];
    }
  }

  // Rank r's input: small integers (floats in [-2, 2], integers in
  // [1, 3]) so that sums and products are exact in every dtype and order;
  // bool 0 or 1.
  Tensor HostInput(DType dtype, int64_t count, int rank) {
    if (dtype == DType::kBool) return TestValues(dtype, count, rank + 10);
    Tensor ints = *Tensor::Host(DType::kInt32, Shape({count}));
    EXPECT_TRUE(devices::RandomUniform(rank + 10, IsFloating(dtype) ? -2 : 1,
                                       IsFloating(dtype) ? 3 : 4, ints)
                    .ok());
    Tensor t = *Tensor::Host(dtype, Shape({count}));
    VisitDType(dtype, [&](auto zero) {
      using T = decltype(zero);
      for (int64_t i = 0; i < count; ++i) {
        const int32_t v = ints.data<int32_t>()[i];
        if constexpr (std::is_same_v<T, Float16> ||
                      std::is_same_v<T, BFloat16>) {
          t.data<T>()[i] = T::FromFloat(static_cast<float>(v));
        } else {
          t.data<T>()[i] = static_cast<T>(v);
        }
      }
    });
    return t;
  }

  std::unique_ptr<NcclCommunicator> comm_;
};

TEST_F(NcclTest, AllReduceMatchesTheHostReduction) {
  for (DType dtype :
       {DType::kFloat32, DType::kFloat16, DType::kBFloat16, DType::kFloat64,
        DType::kInt32, DType::kInt64, DType::kUInt8, DType::kBool}) {
    for (ReduceOp op : kAllReduceOps) {
      if (dtype == DType::kBool && op == ReduceOp::kMean) continue;
      const int64_t count = 1001;
      std::vector<Tensor> host;
      std::vector<Tensor> in;
      std::vector<Tensor> out;
      for (int r = 0; r < n(); ++r) {
        host.push_back(HostInput(dtype, count, r));
        in.push_back(ToGpu(gpu(r), host.back()));
        out.push_back(*gpu(r).Allocate(dtype, host.back().shape()));
      }
      Tensor want = *Tensor::Host(dtype, Shape({count}));
      ASSERT_TRUE(devices::ReduceInto(op, host, want).ok());
      CollectiveOptions options;
      options.op = op;
      ExpectAllOk(OnEveryRank(
          [&](int r) { return comm_->AllReduce(r, in[r], out[r], options); }));
      for (int r = 0; r < n(); ++r) {
        EXPECT_EQ(FirstMismatch(ToHost(gpu(r), out[r]), want,
                                op == ReduceOp::kMean ? 1e-2 : 0),
                  "")
            << DTypeName(dtype) << " " << ReduceOpName(op) << " rank " << r;
      }
    }
  }
}

TEST_F(NcclTest, AllReduceInPlaceFromOneThreadWithAGroupCall) {
  const int64_t count = 4097;
  std::vector<Tensor> host;
  std::vector<Tensor> data;
  std::vector<const Tensor*> inputs;
  std::vector<Tensor*> outputs;
  for (int r = 0; r < n(); ++r) {
    host.push_back(HostInput(DType::kFloat32, count, r));
    data.push_back(ToGpu(gpu(r), host.back()));
  }
  for (int r = 0; r < n(); ++r) {
    inputs.push_back(&data[r]);
    outputs.push_back(&data[r]);
  }
  Tensor want = *Tensor::Host(DType::kFloat32, Shape({count}));
  ASSERT_TRUE(devices::ReduceInto(ReduceOp::kSum, host, want).ok());
  ASSERT_TRUE(comm_->AllReduceAll(inputs, outputs, {}).ok());
  for (int r = 0; r < n(); ++r) {
    EXPECT_EQ(FirstDifference(ToHost(gpu(r), data[r]), want), "") << r;
  }
  EXPECT_EQ(comm_->AllReduceAll({}, {}, {}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(NcclTest, AllGatherReduceScatterBroadcastReduce) {
  const int64_t block = 333;
  std::vector<Tensor> host;
  std::vector<Tensor> in;
  for (int r = 0; r < n(); ++r) {
    host.push_back(HostInput(DType::kFloat32, block, r));
    in.push_back(ToGpu(gpu(r), host.back()));
  }
  // AllGather: the blocks in rank order.
  std::vector<Tensor> gathered;
  for (int r = 0; r < n(); ++r) {
    gathered.push_back(*gpu(r).Allocate(DType::kFloat32, Shape({n() * block})));
  }
  ExpectAllOk(OnEveryRank(
      [&](int r) { return comm_->AllGather(r, in[r], gathered[r], {}); }));
  for (int r = 0; r < n(); ++r) {
    std::vector<float> got = ToHost(gpu(r), gathered[r]).ToVector<float>();
    for (int q = 0; q < n(); ++q) {
      EXPECT_EQ(std::vector<float>(got.begin() + q * block,
                                   got.begin() + (q + 1) * block),
                host[q].ToVector<float>())
          << "rank " << r << " block " << q;
    }
  }
  // ReduceScatter of the gathered tensors: block r of n x the sum... every
  // rank holds the same gathered data, so block r is n * host[r].
  std::vector<Tensor> scattered;
  for (int r = 0; r < n(); ++r) {
    scattered.push_back(*gpu(r).Allocate(DType::kFloat32, Shape({block})));
  }
  ExpectAllOk(OnEveryRank([&](int r) {
    return comm_->ReduceScatter(r, gathered[r], scattered[r], {});
  }));
  for (int r = 0; r < n(); ++r) {
    Tensor want = *Tensor::Host(DType::kFloat32, Shape({block}));
    ASSERT_TRUE(devices::Scale(host[r], n(), want).ok());
    EXPECT_EQ(FirstDifference(ToHost(gpu(r), scattered[r]), want), "") << r;
  }
  // Broadcast from the last rank.
  const int root = n() - 1;
  ExpectAllOk(
      OnEveryRank([&](int r) { return comm_->Broadcast(r, root, in[r], {}); }));
  for (int r = 0; r < n(); ++r) {
    EXPECT_EQ(FirstDifference(ToHost(gpu(r), in[r]), host[root]), "") << r;
  }
  // Reduce to rank 0 of the broadcast values: n * host[root].
  Tensor reduced = *gpu(0).Allocate(DType::kFloat32, Shape({block}));
  ExpectAllOk(OnEveryRank(
      [&](int r) { return comm_->Reduce(r, 0, in[r], reduced, {}); }));
  Tensor want = *Tensor::Host(DType::kFloat32, Shape({block}));
  ASSERT_TRUE(devices::Scale(host[root], n(), want).ok());
  EXPECT_EQ(FirstDifference(ToHost(gpu(0), reduced), want), "");
}

TEST_F(NcclTest, AllToAllAndSendRecv) {
  const int64_t block = 100;
  std::vector<Tensor> in;
  std::vector<Tensor> out;
  for (int r = 0; r < n(); ++r) {
    // Block q of rank r holds 1000 * r + q.
    Tensor host = *Tensor::Host(DType::kInt32, Shape({n() * block}));
    for (int64_t i = 0; i < n() * block; ++i) {
      host.data<int32_t>()[i] = static_cast<int32_t>(1000 * r + i / block);
    }
    in.push_back(ToGpu(gpu(r), host));
    out.push_back(*gpu(r).Allocate(DType::kInt32, host.shape()));
  }
  ExpectAllOk(OnEveryRank(
      [&](int r) { return comm_->AllToAll(r, in[r], out[r], {}); }));
  for (int r = 0; r < n(); ++r) {
    std::vector<int32_t> got = ToHost(gpu(r), out[r]).ToVector<int32_t>();
    for (int q = 0; q < n(); ++q) {
      EXPECT_EQ(got[q * block], 1000 * q + r) << "rank " << r << " from " << q;
    }
  }
  if (n() < 2) GTEST_SKIP() << "Send/Recv needs 2 GPUs, found " << n();
  // A ring: every rank sends its input to the next and receives from the
  // previous; even ranks send first, odd ranks receive first.
  std::vector<Tensor> received;
  for (int r = 0; r < n(); ++r) {
    received.push_back(*gpu(r).Allocate(DType::kInt32, in[r].shape()));
  }
  ExpectAllOk(OnEveryRank([&](int r) {
    const int next = (r + 1) % n();
    const int prev = (r + n() - 1) % n();
    if (r % 2 == 0) {
      absl::Status s = comm_->Send(r, next, in[r], {});
      return s.ok() ? comm_->Recv(r, prev, received[r], {}) : s;
    }
    absl::Status s = comm_->Recv(r, prev, received[r], {});
    return s.ok() ? comm_->Send(r, next, in[r], {}) : s;
  }));
  for (int r = 0; r < n(); ++r) {
    const int prev = (r + n() - 1) % n();
    EXPECT_EQ(ToHost(gpu(r), received[r]).ToVector<int32_t>()[0], 1000 * prev);
  }
}

TEST_F(NcclTest, ArgumentErrors) {
  Tensor x = *gpu(0).Allocate(DType::kFloat32, Shape({8}));
  Tensor flags = *gpu(0).Allocate(DType::kBool, Shape({8}));
  Tensor host = *Tensor::Host(DType::kFloat32, Shape({8}));
  CollectiveOptions mean;
  mean.op = ReduceOp::kMean;
  EXPECT_EQ(comm_->AllReduce(-1, x, x, {}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm_->AllReduce(n(), x, x, {}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm_->AllReduce(0, host, host, {}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm_->AllReduce(0, flags, flags, mean).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm_->AllReduce(0, x, flags, {}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm_->AllGather(0, x, x, {}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm_->Broadcast(0, n(), x, {}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm_->Send(0, 0, x, {}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm_->Recv(0, -1, x, {}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(comm_->aborted());
  EXPECT_EQ(comm_->device(0), gpu(0).name());
  EXPECT_EQ(comm_->device(n()), "");
  EXPECT_EQ(NcclCommunicator::CreateLocal({}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NcclCommunicator::CreateLocal({&gpu(0), &gpu(0)}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(NcclTest, MultiProcessEntryPointsInOneProcess) {
  absl::StatusOr<std::string> id = NcclCommunicator::NewUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  EXPECT_EQ(id->size(), static_cast<size_t>(kNcclUniqueIdBytes));
  EXPECT_EQ(NcclCommunicator::CreateRank(gpu(0), "short", 0, {gpu(0).name()})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NcclCommunicator::CreateRank(gpu(0), *id, 1, {gpu(0).name()})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  // A group of one: this process is all of it.
  {
    absl::StatusOr<std::unique_ptr<NcclCommunicator>> solo =
        NcclCommunicator::CreateRank(gpu(0), *id, 0, {gpu(0).name()},
                                     absl::Seconds(60));
    ASSERT_TRUE(solo.ok()) << solo.status();
    Tensor host = HostInput(DType::kFloat32, 100, 0);
    Tensor x = ToGpu(gpu(0), host);
    ASSERT_TRUE((*solo)->AllReduce(0, x, x, {}).ok());
    EXPECT_EQ(FirstDifference(ToHost(gpu(0), x), host), "");
    EXPECT_TRUE((*solo)->IsLocal(0));
  }
  // A group of two whose second rank never comes.
  absl::StatusOr<std::string> other = NcclCommunicator::NewUniqueId();
  ASSERT_TRUE(other.ok()) << other.status();
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> lonely =
      NcclCommunicator::CreateRank(gpu(0), *other, 0,
                                   {gpu(0).name(), "elsewhere"},
                                   absl::Milliseconds(500));
  EXPECT_EQ(lonely.status().code(), absl::StatusCode::kDeadlineExceeded)
      << lonely.status();
}

// CreateRanks: this process's GPUs as consecutive ranks of a group that
// would span processes (here it holds all of them), one thread per rank.
TEST_F(NcclTest, CreateRanksDrivesSeveralLocalRanks) {
  absl::StatusOr<std::string> id = NcclCommunicator::NewUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  std::vector<CudaDevice*> gpus;
  std::vector<std::string> names;
  for (int r = 0; r < n(); ++r) {
    gpus.push_back(&gpu(r));
    names.push_back(gpu(r).name());
  }
  // Arguments first: ranks that run past the group, a GPU named twice.
  EXPECT_EQ(NcclCommunicator::CreateRanks(gpus, *id, 1, names).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NcclCommunicator::CreateRanks({&gpu(0), &gpu(0)}, *id, 0,
                                          {names[0], names[0]})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(NcclCommunicator::CreateRanks({}, *id, 0, names).status().code(),
            absl::StatusCode::kInvalidArgument);
  {
    absl::StatusOr<std::unique_ptr<NcclCommunicator>> comm =
        NcclCommunicator::CreateRanks(gpus, *id, 0, names, absl::Seconds(60));
    ASSERT_TRUE(comm.ok()) << comm.status();
    std::vector<Tensor> host, x;
    for (int r = 0; r < n(); ++r) {
      host.push_back(HostInput(DType::kFloat32, 1000, r));
      x.push_back(ToGpu(gpu(r), host.back()));
      EXPECT_TRUE((*comm)->IsLocal(r));
    }
    Tensor want = *Tensor::Host(DType::kFloat32, Shape({1000}));
    ASSERT_TRUE(devices::ReduceInto(ReduceOp::kSum, host, want).ok());
    ExpectAllOk(OnEveryRank(
        [&](int r) { return (*comm)->AllReduce(r, x[r], x[r], {}); }));
    for (int r = 0; r < n(); ++r) {
      EXPECT_EQ(FirstMismatch(ToHost(gpu(r), x[r]), want, 0), "")
          << "rank " << r;
    }
  }
  // The same GPUs as the first ranks of a larger group whose last rank
  // never joins: DEADLINE_EXCEEDED, nothing left half-made.
  absl::StatusOr<std::string> other = NcclCommunicator::NewUniqueId();
  ASSERT_TRUE(other.ok()) << other.status();
  names.push_back("elsewhere");
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> lonely =
      NcclCommunicator::CreateRanks(gpus, *other, 0, names,
                                    absl::Milliseconds(500));
  EXPECT_EQ(lonely.status().code(), absl::StatusCode::kDeadlineExceeded)
      << lonely.status();
}

// Last in the file: after an abort NCCL may leave the GPUs in a state that
// only a new process fully recovers from.
TEST_F(NcclTest, TimeoutAbortsTheCommunicator) {
  std::vector<Tensor> data;
  for (int r = 0; r < n(); ++r) {
    data.push_back(*gpu(r).Allocate(DType::kFloat32, Shape({1024})));
  }
  // A first all-reduce sets up NCCL's connections.
  ExpectAllOk(OnEveryRank(
      [&](int r) { return comm_->AllReduce(r, data[r], data[r], {}); }));
  // GPU 0 is then busy for 3 s, so rank 0's all-reduce cannot even start
  // within its 100 ms: it gives up first and aborts the communicator; the
  // other ranks, waiting for rank 0, see that and fail too.
  ASSERT_TRUE(gpu(0)
                  .EnqueueCuda(KernelCost{"Sleep", 0, 0},
                               [this] {
                                 return CudaStatus(
                                     LaunchSleep(3000000000, gpu(0).stream()),
                                     "LaunchSleep");
                               })
                  ->WaitLaunched(absl::Now() + absl::Seconds(10)));
  std::vector<absl::Status> statuses = OnEveryRank([&](int r) {
    CollectiveOptions options;
    options.timeout = r == 0 ? absl::Milliseconds(100) : absl::Seconds(30);
    return comm_->AllReduce(r, data[r], data[r], options);
  });
  EXPECT_EQ(statuses[0].code(), absl::StatusCode::kDeadlineExceeded)
      << statuses[0];
  EXPECT_NE(statuses[0].message().find("AllReduce on rank 0 of"),
            std::string::npos)
      << statuses[0];
  for (int r = 1; r < n(); ++r) {
    EXPECT_EQ(statuses[r].code(), absl::StatusCode::kUnavailable)
        << statuses[r];
  }
  EXPECT_TRUE(comm_->aborted());
  EXPECT_EQ(comm_->AllReduce(0, data[0], data[0], {}).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_TRUE(gpu(0).Synchronize(absl::Seconds(60)).ok());
}

// The Communicator contract on real NCCL, one rank per GPU, the ranks'
// tensors in their GPUs' memory; skipped without a GPU, and from the group
// size up that is larger than the machine's GPU count.
using conformance::CommunicatorConformanceTest;

conformance::CommunicatorBackend NcclBackend() {
  return {
      "nccl", [](int n) -> absl::StatusOr<conformance::CommunicatorGroup> {
        if (std::optional<std::string> why = NoGpuReason()) {
          return absl::FailedPreconditionError(
              absl::StrCat("no CUDA GPU found: ", *why));
        }
        ASSIGN_OR_RETURN(std::unique_ptr<CudaPlatform> made,
                         CudaPlatform::Create());
        std::shared_ptr<CudaPlatform> platform = std::move(made);
        if (platform->num_gpus() < n) {
          return absl::FailedPreconditionError(
              absl::StrCat("a group of ", n, " NCCL ranks needs ", n,
                           " GPUs; this machine has ", platform->num_gpus()));
        }
        std::vector<CudaDevice*> devices;
        for (int r = 0; r < n; ++r) devices.push_back(platform->gpu(r));
        ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicator> comm,
                         NcclCommunicator::CreateLocal(devices));
        conformance::CommunicatorGroup group;
        group.communicator = std::move(comm);
        group.to_rank = [devices](int r, const Tensor& host) {
          CudaDevice& gpu = *devices[static_cast<size_t>(r)];
          absl::StatusOr<Tensor> t = gpu.Allocate(host.dtype(), host.shape());
          EXPECT_TRUE(t.ok()) << t.status();
          if (!t.ok()) return Tensor();
          if (host.bytes() > 0) {
            EXPECT_TRUE(gpu.CopyFromHost(host.raw_data(), *t).ok());
          }
          return *std::move(t);
        };
        group.to_host = [devices](int r, const Tensor& on_gpu) {
          CudaDevice& gpu = *devices[static_cast<size_t>(r)];
          absl::StatusOr<Tensor> host =
              Tensor::Host(on_gpu.dtype(), on_gpu.shape());
          EXPECT_TRUE(host.ok()) << host.status();
          if (!host.ok()) return Tensor();
          if (on_gpu.bytes() > 0) {
            EXPECT_TRUE(gpu.CopyToHost(on_gpu, host->raw_data()).ok());
          }
          return *std::move(host);
        };
        group.run_ranks = [devices](const std::function<void(int)>& body) {
          std::vector<std::thread> threads;
          for (size_t r = 0; r < devices.size(); ++r) {
            threads.emplace_back([&, r] {
              std::unique_ptr<ThreadBinding> bound = devices[r]->BindThread();
              body(static_cast<int>(r));
            });
          }
          for (std::thread& t : threads) t.join();
        };
        group.owner = std::move(platform);
        return group;
      }};
}

INSTANTIATE_TEST_SUITE_P(Cuda, CommunicatorConformanceTest,
                         ::testing::Values(NcclBackend()),
                         conformance::CommunicatorBackendName);

}  // namespace
}  // namespace cuda
}  // namespace devices
