#include "distribute/server/nccl_bootstrap.h"

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "devices/cuda/cuda_platform.h"
#include "devices/tensor.h"
#include "distribute/server/blob_exchange.h"
#include "distribute/server/internal/test_cluster.h"
#include "gtest/gtest.h"

namespace distribute {
namespace {

using devices::cuda::CudaPlatform;
using devices::cuda::NcclCommunicator;
using server_internal::TestCluster;

class NcclBootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<std::unique_ptr<CudaPlatform>> platform =
        CudaPlatform::Create();
    if (!platform.ok()) {
      GTEST_SKIP() << "no CUDA GPU found: " << platform.status();
    }
    platform_ = *std::move(platform);
    if (platform_->num_gpus() == 0) GTEST_SKIP() << "no CUDA GPU found";
  }

  std::unique_ptr<CudaPlatform> platform_;
};

TEST_F(NcclBootstrapTest, RanksFormOneGroupFromTheChiefsId) {
  // One rank per GPU (NCCL allows one rank per GPU), each with a Server of
  // its own, as separate tasks would.
  const int n = platform_->num_gpus() >= 2 ? 2 : 1;
  absl::StatusOr<TestCluster> cluster = TestCluster::Start(n);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  std::vector<std::string> names;
  for (int r = 0; r < n; ++r) names.push_back(platform_->gpu(r)->name());
  std::vector<absl::StatusOr<std::unique_ptr<NcclCommunicator>>> comms;
  for (int r = 0; r < n; ++r) comms.emplace_back(absl::UnknownError("not run"));
  std::vector<std::thread> threads;
  // The chief checks the other tasks' counts of the group first.
  const std::vector<std::string> others(cluster->addresses.begin() + 1,
                                        cluster->addresses.end());
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      comms[r] = CreateNcclRankOverGrpc(
          *cluster->servers[r], cluster->addresses[0], {"nccl-test", 0},
          *platform_->gpu(r), r, names, absl::Seconds(60),
          r == 0 ? others : std::vector<std::string>());
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) {
    ASSERT_TRUE(comms[r].ok()) << "rank " << r << ": " << comms[r].status();
    EXPECT_EQ((*comms[r])->size(), n);
    EXPECT_TRUE((*comms[r])->IsLocal(r));
  }
  // The id the others fetched is the one the chief published.
  absl::StatusOr<std::string> id =
      FetchBlob(cluster->servers[0]->channel_options(), cluster->addresses[0],
                {"nccl-test", 0}, absl::Seconds(5));
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<std::string> unique =
      DecodeNcclGroupBlob(*id, n, {"nccl-test", 0});
  ASSERT_TRUE(unique.ok()) << unique.status();
  EXPECT_EQ(unique->size(), 128u);
}

TEST_F(NcclBootstrapTest, MissingChiefIsDeadlineExceeded) {
  absl::StatusOr<TestCluster> cluster = TestCluster::Start(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> comm =
      CreateNcclRankOverGrpc(*cluster->servers[1], cluster->addresses[0],
                             {"nobody-publishes", 0}, *platform_->gpu(0), 1,
                             {"chief-gpu", platform_->gpu(0)->name()},
                             absl::Milliseconds(300));
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kDeadlineExceeded)
      << comm.status();
  EXPECT_EQ(
      CreateNcclRankOverGrpc(*cluster->servers[0], cluster->addresses[0],
                             {"g", 0}, *platform_->gpu(0), 2,
                             {platform_->gpu(0)->name()}, absl::Seconds(1))
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

// A worker process with several GPUs holds consecutive ranks of one group
// (here: every GPU of this machine as worker 0 of a one-worker cluster).
TEST_F(NcclBootstrapTest, OneProcessDrivesSeveralRanks) {
  absl::StatusOr<TestCluster> cluster = TestCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  std::vector<devices::cuda::CudaDevice*> gpus;
  std::vector<std::string> names;
  for (int r = 0; r < platform_->num_gpus(); ++r) {
    gpus.push_back(platform_->gpu(r));
    names.push_back(platform_->gpu(r)->name());
  }
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> comm =
      CreateNcclRanksOverGrpc(*cluster->servers[0], cluster->addresses[0],
                              {"nccl-local-ranks", 0}, gpus, 0, names,
                              absl::Seconds(60));
  ASSERT_TRUE(comm.ok()) << comm.status();
  EXPECT_EQ((*comm)->size(), platform_->num_gpus());
  for (int r = 0; r < platform_->num_gpus(); ++r) {
    EXPECT_TRUE((*comm)->IsLocal(r));
  }
}

// Ranks outside the group are refused before anything is fetched or made
// (no GPU needed).
TEST(NcclBootstrapArgumentsTest, RanksOutsideTheGroupAreInvalid) {
  absl::StatusOr<TestCluster> cluster = TestCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::vector<std::string> names = {"gpu-a", "gpu-b"};
  // No local GPU at all.
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> none =
      CreateNcclRanksOverGrpc(*cluster->servers[0], cluster->addresses[0],
                              {"g", 0}, {}, 0, names, absl::Seconds(1));
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument)
      << none.status();
  EXPECT_NE(none.status().message().find("one per local GPU"),
            std::string::npos)
      << none.status();
  // Three local ranks from rank 0 in a group of two; a negative rank.
  std::vector<devices::cuda::CudaDevice*> three(3, nullptr);
  EXPECT_EQ(CreateNcclRanksOverGrpc(*cluster->servers[0], cluster->addresses[0],
                                    {"g", 0}, three, 0, names, absl::Seconds(1))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<devices::cuda::CudaDevice*> one(1, nullptr);
  EXPECT_EQ(CreateNcclRanksOverGrpc(*cluster->servers[0], cluster->addresses[0],
                                    {"g", 0}, one, -1, names, absl::Seconds(1))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// The chief's blob carries the group's size: a task that counts another
// (a worker with more or fewer GPUs) fails before it touches NCCL or a GPU,
// naming both sizes (no GPU needed).
TEST(NcclBootstrapArgumentsTest, TaskOfAnotherGroupSizeFailsNamingBoth) {
  const std::string id(devices::cuda::kNcclUniqueIdBytes, 'i');
  const BlobKey key{"sizes", 3};
  absl::StatusOr<std::string> back =
      DecodeNcclGroupBlob(EncodeNcclGroupBlob(id, 300), 300, key);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, id);
  EXPECT_EQ(DecodeNcclGroupBlob(id, 300, key).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<std::string> refused = DecodeNcclGroupBlob(
      EncodeNcclRefusal(absl::UnavailableError("task 2 is gone")), 300, key);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("task 2 is gone"),
            std::string::npos)
      << refused.status();

  absl::StatusOr<TestCluster> cluster = TestCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ASSERT_TRUE(
      PublishBlob(*cluster->servers[0], key, EncodeNcclGroupBlob(id, 4)).ok());
  std::vector<devices::cuda::CudaDevice*> one(1, nullptr);
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> comm =
      CreateNcclRanksOverGrpc(*cluster->servers[0], cluster->addresses[0], key,
                              one, 1, {"gpu-a", "gpu-b"}, absl::Seconds(5));
  EXPECT_EQ(comm.status().code(), absl::StatusCode::kFailedPrecondition)
      << comm.status();
  EXPECT_NE(comm.status().message().find("has 4 ranks but this task counts 2"),
            std::string::npos)
      << comm.status();
}

// The chief checks the other tasks' counts before it makes an id: a task
// that counts 4 ranks where the chief counts 2 makes both fail at once,
// naming both counts (no GPU needed: neither gets as far as NCCL).
TEST(NcclBootstrapArgumentsTest, ChiefRefusesATaskOfAnotherCount) {
  absl::StatusOr<TestCluster> cluster = TestCluster::Start(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const BlobKey key{"counted", 0};
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> task;
  std::thread other([&] {
    std::vector<devices::cuda::CudaDevice*> two(2, nullptr);
    task = CreateNcclRanksOverGrpc(*cluster->servers[1], cluster->addresses[0],
                                   key, two, 2, {"a", "b", "c", "d"},
                                   absl::Seconds(20));
  });
  std::vector<devices::cuda::CudaDevice*> one(1, nullptr);
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> chief =
      CreateNcclRanksOverGrpc(*cluster->servers[0], cluster->addresses[0], key,
                              one, 0, {"a", "b"}, absl::Seconds(20),
                              {cluster->addresses[1]});
  other.join();
  for (const auto* result : {&chief, &task}) {
    EXPECT_EQ(result->status().code(), absl::StatusCode::kFailedPrecondition)
        << result->status();
    EXPECT_NE(result->status().message().find(
                  "counts 4 ranks in NCCL group \"counted/0\" but the chief "
                  "counts 2"),
              std::string::npos)
        << result->status();
  }
}

// A task that never comes does not hide a disagreement: the chief fetches
// the counts in parallel rounds and refuses as soon as one differs.
TEST(NcclBootstrapArgumentsTest, DisagreementIsSeenDespiteAMissingTask) {
  absl::StatusOr<TestCluster> cluster = TestCluster::Start(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto ports = server_internal::PickFreePorts(1);
  ASSERT_TRUE(ports.ok());
  const std::string absent = absl::StrCat("127.0.0.1:", (*ports)[0]);
  const BlobKey key{"one-missing", 0};
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> task;
  std::thread other([&] {
    std::vector<devices::cuda::CudaDevice*> two(2, nullptr);
    task = CreateNcclRanksOverGrpc(*cluster->servers[1], cluster->addresses[0],
                                   key, two, 4, {"a", "b", "c", "d", "e", "f"},
                                   absl::Seconds(60));
  });
  std::vector<devices::cuda::CudaDevice*> one(1, nullptr);
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<NcclCommunicator>> chief =
      CreateNcclRanksOverGrpc(*cluster->servers[0], cluster->addresses[0], key,
                              one, 0, {"a", "b", "c"}, absl::Seconds(60),
                              {absent, cluster->addresses[1]});
  other.join();
  EXPECT_LT(absl::Now() - start, absl::Seconds(30));  // Not the timeout.
  EXPECT_EQ(chief.status().code(), absl::StatusCode::kFailedPrecondition)
      << chief.status();
  EXPECT_EQ(task.status().code(), absl::StatusCode::kFailedPrecondition)
      << task.status();
  EXPECT_NE(task.status().message().find("counts 6 ranks"), std::string::npos)
      << task.status();
}

}  // namespace
}  // namespace distribute
