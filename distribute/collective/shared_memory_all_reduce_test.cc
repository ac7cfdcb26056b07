// Tests of SharedMemoryAllReduce (one-shot and two-shot) over the host
// transport's direct-access group, and of ScheduleCommunicator's use of it:
// exact results for every ReduceOp and dtype, bit-identity with the
// "direct" schedule run over messages, deadlines, aborts and disagreement.
#include "distribute/collective/shared_memory_all_reduce.h"

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "devices/direct_access.h"
#include "devices/dtype.h"
#include "devices/half.h"
#include "devices/host_transport.h"
#include "devices/reduce_kernels.h"
#include "devices/status_macros.h"
#include "devices/tensor.h"
#include "distribute/collective/schedule_communicator.h"
#include "gtest/gtest.h"

namespace distribute {
namespace collective {
namespace {

using devices::DType;
using devices::ReduceOp;
using devices::Tensor;

std::vector<std::unique_ptr<devices::Transport>> Group(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) names.push_back(absl::StrCat("/device:CPU:", i));
  auto endpoints = devices::CreateHostTransportGroup(names);
  EXPECT_TRUE(endpoints.ok()) << endpoints.status();
  return *std::move(endpoints);
}

std::vector<absl::Status> RunRanks(int n, std::function<absl::Status(int)> fn) {
  std::vector<absl::Status> status(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] { status[r] = fn(r); });
  }
  for (auto& t : threads) t.join();
  return status;
}

// Random values (seeded by rank) whose sums depend on the order of the
// additions in floating point; small positive integers elsewhere, so that
// products stay in range.
Tensor RandomInput(DType dtype, int64_t count, int rank) {
  Tensor t = *Tensor::Host(dtype, devices::Shape({count}));
  std::mt19937 gen(1234 + rank);
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  std::uniform_int_distribution<int> small(0, 3);
  devices::VisitDType(dtype, [&](auto zero) {
    using T = decltype(zero);
    T* p = t.data<T>();
    for (int64_t i = 0; i < count; ++i) {
      if constexpr (std::is_same_v<T, devices::Float16> ||
                    std::is_same_v<T, devices::BFloat16>) {
        p[i] = T::FromFloat(static_cast<float>(real(gen)));
      } else if constexpr (std::is_floating_point_v<T>) {
        p[i] = static_cast<T>(real(gen));
      } else {
        p[i] = static_cast<T>(small(gen));
      }
    }
  });
  return t;
}

Tensor CloneOf(const Tensor& t) {
  Tensor copy = *Tensor::Host(t.dtype(), t.shape());
  if (t.bytes() > 0) std::memcpy(copy.raw_data(), t.raw_data(), t.bytes());
  return copy;
}

std::string Bytes(const Tensor& t) {
  return std::string(static_cast<const char*>(t.raw_data()), t.bytes());
}

struct Case {
  int n;
  int64_t count;
  DType dtype;
  ReduceOp op;
  bool one_shot;
};

std::string CaseName(const ::testing::TestParamInfo<Case>& info) {
  const Case& c = info.param;
  return absl::StrCat(
      "n", c.n, "_count", c.count, "_", devices::DTypeName(c.dtype), "_",
      devices::ReduceOpName(c.op), c.one_shot ? "_oneshot" : "_twoshot");
}

class SharedMemoryAllReduceTest : public ::testing::TestWithParam<Case> {};

// Every rank's output equals ReduceInto (rank order, the direct schedule's
// order) bit for bit, in place or not.
TEST_P(SharedMemoryAllReduceTest, MatchesRankOrderReduction) {
  const Case c = GetParam();
  auto endpoints = Group(c.n);
  SharedMemoryAllReduceOptions options;
  options.one_shot_max_bytes = c.one_shot ? (int64_t{1} << 40) : 0;
  options.block_bytes = 256;  // Many blocks even for small counts.
  SharedMemoryAllReduce all_reduce(*endpoints[0]->direct_access(), options);
  std::vector<Tensor> in, out;
  for (int r = 0; r < c.n; ++r) {
    in.push_back(RandomInput(c.dtype, c.count, r));
    out.push_back(*Tensor::Host(c.dtype, devices::Shape({c.count})));
  }
  Tensor expected = *Tensor::Host(c.dtype, devices::Shape({c.count}));
  ASSERT_TRUE(devices::ReduceInto(c.op, in, expected).ok());
  // Odd ranks reduce in place, even ranks into a separate output; two
  // rounds check that the alternating staging buffers are reused right.
  for (int round = 0; round < 2; ++round) {
    std::vector<Tensor> inplace;
    for (int r = 0; r < c.n; ++r) inplace.push_back(CloneOf(in[r]));
    auto status = RunRanks(c.n, [&](int r) {
      const bool in_place = r % 2 == 1;
      void* dst = in_place ? inplace[r].raw_data() : out[r].raw_data();
      return all_reduce.Run(r, inplace[r].raw_data(), dst, c.count, c.dtype,
                            c.op, absl::Seconds(20));
    });
    for (int r = 0; r < c.n; ++r) {
      ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r];
      const Tensor& got = r % 2 == 1 ? inplace[r] : out[r];
      EXPECT_EQ(Bytes(got), Bytes(expected)) << "rank " << r;
    }
  }
}

std::vector<Case> Cases() {
  std::vector<Case> cases;
  for (bool one_shot : {true, false}) {
    for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16}) {
      for (int64_t count : {0, 1, 13, 4099}) {
        cases.push_back({n, count, DType::kFloat32, ReduceOp::kSum, one_shot});
      }
    }
    for (DType dtype : devices::kAllDTypes) {
      for (ReduceOp op : devices::kAllReduceOps) {
        if (dtype == DType::kBool && op == ReduceOp::kMean) continue;
        cases.push_back({3, 1031, dtype, op, one_shot});
      }
    }
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(All, SharedMemoryAllReduceTest,
                         ::testing::ValuesIn(Cases()), CaseName);

// Buffers that do not start on an element or cache-line boundary.
TEST(SharedMemoryAllReduceTest, UnalignedBuffers) {
  const int n = 3;
  const int64_t count = 10007;  // Prime; two-shot by default (40 KB).
  auto endpoints = Group(n);
  SharedMemoryAllReduce all_reduce(*endpoints[0]->direct_access(), {});
  std::vector<std::vector<char>> in(n), out(n);
  std::vector<Tensor> inputs;
  for (int r = 0; r < n; ++r) {
    inputs.push_back(RandomInput(DType::kFloat32, count, r));
    in[r].resize(count * 4 + 3);
    out[r].resize(count * 4 + 3);
    std::memcpy(in[r].data() + 1 + r, inputs[r].raw_data(), count * 4);
  }
  Tensor expected = *Tensor::Host(DType::kFloat32, devices::Shape({count}));
  ASSERT_TRUE(devices::ReduceInto(ReduceOp::kSum, inputs, expected).ok());
  auto status = RunRanks(n, [&](int r) {
    return all_reduce.Run(r, in[r].data() + 1 + r, out[r].data() + 2 - r % 2,
                          count, DType::kFloat32, ReduceOp::kSum,
                          absl::Seconds(20));
  });
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(status[r].ok()) << status[r];
    EXPECT_EQ(
        std::memcmp(out[r].data() + 2 - r % 2, expected.raw_data(), count * 4),
        0)
        << "rank " << r;
  }
}

// ScheduleCommunicator under AUTO takes the shared-memory path, reports
// "direct", and matches the direct schedule run over messages bit for bit
// (random float values, so the order of the additions shows).
TEST(SharedMemoryAllReduceTest, BitIdenticalToDirectSchedule) {
  for (DType dtype : {DType::kFloat32, DType::kFloat16, DType::kBFloat16}) {
    for (int n : {2, 5, 8}) {
      for (int64_t count : {int64_t{7}, int64_t{3001}, int64_t{70001}}) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean}) {
          auto fast = ScheduleCommunicator::Create(Group(n), {});
          ScheduleCommunicatorOptions direct_options;
          direct_options.all_reduce_algorithm = Algorithm::kDirect;
          auto direct = ScheduleCommunicator::Create(Group(n), direct_options);
          ASSERT_TRUE(fast.ok() && direct.ok());
          std::vector<Tensor> in, a, b;
          for (int r = 0; r < n; ++r) {
            in.push_back(RandomInput(dtype, count, r));
            a.push_back(*Tensor::Host(dtype, devices::Shape({count})));
            b.push_back(*Tensor::Host(dtype, devices::Shape({count})));
          }
          auto status = RunRanks(n, [&](int r) {
            RETURN_IF_ERROR(
                (*fast)->AllReduce(r, in[r], a[r], {op, absl::Seconds(20)}));
            return (*direct)->AllReduce(r, in[r], b[r],
                                        {op, absl::Seconds(20)});
          });
          for (int r = 0; r < n; ++r) {
            ASSERT_TRUE(status[r].ok()) << status[r];
            EXPECT_EQ(Bytes(a[r]), Bytes(b[r]))
                << devices::DTypeName(dtype) << " n=" << n << " count=" << count
                << " rank " << r;
          }
          auto selection = (*fast)->LastAllReduceSelection(0);
          ASSERT_TRUE(selection.has_value());
          EXPECT_EQ(selection->algorithm, Algorithm::kDirect);
          EXPECT_EQ(selection->chunk_bytes, 0);
          EXPECT_FALSE(selection->forced);
        }
      }
    }
  }
}

// A peer that never arrives: DEADLINE_EXCEEDED on every rank (a rank that
// sees the first one's abort reports the group's timeout too), never a
// hang; the group stays aborted.
TEST(SharedMemoryAllReduceTest, MissingPeerTimesOut) {
  for (bool one_shot : {true, false}) {
    const int n = 3;
    auto endpoints = Group(n);
    SharedMemoryAllReduceOptions options;
    options.one_shot_max_bytes = one_shot ? 1 << 20 : 0;
    SharedMemoryAllReduce all_reduce(*endpoints[0]->direct_access(), options);
    std::vector<Tensor> in;
    for (int r = 0; r < n; ++r)
      in.push_back(RandomInput(DType::kFloat32, 100, r));
    const absl::Time start = absl::Now();
    auto status = RunRanks(n - 1, [&](int r) {
      return all_reduce.Run(r, in[r].raw_data(), in[r].raw_data(), 100,
                            DType::kFloat32, ReduceOp::kSum,
                            absl::Milliseconds(100));
    });
    EXPECT_LT(absl::Now() - start, absl::Seconds(10));
    for (const absl::Status& s : status) {
      EXPECT_TRUE(absl::IsDeadlineExceeded(s)) << s;
    }
    // The late rank finds the group aborted, and so does the transport.
    absl::Status late =
        all_reduce.Run(2, in[2].raw_data(), in[2].raw_data(), 100,
                       DType::kFloat32, ReduceOp::kSum, absl::Seconds(5));
    EXPECT_TRUE(absl::IsDeadlineExceeded(late)) << late;
    EXPECT_NE(late.message().find("aborted"), std::string::npos) << late;
    std::vector<std::byte> byte(1);
    auto send = endpoints[0]->Send(1, 0, byte);
    EXPECT_EQ(send.status().code(), absl::StatusCode::kDeadlineExceeded);
  }
}

// Transport::Abort wakes ranks blocked in the shared-memory barrier.
TEST(SharedMemoryAllReduceTest, TransportAbortFailsWaitingRanks) {
  const int n = 4;
  auto endpoints = Group(n);
  SharedMemoryAllReduce all_reduce(*endpoints[0]->direct_access(), {});
  std::vector<Tensor> in;
  for (int r = 0; r < n; ++r) in.push_back(RandomInput(DType::kFloat32, 64, r));
  std::thread aborter([&] {
    absl::SleepFor(absl::Milliseconds(50));
    ASSERT_TRUE(endpoints[3]->Abort(absl::CancelledError("test abort")).ok());
  });
  auto status = RunRanks(n - 1, [&](int r) {
    return all_reduce.Run(r, in[r].raw_data(), in[r].raw_data(), 64,
                          DType::kFloat32, ReduceOp::kSum, absl::Seconds(30));
  });
  aborter.join();
  for (const absl::Status& s : status) {
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << s;
    EXPECT_NE(s.message().find("test abort"), std::string::npos) << s;
  }
}

// Ranks that disagree on the count or the op all get INVALID_ARGUMENT
// naming both, in either variant, and the group stays usable.
TEST(SharedMemoryAllReduceTest, DisagreementIsInvalidArgumentEverywhere) {
  for (bool one_shot : {true, false}) {
    for (bool on_count : {true, false}) {
      SCOPED_TRACE(absl::StrCat(one_shot ? "one-shot" : "two-shot",
                                on_count ? ", count" : ", op"));
      const int n = 3;
      auto endpoints = Group(n);
      SharedMemoryAllReduceOptions options;
      options.one_shot_max_bytes = one_shot ? 1 << 20 : 0;
      SharedMemoryAllReduce all_reduce(*endpoints[0]->direct_access(), options);
      std::vector<Tensor> in;
      for (int r = 0; r < n; ++r) {
        in.push_back(RandomInput(DType::kInt32, 50, r));
      }
      auto status = RunRanks(n, [&](int r) {
        const bool odd = r == 1;
        return all_reduce.Run(
            r, in[r].raw_data(), in[r].raw_data(), odd && on_count ? 40 : 50,
            DType::kInt32, odd && !on_count ? ReduceOp::kMax : ReduceOp::kSum,
            absl::Seconds(20));
      });
      for (const absl::Status& s : status) {
        EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
        EXPECT_NE(s.message().find(on_count ? "40" : "max"), std::string::npos)
            << s;
      }
      status = RunRanks(n, [&](int r) {
        return all_reduce.Run(r, in[r].raw_data(), in[r].raw_data(), 50,
                              DType::kInt32, ReduceOp::kSum, absl::Seconds(20));
      });
      for (const absl::Status& s : status) EXPECT_TRUE(s.ok()) << s;
      EXPECT_EQ(in[0].data<int32_t>()[7], in[2].data<int32_t>()[7]);
    }
  }
}

// Ranks whose sizes disagree across the one-shot limit take different
// variants: every rank still gets INVALID_ARGUMENT, never a crash or a
// stale result, even when the two-shot rank's staging buffer holds an
// older call's header of the one-shot rank's very shape.
TEST(SharedMemoryAllReduceTest, DisagreementAcrossTheOneShotLimit) {
  const int n = 2;
  auto endpoints = Group(n);
  SharedMemoryAllReduceOptions options;
  options.one_shot_max_bytes = 1024;
  SharedMemoryAllReduce all_reduce(*endpoints[0]->direct_access(), options);
  std::vector<Tensor> in;
  for (int r = 0; r < n; ++r)
    in.push_back(RandomInput(DType::kFloat32, 1000, r));
  auto run = [&](int64_t count_of_rank1) {
    return RunRanks(n, [&](int r) {
      return all_reduce.Run(r, in[r].raw_data(), in[r].raw_data(),
                            r == 1 ? count_of_rank1 : 100, DType::kFloat32,
                            ReduceOp::kSum, absl::Seconds(20));
    });
  };
  // Calls 1 and 2 (both parities) one-shot with 100 elements: both staging
  // buffers of rank 1 now hold a header for 100 float32 sums.
  for (int call = 0; call < 2; ++call) {
    for (const absl::Status& s : run(100)) EXPECT_TRUE(s.ok()) << s;
  }
  // Call 3: rank 1 passes 1000 elements (4000 bytes, two-shot).
  for (const absl::Status& s : run(1000)) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("1000"), std::string::npos) << s;
  }
  // The first call on a fresh group, where rank 1 never staged anything.
  auto fresh_endpoints = Group(n);
  SharedMemoryAllReduce fresh(*fresh_endpoints[0]->direct_access(), options);
  auto status = RunRanks(n, [&](int r) {
    return fresh.Run(r, in[r].raw_data(), in[r].raw_data(), r == 1 ? 1000 : 100,
                     DType::kFloat32, ReduceOp::kSum, absl::Seconds(20));
  });
  for (const absl::Status& s : status) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  }
  // Both groups stay usable.
  for (const absl::Status& s : run(100)) EXPECT_TRUE(s.ok()) << s;
}

TEST(SharedMemoryAllReduceTest, BadArguments) {
  auto endpoints = Group(2);
  SharedMemoryAllReduce all_reduce(*endpoints[0]->direct_access(), {});
  float x[4] = {};
  EXPECT_EQ(
      all_reduce
          .Run(2, x, x, 4, DType::kFloat32, ReduceOp::kSum, absl::Seconds(1))
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      all_reduce
          .Run(0, x, x, -1, DType::kFloat32, ReduceOp::kSum, absl::Seconds(1))
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(all_reduce
                .Run(0, nullptr, x, 4, DType::kFloat32, ReduceOp::kSum,
                     absl::Seconds(1))
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      all_reduce
          .Run(0, x, x, 4, DType::kBool, ReduceOp::kMean, absl::Seconds(1))
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(all_reduce
                .Run(0, x, x + 1, 2, DType::kFloat32, ReduceOp::kSum,
                     absl::Seconds(1))
                .code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace collective
}  // namespace distribute
