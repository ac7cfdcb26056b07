// Collectives run by ScheduleCommunicator over the host platform's
// shared-memory transport, one thread per rank, checked against a reference
// reduction: every algorithm and op, group sizes 1..9 and 16, sizes 0, 1,
// primes and unaligned, every dtype and reduction, timeouts and peers that
// never arrive.
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "devices/communicator_conformance.h"
#include "devices/dtype.h"
#include "devices/half.h"
#include "devices/host_transport.h"
#include "devices/reduce_kernels.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/collective/cost_model.h"
#include "distribute/collective/schedule_communicator.h"
#include "gtest/gtest.h"

namespace distribute {
namespace collective {
namespace {

using devices::DType;
using devices::ReduceOp;
using devices::Tensor;

std::unique_ptr<ScheduleCommunicator> MakeGroup(
    int n, ScheduleCommunicatorOptions options = {}) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back(absl::StrCat("/device:CPU:", i));
  auto endpoints = devices::CreateHostTransportGroup(names);
  EXPECT_TRUE(endpoints.ok()) << endpoints.status();
  auto comm = ScheduleCommunicator::Create(*std::move(endpoints), options);
  EXPECT_TRUE(comm.ok()) << comm.status();
  return *std::move(comm);
}

// Runs fn(rank) on n threads and returns each rank's status.
std::vector<absl::Status> RunRanks(int n, std::function<absl::Status(int)> fn) {
  std::vector<absl::Status> status(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] { status[r] = fn(r); });
  }
  for (auto& t : threads) t.join();
  return status;
}

// Small integer values whose sums and products are exact in every dtype
// (float16 holds integers up to 2048, bfloat16 up to 256).
double Value(int rank, int64_t i, ReduceOp op) {
  if (op == ReduceOp::kProd) return (rank + i) % 5 == 0 ? 2.0 : 1.0;
  return static_cast<double>((rank * 7 + i * 3) % 11);
}

template <typename T>
T FromDouble(double v) {
  if constexpr (std::is_same_v<T, devices::Float16> ||
                std::is_same_v<T, devices::BFloat16>) {
    return T::FromFloat(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

Tensor MakeInput(DType dtype, int64_t count, int rank, ReduceOp op) {
  Tensor t = *Tensor::Host(dtype, devices::Shape({count}));
  devices::VisitDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = t.data<T>();
    for (int64_t i = 0; i < count; ++i) {
      p[i] = FromDouble<T>(Value(rank, i, op));
    }
  });
  return t;
}

std::string Bytes(const Tensor& t) {
  return std::string(static_cast<const char*>(t.raw_data()), t.bytes());
}

struct AllReduceCase {
  Algorithm algorithm;
  int n;
  int64_t count;
};

class AllReduceTest : public ::testing::TestWithParam<AllReduceCase> {};

TEST_P(AllReduceTest, MatchesReferenceOnEveryRank) {
  const AllReduceCase c = GetParam();
  ScheduleCommunicatorOptions options;
  options.all_reduce_algorithm = c.algorithm;
  if (c.algorithm == Algorithm::kHierarchical) {
    options.costs.ranks_per_node = c.n % 2 == 0 ? 2 : 1;
  }
  options.chunk_bytes = 64;  // Several pipeline chunks even for small sizes.
  auto comm = MakeGroup(c.n, options);
  std::vector<Tensor> in, out;
  for (int r = 0; r < c.n; ++r) {
    in.push_back(MakeInput(DType::kFloat32, c.count, r, ReduceOp::kSum));
    out.push_back(*Tensor::Host(DType::kFloat32, devices::Shape({c.count})));
  }
  Tensor expected = *Tensor::Host(DType::kFloat32, devices::Shape({c.count}));
  ASSERT_TRUE(devices::ReduceInto(ReduceOp::kSum, in, expected).ok());
  auto status = RunRanks(c.n, [&](int r) {
    return comm->AllReduce(r, in[r], out[r],
                           {ReduceOp::kSum, absl::Seconds(20)});
  });
  for (int r = 0; r < c.n; ++r) {
    ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
    EXPECT_EQ(Bytes(out[r]), Bytes(expected)) << "rank " << r;
  }
  ASSERT_TRUE(comm->LastAllReduceSelection(0).has_value());
  EXPECT_EQ(comm->LastAllReduceSelection(0)->algorithm, c.algorithm);
  // The forced chunking is what the selection reports.
  EXPECT_EQ(comm->LastAllReduceSelection(0)->chunk_bytes, 64);
}

std::vector<AllReduceCase> AllReduceCases() {
  std::vector<AllReduceCase> cases;
  for (Algorithm a : {Algorithm::kRing, Algorithm::kDoubleBinaryTree,
                      Algorithm::kRecursiveHalvingDoubling, Algorithm::kDirect,
                      Algorithm::kHierarchical}) {
    for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16}) {
      for (int64_t count : {0, 1, 13, 1000, 4099}) {
        cases.push_back({a, n, count});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(
    Host, AllReduceTest, ::testing::ValuesIn(AllReduceCases()),
    [](const ::testing::TestParamInfo<AllReduceCase>& info) {
      return absl::StrCat("alg", static_cast<int>(info.param.algorithm), "_n",
                          info.param.n, "_count", info.param.count);
    });

struct DTypeCase {
  DType dtype;
  ReduceOp op;
};

class DTypeTest : public ::testing::TestWithParam<DTypeCase> {};

TEST_P(DTypeTest, EveryDTypeAndReduction) {
  const DTypeCase c = GetParam();
  const int n = 5;
  const int64_t count = 37;
  auto comm = MakeGroup(n);
  std::vector<Tensor> in, out;
  for (int r = 0; r < n; ++r) {
    in.push_back(MakeInput(c.dtype, count, r, c.op));
    out.push_back(*Tensor::Host(c.dtype, devices::Shape({count})));
  }
  Tensor expected = *Tensor::Host(c.dtype, devices::Shape({count}));
  ASSERT_TRUE(devices::ReduceInto(c.op, in, expected).ok());
  auto status = RunRanks(n, [&](int r) {
    return comm->AllReduce(r, in[r], out[r], {c.op, absl::Seconds(20)});
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(status[r].ok()) << status[r];
    EXPECT_EQ(Bytes(out[r]), Bytes(expected)) << "rank " << r;
  }
}

std::vector<DTypeCase> DTypeCases() {
  std::vector<DTypeCase> cases;
  for (DType d :
       {DType::kFloat32, DType::kFloat64, DType::kFloat16, DType::kBFloat16,
        DType::kInt32, DType::kInt64, DType::kUInt8, DType::kBool}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin,
                        ReduceOp::kMax, ReduceOp::kProd}) {
      if (d == DType::kBool && op == ReduceOp::kMean) continue;
      cases.push_back({d, op});
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(Host, DTypeTest, ::testing::ValuesIn(DTypeCases()),
                         [](const ::testing::TestParamInfo<DTypeCase>& info) {
                           return absl::StrCat(
                               devices::DTypeName(info.param.dtype), "_op",
                               static_cast<int>(info.param.op));
                         });

class OtherOpsTest : public ::testing::TestWithParam<std::tuple<int, int64_t>> {
};

TEST_P(OtherOpsTest, GatherScatterBroadcastReduceAllToAll) {
  const int n = std::get<0>(GetParam());
  const int64_t count = std::get<1>(GetParam());
  auto comm = MakeGroup(n);
  const absl::Duration timeout = absl::Seconds(20);
  std::vector<Tensor> full;
  for (int r = 0; r < n; ++r) {
    full.push_back(MakeInput(DType::kInt32, count, r, ReduceOp::kSum));
  }
  Tensor sum = *Tensor::Host(DType::kInt32, devices::Shape({count}));
  ASSERT_TRUE(devices::ReduceInto(ReduceOp::kSum, full, sum).ok());

  // Reduce-scatter: rank r gets its shard of the sum.
  std::vector<Tensor> shards(n);
  for (int r = 0; r < n; ++r) {
    shards[r] = *Tensor::Host(DType::kInt32,
                              devices::Shape({ShardOf(count, n, r).count}));
  }
  for (const auto& s : RunRanks(n, [&](int r) {
         return comm->ReduceScatter(r, full[r], shards[r],
                                    {ReduceOp::kSum, timeout});
       })) {
    ASSERT_TRUE(s.ok()) << s;
  }
  // All-gather of the shards gives the sum back on every rank.
  std::vector<Tensor> gathered(n);
  for (int r = 0; r < n; ++r) {
    gathered[r] = *Tensor::Host(DType::kInt32, devices::Shape({count}));
  }
  for (const auto& s : RunRanks(n, [&](int r) {
         return comm->AllGather(r, shards[r], gathered[r],
                                {ReduceOp::kSum, timeout});
       })) {
    ASSERT_TRUE(s.ok()) << s;
  }
  for (int r = 0; r < n; ++r) EXPECT_EQ(Bytes(gathered[r]), Bytes(sum));

  // Broadcast from the last rank.
  const int root = n - 1;
  std::vector<Tensor> bcast;
  for (int r = 0; r < n; ++r) {
    bcast.push_back(MakeInput(DType::kInt32, count, r, ReduceOp::kSum));
  }
  const std::string root_bytes = Bytes(bcast[root]);
  for (const auto& s : RunRanks(n, [&](int r) {
         return comm->Broadcast(r, root, bcast[r], {ReduceOp::kSum, timeout});
       })) {
    ASSERT_TRUE(s.ok()) << s;
  }
  for (int r = 0; r < n; ++r) EXPECT_EQ(Bytes(bcast[r]), root_bytes);

  // Reduce to rank 0.
  Tensor reduced = *Tensor::Host(DType::kInt32, devices::Shape({count}));
  for (const auto& s : RunRanks(n, [&](int r) {
         Tensor unused = *Tensor::Host(DType::kInt32, devices::Shape({count}));
         return comm->Reduce(r, 0, full[r], r == 0 ? reduced : unused,
                             {ReduceOp::kSum, timeout});
       })) {
    ASSERT_TRUE(s.ok()) << s;
  }
  EXPECT_EQ(Bytes(reduced), Bytes(sum));

  // All-to-all: block j of rank i lands in block i of rank j.
  std::vector<Tensor> a2a_in, a2a_out;
  for (int r = 0; r < n; ++r) {
    a2a_in.push_back(*Tensor::Host(DType::kInt64, devices::Shape({n * count})));
    a2a_out.push_back(
        *Tensor::Host(DType::kInt64, devices::Shape({n * count})));
    for (int64_t i = 0; i < n * count; ++i) {
      a2a_in[r].data<int64_t>()[i] = r * 1000000 + i;
    }
  }
  for (const auto& s : RunRanks(n, [&](int r) {
         return comm->AllToAll(r, a2a_in[r], a2a_out[r],
                               {ReduceOp::kSum, timeout});
       })) {
    ASSERT_TRUE(s.ok()) << s;
  }
  for (int j = 0; j < n; ++j) {
    for (int i = 0; i < n; ++i) {
      for (int64_t k = 0; k < count; ++k) {
        ASSERT_EQ(a2a_out[j].data<int64_t>()[i * count + k],
                  i * 1000000 + j * count + k);
      }
    }
  }
  for (const auto& s :
       RunRanks(n, [&](int r) { return comm->Barrier(r, timeout); })) {
    ASSERT_TRUE(s.ok()) << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Host, OtherOpsTest,
                         ::testing::Combine(::testing::Values(1, 2, 3, 5, 8, 9,
                                                              16),
                                            ::testing::Values(0, 1, 7, 100)));

TEST(HostCollectivesTest, PeerThatNeverArrivesTimesOut) {
  auto comm = MakeGroup(3);
  Tensor in = MakeInput(DType::kFloat32, 64, 0, ReduceOp::kSum);
  Tensor out = *Tensor::Host(DType::kFloat32, devices::Shape({64}));
  // Only rank 0 calls: ranks 1 and 2 never arrive.
  absl::Status s =
      comm->AllReduce(0, in, out, {ReduceOp::kSum, absl::Milliseconds(100)});
  EXPECT_EQ(s.code(), absl::StatusCode::kDeadlineExceeded) << s;
}

TEST(HostCollectivesTest, MismatchedShapesAreRejected) {
  auto comm = MakeGroup(2);
  Tensor in = MakeInput(DType::kFloat32, 8, 0, ReduceOp::kSum);
  Tensor out = *Tensor::Host(DType::kFloat32, devices::Shape({9}));
  EXPECT_EQ(comm->AllReduce(0, in, out, {}).code(),
            absl::StatusCode::kInvalidArgument);
  Tensor wrong = *Tensor::Host(DType::kInt32, devices::Shape({8}));
  EXPECT_EQ(comm->AllReduce(0, in, wrong, {}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->AllReduce(5, in, out, {}).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(comm->Broadcast(0, 7, in, {}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HostCollectivesTest, InPlaceAllReduce) {
  const int n = 4;
  auto comm = MakeGroup(n);
  std::vector<Tensor> data;
  for (int r = 0; r < n; ++r)
    data.push_back(MakeInput(DType::kFloat32, 1000, r, ReduceOp::kSum));
  Tensor expected = *Tensor::Host(DType::kFloat32, devices::Shape({1000}));
  ASSERT_TRUE(devices::ReduceInto(ReduceOp::kSum, data, expected).ok());
  auto status = RunRanks(n, [&](int r) {
    return comm->AllReduce(r, data[r], data[r],
                           {ReduceOp::kSum, absl::Seconds(20)});
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(status[r].ok()) << status[r];
    EXPECT_EQ(Bytes(data[r]), Bytes(expected)) << "rank " << r;
  }
}

TEST(HostCollectivesTest, PointToPoint) {
  auto comm = MakeGroup(2);
  Tensor a = MakeInput(DType::kInt32, 10, 3, ReduceOp::kSum);
  Tensor b = *Tensor::Host(DType::kInt32, devices::Shape({10}));
  auto status = RunRanks(2, [&](int r) {
    return r == 0 ? comm->Send(0, 1, a, {}) : comm->Recv(1, 0, b, {});
  });
  ASSERT_TRUE(status[0].ok() && status[1].ok());
  EXPECT_EQ(Bytes(a), Bytes(b));
}

// Every rank's thread alternates shapes (and so AUTO's algorithms: direct,
// whose scratch the executor keeps per thread, and the ring) without leaving
// the thread: cached plans and reused scratch must give exact results and the
// selection of the latest shape.
TEST(HostCollectivesTest, AlternatingShapesOnLongLivedThreads) {
  const int n = 4;
  ScheduleCommunicatorOptions options;
  options.costs = SharedMemoryCosts(n, /*cpus=*/n);
  options.shared_memory_all_reduce = false;  // The schedules' path.
  auto comm = MakeGroup(n, options);
  const std::vector<int64_t> counts = {16, 1 << 16, 16, 1 << 16, 1000};
  std::vector<std::vector<Tensor>> in(counts.size()), out(counts.size());
  std::vector<Tensor> expected;
  for (size_t k = 0; k < counts.size(); ++k) {
    for (int r = 0; r < n; ++r) {
      in[k].push_back(MakeInput(DType::kFloat32, counts[k], r, ReduceOp::kSum));
      out[k].push_back(
          *Tensor::Host(DType::kFloat32, devices::Shape({counts[k]})));
    }
    expected.push_back(
        *Tensor::Host(DType::kFloat32, devices::Shape({counts[k]})));
    ASSERT_TRUE(devices::ReduceInto(ReduceOp::kSum, in[k], expected[k]).ok());
  }
  auto status = RunRanks(n, [&](int r) {
    for (size_t k = 0; k < counts.size(); ++k) {
      RETURN_IF_ERROR(comm->AllReduce(r, in[k][r], out[k][r],
                                      {ReduceOp::kSum, absl::Seconds(20)}));
    }
    return absl::OkStatus();
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
    for (size_t k = 0; k < counts.size(); ++k) {
      EXPECT_EQ(Bytes(out[k][r]), Bytes(expected[k]))
          << "rank " << r << " shape " << k;
    }
  }
  const GroupCosts costs = SharedMemoryCosts(n, /*cpus=*/n);
  absl::StatusOr<AllReduceSelection> want =
      SelectAllReduce(1000 * sizeof(float), costs);
  ASSERT_TRUE(want.ok()) << want.status();
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(comm->LastAllReduceSelection(r).has_value());
    EXPECT_EQ(comm->LastAllReduceSelection(r)->algorithm, want->algorithm);
    EXPECT_EQ(comm->LastAllReduceSelection(r)->chunk_bytes, want->chunk_bytes);
  }
}

// In-place calls of growing and shrinking sizes on long-lived threads
// (the rank's copy of the input is kept from one call to the next).
TEST(HostCollectivesTest, RepeatedInPlaceAllReduces) {
  const int n = 3;
  auto comm = MakeGroup(n);
  const std::vector<int64_t> counts = {10, 5000, 10, 7000};
  std::vector<std::vector<Tensor>> data(counts.size());
  std::vector<Tensor> expected;
  for (size_t k = 0; k < counts.size(); ++k) {
    for (int r = 0; r < n; ++r) {
      data[k].push_back(MakeInput(DType::kInt32, counts[k], r, ReduceOp::kSum));
    }
    expected.push_back(
        *Tensor::Host(DType::kInt32, devices::Shape({counts[k]})));
    ASSERT_TRUE(devices::ReduceInto(ReduceOp::kSum, data[k], expected[k]).ok());
  }
  auto status = RunRanks(n, [&](int r) {
    for (size_t k = 0; k < counts.size(); ++k) {
      RETURN_IF_ERROR(comm->AllReduce(r, data[k][r], data[k][r],
                                      {ReduceOp::kSum, absl::Seconds(20)}));
    }
    return absl::OkStatus();
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
    for (size_t k = 0; k < counts.size(); ++k) {
      EXPECT_EQ(Bytes(data[k][r]), Bytes(expected[k]))
          << "rank " << r << " call " << k;
    }
  }
}

TEST(HostCollectivesTest, SharedMemoryCostsPickRingOnlyForLargeMessages) {
  for (int32_t n : {2, 4, 8}) {
    for (int32_t cpus : {n, 2}) {
      const GroupCosts costs = SharedMemoryCosts(n, cpus);
      EXPECT_EQ(costs.n, n);
      ASSERT_TRUE(ValidateGroupCosts(costs).ok());
      absl::StatusOr<AllReduceSelection> small =
          SelectAllReduce(4 << 10, costs);
      ASSERT_TRUE(small.ok()) << small.status();
      EXPECT_NE(small->algorithm, Algorithm::kRing) << small->DebugString();
      absl::StatusOr<AllReduceSelection> large =
          SelectAllReduce(int64_t{64} << 20, costs);
      ASSERT_TRUE(large.ok()) << large.status();
      EXPECT_EQ(large->algorithm, Algorithm::kRing) << large->DebugString();
      EXPECT_GT(large->chunk_bytes, 0) << large->DebugString();
    }
  }
}

// Ranks that share cores pay for every message: fewer, larger pieces.
TEST(HostCollectivesTest, SharedMemoryCostsUseLargerPiecesWhenOversubscribed) {
  for (int32_t n : {4, 8}) {
    absl::StatusOr<AllReduceSelection> own =
        SelectAllReduce(int64_t{64} << 20, SharedMemoryCosts(n, n));
    absl::StatusOr<AllReduceSelection> shared =
        SelectAllReduce(int64_t{64} << 20, SharedMemoryCosts(n, 2));
    ASSERT_TRUE(own.ok() && shared.ok());
    EXPECT_GT(shared->chunk_bytes, own->chunk_bytes) << shared->DebugString();
  }
  EXPECT_EQ(SharedMemoryCosts(3, 0).step_overhead_us,
            SharedMemoryCosts(3, 1).step_overhead_us);
}

// The Communicator contract over host transports, for AUTO (with the
// shared-memory all-reduce) and for every all-reduce algorithm forced.
devices::conformance::CommunicatorBackend HostBackend(
    std::string name, std::optional<Algorithm> all_reduce,
    Algorithm rooted = Algorithm::kBinaryTree) {
  return {std::move(name),
          [all_reduce, rooted](int n)
              -> absl::StatusOr<devices::conformance::CommunicatorGroup> {
            std::vector<std::string> names;
            for (int i = 0; i < n; ++i) {
              names.push_back(absl::StrCat("/device:CPU:", i));
            }
            ASSIGN_OR_RETURN(auto endpoints,
                             devices::CreateHostTransportGroup(names));
            ScheduleCommunicatorOptions options;
            options.all_reduce_algorithm = all_reduce;
            options.broadcast_algorithm = rooted;
            options.reduce_algorithm = rooted;
            ASSIGN_OR_RETURN(auto comm, ScheduleCommunicator::Create(
                                            std::move(endpoints), options));
            devices::conformance::CommunicatorGroup group;
            group.communicator = std::move(comm);
            return group;
          }};
}

using devices::conformance::CommunicatorConformanceTest;

INSTANTIATE_TEST_SUITE_P(
    Host, CommunicatorConformanceTest,
    ::testing::Values(
        HostBackend("host_auto", std::nullopt),
        HostBackend("host_ring", Algorithm::kRing, Algorithm::kChain),
        HostBackend("host_tree", Algorithm::kDoubleBinaryTree),
        HostBackend("host_rhd", Algorithm::kRecursiveHalvingDoubling),
        HostBackend("host_direct", Algorithm::kDirect)),
    devices::conformance::CommunicatorBackendName);

}  // namespace
}  // namespace collective
}  // namespace distribute
