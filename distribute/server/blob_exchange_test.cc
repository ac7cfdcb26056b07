#include "distribute/server/blob_exchange.h"

#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/server/internal/test_cluster.h"
#include "gtest/gtest.h"

namespace distribute {
namespace {

using server_internal::PickFreePorts;
using server_internal::TestCluster;

// A fake ncclUniqueId: 128 bytes, zeros included, none alike.
std::string FakeId(int seed) {
  std::string id(128, '\0');
  for (int i = 0; i < 128; ++i) {
    id[i] = static_cast<char>((i * 37 + seed) % 256);
  }
  return id;
}

TEST(BlobExchangeTest, ChiefPublishesAndTheOtherTaskFetches) {
  absl::StatusOr<TestCluster> cluster = TestCluster::Start(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const BlobKey key{"nccl-allreduce", 3};
  ASSERT_TRUE(PublishBlob(*cluster->servers[0], key, FakeId(1)).ok());
  absl::StatusOr<std::string> fetched =
      FetchBlob(cluster->servers[1]->channel_options(), cluster->addresses[0],
                key, absl::Seconds(10));
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_EQ(*fetched, FakeId(1));
  // Another instance of the group is another value.
  absl::StatusOr<std::string> other =
      FetchBlob(cluster->servers[1]->channel_options(), cluster->addresses[0],
                {"nccl-allreduce", 4}, absl::Milliseconds(300));
  EXPECT_EQ(other.status().code(), absl::StatusCode::kDeadlineExceeded)
      << other.status();
}

// A task that gives up after publishing first waits until its peers have
// its value: AwaitBlobFetches counts the values handed out.
TEST(BlobExchangeTest, AwaitBlobFetchesCountsTheFetches) {
  absl::StatusOr<TestCluster> cluster = TestCluster::Start(3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const BlobKey key{"profile", 0};
  ASSERT_TRUE(PublishBlob(*cluster->servers[0], key, "mine").ok());
  Server& owner = *cluster->servers[0];
  EXPECT_EQ(
      owner.AwaitBlobFetches(key.ToString(), 1, absl::Milliseconds(50)).code(),
      absl::StatusCode::kDeadlineExceeded);
  for (int t = 1; t < 3; ++t) {
    ASSERT_TRUE(FetchBlob(cluster->servers[t]->channel_options(),
                          cluster->addresses[0], key, absl::Seconds(10))
                    .ok());
  }
  EXPECT_TRUE(
      owner.AwaitBlobFetches(key.ToString(), 2, absl::Seconds(10)).ok());
  // A fetch of another key does not count.
  EXPECT_EQ(owner.AwaitBlobFetches("other/0", 1, absl::Milliseconds(50)).code(),
            absl::StatusCode::kDeadlineExceeded);
  owner.Stop();
  EXPECT_EQ(owner.AwaitBlobFetches(key.ToString(), 3, absl::Seconds(10)).code(),
            absl::StatusCode::kUnavailable);
}

TEST(BlobExchangeTest, BroadcastWaitsForTheChiefToPublish) {
  absl::StatusOr<TestCluster> cluster = TestCluster::Start(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const BlobKey key{"group", 0};
  absl::StatusOr<std::string> fetched = absl::UnknownError("not run");
  // The worker asks first; the chief publishes a little later.
  std::thread worker([&] {
    fetched = BroadcastBlob(
        *cluster->servers[1], cluster->servers[0]->target(),
        /*is_chief=*/false, key,
        []() -> absl::StatusOr<std::string> {
          return absl::InternalError("only the chief makes the value");
        },
        absl::Seconds(10));
  });
  absl::SleepFor(absl::Milliseconds(200));
  int made = 0;
  absl::StatusOr<std::string> published = BroadcastBlob(
      *cluster->servers[0], cluster->addresses[0], /*is_chief=*/true, key,
      [&]() -> absl::StatusOr<std::string> {
        ++made;
        return FakeId(9);
      },
      absl::Seconds(10));
  worker.join();
  ASSERT_TRUE(published.ok()) << published.status();
  ASSERT_TRUE(fetched.ok()) << fetched.status();
  EXPECT_EQ(made, 1);
  EXPECT_EQ(*published, FakeId(9));
  EXPECT_EQ(*fetched, FakeId(9));
}

TEST(BlobExchangeTest, NothingPublishedIsDeadlineExceededNamingKeyAndChief) {
  absl::StatusOr<TestCluster> cluster = TestCluster::Start(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> fetched =
      FetchBlob(cluster->servers[1]->channel_options(), cluster->addresses[0],
                {"missing", 1}, absl::Milliseconds(300));
  EXPECT_EQ(fetched.status().code(), absl::StatusCode::kDeadlineExceeded)
      << fetched.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_NE(fetched.status().message().find("missing/1"), std::string::npos)
      << fetched.status();
  EXPECT_NE(fetched.status().message().find(cluster->addresses[0]),
            std::string::npos)
      << fetched.status();
}

TEST(BlobExchangeTest, ChiefThatNeverStartsIsDeadlineExceeded) {
  absl::StatusOr<std::vector<int>> ports = PickFreePorts(1);
  ASSERT_TRUE(ports.ok()) << ports.status();
  absl::StatusOr<std::string> fetched =
      FetchBlob({}, absl::StrCat("127.0.0.1:", (*ports)[0]), {"group", 0},
                absl::Milliseconds(300));
  EXPECT_EQ(fetched.status().code(), absl::StatusCode::kDeadlineExceeded)
      << fetched.status();
}

TEST(BlobExchangeTest, FetchWithoutTheTokenIsUnauthenticated) {
  ServerOptions options;
  options.cluster_token = "s3cret";
  absl::StatusOr<TestCluster> cluster = TestCluster::Start(2, options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const BlobKey key{"nccl", 0};
  ASSERT_TRUE(PublishBlob(*cluster->servers[0], key, FakeId(2)).ok());
  absl::StatusOr<std::string> no_token =
      FetchBlob({}, cluster->addresses[0], key, absl::Seconds(5));
  EXPECT_EQ(no_token.status().code(), absl::StatusCode::kUnauthenticated)
      << no_token.status();
  ChannelOptions wrong;
  wrong.cluster_token = "guess";
  absl::StatusOr<std::string> wrong_token =
      FetchBlob(wrong, cluster->addresses[0], key, absl::Seconds(5));
  EXPECT_EQ(wrong_token.status().code(), absl::StatusCode::kUnauthenticated)
      << wrong_token.status();
  absl::StatusOr<std::string> with_token =
      FetchBlob(cluster->servers[1]->channel_options(), cluster->addresses[0],
                key, absl::Seconds(5));
  ASSERT_TRUE(with_token.ok()) << with_token.status();
  EXPECT_EQ(*with_token, FakeId(2));
}

TEST(BlobExchangeTest, FetchFromOutsideTheClusterIsPermissionDenied) {
  // The chief's cluster lives on 127.0.0.2; this process dials from
  // 127.0.0.1, which is not one of its hosts.
  absl::StatusOr<std::unique_ptr<Server>> chief =
      absl::UnavailableError("not tried");
  for (int attempt = 0; attempt < 5; ++attempt) {
    absl::StatusOr<std::vector<int>> ports = PickFreePorts(1);
    ASSERT_TRUE(ports.ok()) << ports.status();
    chief = Server::Create(
        *cluster::ClusterSpec::Create(
            {{"worker", {absl::StrCat("127.0.0.2:", (*ports)[0])}}}),
        "worker", 0);
    if (chief.status().code() != absl::StatusCode::kUnavailable) break;
  }
  ASSERT_TRUE(chief.ok()) << chief.status();
  const BlobKey key{"nccl", 0};
  ASSERT_TRUE(PublishBlob(**chief, key, FakeId(3)).ok());
  absl::StatusOr<std::string> refused =
      FetchBlob({}, (*chief)->address(), key, absl::Seconds(5));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied)
      << refused.status();
}

TEST(BlobExchangeTest, ChiefStoppingFailsAWaitingFetchWithUnavailable) {
  absl::StatusOr<TestCluster> cluster = TestCluster::Start(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  absl::StatusOr<std::string> fetched = absl::UnknownError("not run");
  std::thread worker([&] {
    fetched = FetchBlob(cluster->servers[1]->channel_options(),
                        cluster->addresses[0], {"group", 0}, absl::Seconds(20));
  });
  absl::SleepFor(absl::Milliseconds(200));
  const absl::Time stop = absl::Now();
  cluster->servers[0]->Stop();
  worker.join();
  EXPECT_LT(absl::Now() - stop, absl::Seconds(5));
  // The server answers UNAVAILABLE, or its shutdown cancels the call first.
  EXPECT_TRUE(fetched.status().code() == absl::StatusCode::kUnavailable ||
              fetched.status().code() == absl::StatusCode::kCancelled)
      << fetched.status();
}

TEST(BlobExchangeTest, PublishingAnotherValueUnderTheSameKeyIsAlreadyExists) {
  absl::StatusOr<TestCluster> cluster = TestCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Server& chief = *cluster->servers[0];
  ASSERT_TRUE(PublishBlob(chief, {"g", 1}, FakeId(1)).ok());
  EXPECT_TRUE(PublishBlob(chief, {"g", 1}, FakeId(1)).ok());
  EXPECT_EQ(PublishBlob(chief, {"g", 1}, FakeId(2)).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(PublishBlob(chief, {"g", 2}, FakeId(2)).ok());
  chief.Stop();
  EXPECT_EQ(PublishBlob(chief, {"g", 3}, FakeId(3)).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(BlobExchangeTest, BadArgumentsAreInvalidArgument) {
  absl::StatusOr<TestCluster> cluster = TestCluster::Start(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  Server& chief = *cluster->servers[0];
  EXPECT_EQ(PublishBlob(chief, {"", 0}, "x").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PublishBlob(chief, {"g", -1}, "x").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FetchBlob({}, cluster->addresses[0], {"g", 0}, absl::ZeroDuration())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(FetchBlob({}, "", {"g", 0}, absl::Seconds(1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace distribute
