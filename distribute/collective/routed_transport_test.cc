#include "distribute/collective/routed_transport.h"

#include <atomic>
#include <cstddef>
#include <memory>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "devices/host_platform.h"
#include "gtest/gtest.h"

namespace distribute {
namespace collective {
namespace {

constexpr absl::Duration kWait = absl::Seconds(10);

// Counts the sends that pass through it to `inner`.
class CountingTransport : public devices::Transport {
 public:
  CountingTransport(std::unique_ptr<devices::Transport> inner,
                    std::atomic<int>* sends)
      : inner_(std::move(inner)), sends_(sends) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  const std::string& device(int rank) const override {
    return inner_->device(rank);
  }
  absl::StatusOr<std::unique_ptr<devices::Request>> Send(
      int peer, uint64_t tag, absl::Span<const std::byte> data) override {
    sends_->fetch_add(1);
    return inner_->Send(peer, tag, data);
  }
  absl::StatusOr<std::unique_ptr<devices::Request>> Recv(
      int peer, uint64_t tag, absl::Span<std::byte> data) override {
    return inner_->Recv(peer, tag, data);
  }
  absl::Status Abort(absl::Status reason) override {
    return inner_->Abort(std::move(reason));
  }

 private:
  std::unique_ptr<devices::Transport> inner_;
  std::atomic<int>* sends_;
};

// Two "processes" of two ranks each: ranks 0-1 and 2-3 have local groups,
// and all four share a remote group whose sends are counted.
class RoutedTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    devices::HostPlatformOptions options;
    options.num_devices = 4;
    platform_ = *devices::HostPlatform::Create(options);
    const std::vector<std::string> names = platform_->DeviceNames();
    auto remote = platform_->CreateTransportGroup(names);
    ASSERT_TRUE(remote.ok()) << remote.status();
    for (int block = 0; block < 2; ++block) {
      auto local = platform_->CreateTransportGroup(
          {names[2 * block], names[2 * block + 1]});
      ASSERT_TRUE(local.ok()) << local.status();
      for (int r = 0; r < 2; ++r) {
        const int rank = 2 * block + r;
        auto endpoint = RoutedTransport::Create(
            std::move((*local)[r]), 2 * block,
            std::make_unique<CountingTransport>(std::move((*remote)[rank]),
                                                &remote_sends_));
        ASSERT_TRUE(endpoint.ok()) << endpoint.status();
        endpoints_.push_back(*std::move(endpoint));
      }
    }
  }

  std::unique_ptr<devices::HostPlatform> platform_;
  std::atomic<int> remote_sends_{0};
  std::vector<std::unique_ptr<devices::Transport>> endpoints_;
};

TEST_F(RoutedTransportTest, LocalPeersTakeMemoryAndOthersTheRemoteGroup) {
  ASSERT_EQ(endpoints_.size(), 4u);
  EXPECT_EQ(endpoints_[3]->rank(), 3);
  EXPECT_EQ(endpoints_[3]->size(), 4);
  EXPECT_EQ(endpoints_[3]->device(0), platform_->DeviceNames()[0]);
  const std::vector<std::byte> a(64, std::byte{1}), b(64, std::byte{2});
  std::vector<std::byte> got_a(64), got_b(64);
  // Rank 0 to rank 1 (same block), then rank 0 to rank 2 (the other one).
  auto recv_a = endpoints_[1]->Recv(0, 5, absl::MakeSpan(got_a));
  auto recv_b = endpoints_[2]->Recv(0, 5, absl::MakeSpan(got_b));
  ASSERT_TRUE(recv_a.ok() && recv_b.ok());
  auto send_a = endpoints_[0]->Send(1, 5, absl::MakeConstSpan(a));
  ASSERT_TRUE(send_a.ok()) << send_a.status();
  EXPECT_EQ(remote_sends_.load(), 0);
  auto send_b = endpoints_[0]->Send(2, 5, absl::MakeConstSpan(b));
  ASSERT_TRUE(send_b.ok()) << send_b.status();
  EXPECT_EQ(remote_sends_.load(), 1);
  for (auto* request :
       {recv_a->get(), recv_b->get(), send_a->get(), send_b->get()}) {
    EXPECT_TRUE(request->Wait(kWait).ok());
  }
  EXPECT_EQ(got_a, a);
  EXPECT_EQ(got_b, b);
}

TEST_F(RoutedTransportTest, AbortFailsLocalAndRemotePeers) {
  std::vector<std::byte> buffer_1(8), buffer_2(8);
  auto local_wait = endpoints_[1]->Recv(0, 1, absl::MakeSpan(buffer_1));
  auto remote_wait = endpoints_[2]->Recv(0, 1, absl::MakeSpan(buffer_2));
  ASSERT_TRUE(local_wait.ok() && remote_wait.ok());
  ASSERT_TRUE(
      endpoints_[0]->Abort(absl::UnavailableError("rank 0 failed")).ok());
  for (auto* request : {local_wait->get(), remote_wait->get()}) {
    absl::Status status = request->Wait(kWait);
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << status;
    EXPECT_TRUE(absl::StrContains(status.message(), "rank 0 failed")) << status;
  }
  EXPECT_EQ(endpoints_[0]->Abort(absl::OkStatus()).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RoutedTransportCreateTest, MismatchedEndpointsAreInvalidArgument) {
  devices::HostPlatformOptions options;
  options.num_devices = 4;
  auto platform = *devices::HostPlatform::Create(options);
  const std::vector<std::string> names = platform->DeviceNames();
  auto group = [&](std::vector<std::string> devices) {
    return *platform->CreateTransportGroup(devices);
  };
  // Local rank 1 of the block from 2 is global rank 3, not 1.
  auto remote = group(names);
  auto local = group({names[2], names[3]});
  auto wrong =
      RoutedTransport::Create(std::move(local[1]), 2, std::move(remote[1]));
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(wrong.status().message(), "global rank 3"))
      << wrong.status();
  // A block that runs past the group.
  auto small = group({names[0], names[1]});
  auto block = group({names[0], names[1], names[2]});
  auto overflow =
      RoutedTransport::Create(std::move(block[0]), 1, std::move(small[1]));
  EXPECT_EQ(overflow.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      RoutedTransport::Create(nullptr, 0, std::move(small[0])).status().code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace collective
}  // namespace distribute
