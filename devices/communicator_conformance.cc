#include "devices/communicator_conformance.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "devices/reduce_op.h"
#include "devices/shape.h"

namespace devices {
namespace conformance {
namespace {

constexpr int kMaxRanks = 4;
constexpr absl::Duration kLong = absl::Seconds(30);

CollectiveOptions Options(ReduceOp op = ReduceOp::kSum,
                          absl::Duration timeout = kLong) {
  CollectiveOptions options;
  options.op = op;
  options.timeout = timeout;
  return options;
}

// Small integers: every sum, product of two and mean is exact, whatever the
// order of the reduction.
std::vector<float> Values(int rank, int64_t count, int salt) {
  std::vector<float> values(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    values[static_cast<size_t>(i)] =
        static_cast<float>(rank * 10 + (i * 7 + salt) % 9 + 1);
  }
  return values;
}

Tensor HostTensor(const std::vector<float>& values) {
  absl::StatusOr<Tensor> t = Tensor::FromVector<float>(
      values, Shape({static_cast<int64_t>(values.size())}));
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *std::move(t) : Tensor();
}

std::vector<float> Floats(const Tensor& host) {
  const float* data = host.data<float>();
  return std::vector<float>(data, data + host.num_elements());
}

float Reduce(ReduceOp op, const std::vector<float>& xs) {
  float out = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) {
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kMean:
        out += xs[i];
        break;
      case ReduceOp::kMin:
        out = std::min(out, xs[i]);
        break;
      case ReduceOp::kMax:
        out = std::max(out, xs[i]);
        break;
      case ReduceOp::kProd:
        out *= xs[i];
        break;
    }
  }
  if (op == ReduceOp::kMean) out /= static_cast<float>(xs.size());
  return out;
}

// The ranks of one group and the tensors they pass.
class Ranks {
 public:
  explicit Ranks(CommunicatorGroup& group) : group_(group) {}

  Communicator& comm() { return *group_.communicator; }
  int n() { return group_.communicator->size(); }

  Tensor ToRank(int rank, const Tensor& host) {
    return group_.to_rank ? group_.to_rank(rank, host) : host;
  }
  std::vector<float> ToHost(int rank, const Tensor& t) {
    return Floats(group_.to_host ? group_.to_host(rank, t) : t);
  }
  Tensor Filled(int rank, int64_t count, float value) {
    return ToRank(rank, HostTensor(std::vector<float>(
                            static_cast<size_t>(count), value)));
  }

  // body(rank) on every rank at once; each rank's status.
  std::vector<absl::Status> Run(const std::function<absl::Status(int)>& body) {
    std::vector<absl::Status> out(static_cast<size_t>(n()));
    auto each = [&](int r) { out[static_cast<size_t>(r)] = body(r); };
    if (group_.run_ranks) {
      group_.run_ranks(each);
    } else {
      std::vector<std::thread> threads;
      for (int r = 0; r < n(); ++r) threads.emplace_back(each, r);
      for (std::thread& t : threads) t.join();
    }
    return out;
  }

 private:
  CommunicatorGroup& group_;
};

// OK on every rank; true when every rank said UNIMPLEMENTED instead (the
// backend lacks the collective), which the caller skips.
bool AllOkOrUnimplemented(const std::vector<absl::Status>& statuses,
                          absl::string_view what) {
  bool unimplemented = true;
  for (const absl::Status& s : statuses) {
    if (!absl::IsUnimplemented(s)) unimplemented = false;
  }
  if (unimplemented) return true;
  for (size_t r = 0; r < statuses.size(); ++r) {
    EXPECT_TRUE(statuses[r].ok())
        << what << ", rank " << r << ": " << statuses[r];
  }
  return false;
}

bool Mentions(const absl::Status& status, absl::string_view text) {
  return status.message().find(text) != absl::string_view::npos;
}

}  // namespace

// Linked into tests that instantiate it, and into others that share their
// dependencies.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(CommunicatorConformanceTest);

void PrintTo(const CommunicatorBackend& backend, std::ostream* os) {
  *os << backend.name;
}

std::string CommunicatorBackendName(
    const ::testing::TestParamInfo<CommunicatorBackend>& info) {
  return info.param.name;
}

std::unique_ptr<CommunicatorGroup> CommunicatorConformanceTest::Make(int n) {
  absl::StatusOr<CommunicatorGroup> group = GetParam().make(n);
  if (!group.ok() && (absl::IsFailedPrecondition(group.status()) ||
                      absl::IsUnavailable(group.status()))) {
    // GTEST_SKIP returns from the function it is in: a lambda here.
    [&] {
      GTEST_SKIP() << GetParam().name
                   << " cannot run here: " << group.status().message();
    }();
    return nullptr;
  }
  EXPECT_TRUE(group.ok()) << group.status();
  if (!group.ok()) return nullptr;
  EXPECT_EQ(group->communicator->size(), n);
  return std::make_unique<CommunicatorGroup>(*std::move(group));
}

TEST_P(CommunicatorConformanceTest, DescribesTheGroup) {
  std::unique_ptr<CommunicatorGroup> group = Make(3);
  if (group == nullptr) return;
  Communicator& comm = *group->communicator;
  EXPECT_FALSE(comm.name().empty());
  for (int r = 0; r < 3; ++r) {
    EXPECT_FALSE(comm.device(r).empty()) << r;
    for (int o = 0; o < r; ++o) EXPECT_NE(comm.device(r), comm.device(o));
  }
  EXPECT_EQ(comm.device(3), "");
  EXPECT_EQ(comm.device(-1), "");
}

// Every op, counts that do and do not divide among the ranks (0 too), out
// of place and in place: every rank gets the reduction of all inputs.
TEST_P(CommunicatorConformanceTest, AllReduce) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    std::unique_ptr<CommunicatorGroup> group = Make(n);
    if (group == nullptr) return;
    Ranks ranks(*group);
    int salt = 0;
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{1000}}) {
      for (ReduceOp op :
           {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMin, ReduceOp::kMax}) {
        for (bool in_place : {false, true}) {
          ++salt;
          std::vector<std::vector<float>> got(static_cast<size_t>(n));
          std::vector<absl::Status> statuses = ranks.Run([&](int r) {
            Tensor input = ranks.ToRank(r, HostTensor(Values(r, count, salt)));
            Tensor output = in_place ? input : ranks.Filled(r, count, -1);
            absl::Status s =
                ranks.comm().AllReduce(r, input, output, Options(op));
            if (s.ok()) got[static_cast<size_t>(r)] = ranks.ToHost(r, output);
            return s;
          });
          const std::string what =
              absl::StrCat(n, " ranks, ", count, " elements, op ",
                           static_cast<int>(op), in_place ? ", in place" : "");
          ASSERT_FALSE(AllOkOrUnimplemented(statuses, what))
              << "AllReduce is not optional";
          std::vector<std::vector<float>> inputs;
          for (int k = 0; k < n; ++k) inputs.push_back(Values(k, count, salt));
          for (int r = 0; r < n; ++r) {
            ASSERT_EQ(got[static_cast<size_t>(r)].size(),
                      static_cast<size_t>(count))
                << what;
            for (int64_t i = 0; i < count; ++i) {
              std::vector<float> xs;
              for (int k = 0; k < n; ++k) {
                xs.push_back(
                    inputs[static_cast<size_t>(k)][static_cast<size_t>(i)]);
              }
              ASSERT_FLOAT_EQ(
                  got[static_cast<size_t>(r)][static_cast<size_t>(i)],
                  Reduce(op, xs))
                  << what << ", rank " << r << ", element " << i;
            }
          }
        }
      }
    }
  }
}

TEST_P(CommunicatorConformanceTest, AllGather) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    std::unique_ptr<CommunicatorGroup> group = Make(n);
    if (group == nullptr) return;
    Ranks ranks(*group);
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{5}}) {
      std::vector<std::vector<float>> got(static_cast<size_t>(n));
      std::vector<absl::Status> statuses = ranks.Run([&](int r) {
        Tensor input = ranks.ToRank(r, HostTensor(Values(r, count, 3)));
        Tensor output = ranks.Filled(r, n * count, -1);
        absl::Status s = ranks.comm().AllGather(r, input, output, Options());
        if (s.ok()) got[static_cast<size_t>(r)] = ranks.ToHost(r, output);
        return s;
      });
      if (AllOkOrUnimplemented(statuses, "AllGather")) {
        GTEST_SKIP() << ranks.comm().name() << " has no AllGather";
      }
      std::vector<float> want;
      for (int k = 0; k < n; ++k) {
        const std::vector<float> v = Values(k, count, 3);
        want.insert(want.end(), v.begin(), v.end());
      }
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(got[static_cast<size_t>(r)], want)
            << n << " ranks, " << count << " elements, rank " << r;
      }
    }
  }
}

TEST_P(CommunicatorConformanceTest, ReduceScatter) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    std::unique_ptr<CommunicatorGroup> group = Make(n);
    if (group == nullptr) return;
    Ranks ranks(*group);
    for (int64_t block : {int64_t{1}, int64_t{3}}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
        std::vector<std::vector<float>> got(static_cast<size_t>(n));
        std::vector<absl::Status> statuses = ranks.Run([&](int r) {
          Tensor input = ranks.ToRank(r, HostTensor(Values(r, n * block, 4)));
          Tensor output = ranks.Filled(r, block, -1);
          absl::Status s =
              ranks.comm().ReduceScatter(r, input, output, Options(op));
          if (s.ok()) got[static_cast<size_t>(r)] = ranks.ToHost(r, output);
          return s;
        });
        if (AllOkOrUnimplemented(statuses, "ReduceScatter")) {
          GTEST_SKIP() << ranks.comm().name() << " has no ReduceScatter";
        }
        for (int r = 0; r < n; ++r) {
          ASSERT_EQ(got[static_cast<size_t>(r)].size(),
                    static_cast<size_t>(block));
          for (int64_t i = 0; i < block; ++i) {
            std::vector<float> xs;
            for (int k = 0; k < n; ++k) {
              xs.push_back(
                  Values(k, n * block, 4)[static_cast<size_t>(r * block + i)]);
            }
            EXPECT_FLOAT_EQ(got[static_cast<size_t>(r)][static_cast<size_t>(i)],
                            Reduce(op, xs))
                << n << " ranks, block " << block << ", rank " << r;
          }
        }
      }
    }
  }
}

TEST_P(CommunicatorConformanceTest, BroadcastFromEveryEnd) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    std::unique_ptr<CommunicatorGroup> group = Make(n);
    if (group == nullptr) return;
    Ranks ranks(*group);
    for (int root : {0, n - 1}) {
      for (int64_t count : {int64_t{0}, int64_t{5}}) {
        std::vector<std::vector<float>> got(static_cast<size_t>(n));
        std::vector<absl::Status> statuses = ranks.Run([&](int r) {
          Tensor tensor = ranks.ToRank(r, HostTensor(Values(r, count, 5)));
          absl::Status s = ranks.comm().Broadcast(r, root, tensor, Options());
          if (s.ok()) got[static_cast<size_t>(r)] = ranks.ToHost(r, tensor);
          return s;
        });
        if (AllOkOrUnimplemented(statuses, "Broadcast")) {
          GTEST_SKIP() << ranks.comm().name() << " has no Broadcast";
        }
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(got[static_cast<size_t>(r)], Values(root, count, 5))
              << n << " ranks, root " << root << ", rank " << r;
        }
      }
    }
  }
}

// The root gets the reduction; the other ranks' outputs are untouched.
TEST_P(CommunicatorConformanceTest, ReduceToTheRootOnly) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    std::unique_ptr<CommunicatorGroup> group = Make(n);
    if (group == nullptr) return;
    Ranks ranks(*group);
    const int root = n - 1;
    const int64_t count = 6;
    std::vector<std::vector<float>> got(static_cast<size_t>(n));
    std::vector<absl::Status> statuses = ranks.Run([&](int r) {
      Tensor input = ranks.ToRank(r, HostTensor(Values(r, count, 6)));
      Tensor output = ranks.Filled(r, count, -1);
      absl::Status s = ranks.comm().Reduce(r, root, input, output, Options());
      if (s.ok()) got[static_cast<size_t>(r)] = ranks.ToHost(r, output);
      return s;
    });
    if (AllOkOrUnimplemented(statuses, "Reduce")) {
      GTEST_SKIP() << ranks.comm().name() << " has no Reduce";
    }
    for (int r = 0; r < n; ++r) {
      for (int64_t i = 0; i < count; ++i) {
        float want = -1;
        if (r == root) {
          std::vector<float> xs;
          for (int k = 0; k < n; ++k) {
            xs.push_back(Values(k, count, 6)[static_cast<size_t>(i)]);
          }
          want = Reduce(ReduceOp::kSum, xs);
        }
        EXPECT_EQ(got[static_cast<size_t>(r)][static_cast<size_t>(i)], want)
            << n << " ranks, rank " << r << ", element " << i;
      }
    }
  }
}

TEST_P(CommunicatorConformanceTest, AllToAll) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    std::unique_ptr<CommunicatorGroup> group = Make(n);
    if (group == nullptr) return;
    Ranks ranks(*group);
    const int64_t block = 2;
    std::vector<std::vector<float>> got(static_cast<size_t>(n));
    std::vector<absl::Status> statuses = ranks.Run([&](int r) {
      Tensor input = ranks.ToRank(r, HostTensor(Values(r, n * block, 7)));
      Tensor output = ranks.Filled(r, n * block, -1);
      absl::Status s = ranks.comm().AllToAll(r, input, output, Options());
      if (s.ok()) got[static_cast<size_t>(r)] = ranks.ToHost(r, output);
      return s;
    });
    if (AllOkOrUnimplemented(statuses, "AllToAll")) {
      GTEST_SKIP() << ranks.comm().name() << " has no AllToAll";
    }
    for (int r = 0; r < n; ++r) {
      // Block i of rank r's output is block r of rank i's input.
      for (int i = 0; i < n; ++i) {
        for (int64_t e = 0; e < block; ++e) {
          EXPECT_EQ(
              got[static_cast<size_t>(r)][static_cast<size_t>(i * block + e)],
              Values(i, n * block, 7)[static_cast<size_t>(r * block + e)])
              << n << " ranks, rank " << r << ", block " << i;
        }
      }
    }
  }
}

TEST_P(CommunicatorConformanceTest, SendAndRecv) {
  for (int n = 2; n <= kMaxRanks; n += 2) {
    std::unique_ptr<CommunicatorGroup> group = Make(n);
    if (group == nullptr) return;
    Ranks ranks(*group);
    // Rank 0 to the last rank, and the last rank back to 0.
    std::vector<std::vector<float>> got(static_cast<size_t>(n));
    std::vector<absl::Status> statuses = ranks.Run([&](int r) {
      if (r != 0 && r != n - 1) return absl::OkStatus();
      const int peer = r == 0 ? n - 1 : 0;
      Tensor mine = ranks.ToRank(r, HostTensor(Values(r, 9, 8)));
      Tensor theirs = ranks.Filled(r, 9, -1);
      // The lower rank sends first, so that a blocking Send cannot wait on
      // a peer that is itself blocked in a Send.
      absl::Status s;
      if (r < peer) {
        s = ranks.comm().Send(r, peer, mine, Options());
        if (s.ok()) s = ranks.comm().Recv(r, peer, theirs, Options());
      } else {
        s = ranks.comm().Recv(r, peer, theirs, Options());
        if (s.ok()) s = ranks.comm().Send(r, peer, mine, Options());
      }
      if (s.ok()) got[static_cast<size_t>(r)] = ranks.ToHost(r, theirs);
      return s;
    });
    std::vector<absl::Status> ends = {statuses[0],
                                      statuses[static_cast<size_t>(n - 1)]};
    if (AllOkOrUnimplemented(ends, "Send/Recv")) {
      GTEST_SKIP() << ranks.comm().name() << " has no Send/Recv";
    }
    EXPECT_EQ(got[0], Values(n - 1, 9, 8));
    EXPECT_EQ(got[static_cast<size_t>(n - 1)], Values(0, 9, 8));
  }
}

TEST_P(CommunicatorConformanceTest, RankOutsideTheGroupIsInvalidArgument) {
  std::unique_ptr<CommunicatorGroup> group = Make(2);
  if (group == nullptr) return;
  Ranks ranks(*group);
  for (int bad : {-1, 2}) {
    Tensor t = ranks.Filled(0, 4, 1);
    Tensor out = ranks.Filled(0, 4, 1);
    EXPECT_EQ(ranks.comm().AllReduce(bad, t, out, Options()).code(),
              absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

// A rank that never joins: the others give up after their timeout with
// DEADLINE_EXCEEDED instead of waiting forever.
TEST_P(CommunicatorConformanceTest, MissingRankTimesOut) {
  std::unique_ptr<CommunicatorGroup> group = Make(2);
  if (group == nullptr) return;
  Ranks ranks(*group);
  std::vector<absl::Status> statuses = ranks.Run([&](int r) {
    if (r == 1) return absl::OkStatus();
    Tensor t = ranks.Filled(r, 4, 1);
    return ranks.comm().AllReduce(
        r, t, t, Options(ReduceOp::kSum, absl::Milliseconds(300)));
  });
  EXPECT_EQ(statuses[0].code(), absl::StatusCode::kDeadlineExceeded)
      << statuses[0];
}

// One rank's abort fails the collectives the others wait in, with
// UNAVAILABLE carrying its reason.
TEST_P(CommunicatorConformanceTest, AbortFailsTheWaitingRanks) {
  std::unique_ptr<CommunicatorGroup> group = Make(3);
  if (group == nullptr) return;
  Ranks ranks(*group);
  absl::Status abort;
  std::vector<absl::Status> statuses = ranks.Run([&](int r) {
    if (r == 2) {
      abort = ranks.comm().Abort(absl::InternalError("rank 2 lost its GPU"));
      return absl::OkStatus();
    }
    Tensor t = ranks.Filled(r, 4, 1);
    return ranks.comm().AllReduce(r, t, t,
                                  Options(ReduceOp::kSum, absl::Seconds(10)));
  });
  if (absl::IsUnimplemented(abort)) {
    GTEST_SKIP() << ranks.comm().name() << " cannot abort: " << abort;
  }
  EXPECT_TRUE(abort.ok()) << abort;
  for (int r : {0, 1}) {
    const absl::Status& s = statuses[static_cast<size_t>(r)];
    EXPECT_EQ(s.code(), absl::StatusCode::kUnavailable) << r << ": " << s;
    EXPECT_TRUE(Mentions(s, "rank 2 lost its GPU")) << r << ": " << s;
  }
  EXPECT_EQ(ranks.comm().Abort(absl::OkStatus()).code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace conformance
}  // namespace devices
