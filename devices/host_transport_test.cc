#include "devices/host_transport.h"

#include <cstddef>
#include <cstring>
#include <numeric>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "devices/status_macros.h"
#include "devices/transport_conformance.h"
#include "gtest/gtest.h"

namespace devices {
namespace {

// What every transport must do is checked by the conformance suite,
// instantiated at the end of this file; the cases here are the host
// transport's own (matching while posting, its messages, spinning).

constexpr absl::Duration kLong = absl::Seconds(30);

std::vector<std::string> Names(int n) {
  std::vector<std::string> names;
  for (int i = 0; i < n; ++i) {
    names.push_back(
        absl::StrCat("/job:localhost/replica:0/task:0/device:CPU:", i));
  }
  return names;
}

std::vector<std::unique_ptr<Transport>> Group(
    int n, HostTransportOptions options = {}) {
  auto group = CreateHostTransportGroup(Names(n), options);
  EXPECT_TRUE(group.ok()) << group.status();
  return std::move(*group);
}

std::vector<std::byte> Bytes(size_t n, int seed) {
  std::vector<std::byte> bytes(n);
  for (size_t i = 0; i < n; ++i) {
    bytes[i] =
        static_cast<std::byte>((i * 31 + static_cast<size_t>(seed)) & 0xff);
  }
  return bytes;
}

std::unique_ptr<Request> Post(
    absl::StatusOr<std::unique_ptr<Request>> request) {
  EXPECT_TRUE(request.ok()) << request.status();
  return request.ok() ? std::move(*request) : nullptr;
}

TEST(HostTransportTest, GroupShape) {
  auto group = Group(3);
  ASSERT_EQ(group.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(group[r]->rank(), r);
    EXPECT_EQ(group[r]->size(), 3);
    EXPECT_EQ(group[r]->device(r), Names(3)[r]);
  }
  EXPECT_EQ(group[0]->device(3), "");
  EXPECT_EQ(group[0]->device(-1), "");
  EXPECT_EQ(CreateHostTransportGroup({}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HostTransportTest, BothPostingOrdersDeliver) {
  auto group = Group(2);
  const std::vector<std::byte> message = Bytes(100, 2);
  // Send posted first: the Recv copies.
  {
    std::vector<std::byte> out(100);
    auto send = Post(group[0]->Send(1, 1, message));
    EXPECT_FALSE(send->IsComplete());
    auto recv = Post(group[1]->Recv(0, 1, absl::MakeSpan(out)));
    EXPECT_TRUE(recv->IsComplete());  // Matched and copied while posting.
    EXPECT_TRUE(send->Wait(kLong).ok());
    EXPECT_TRUE(recv->Wait(kLong).ok());
    EXPECT_EQ(out, message);
  }
  // Recv posted first: the Send copies.
  {
    std::vector<std::byte> out(100);
    auto recv = Post(group[1]->Recv(0, 1, absl::MakeSpan(out)));
    EXPECT_FALSE(recv->IsComplete());
    auto send = Post(group[0]->Send(1, 1, message));
    EXPECT_TRUE(send->IsComplete());
    EXPECT_TRUE(recv->Wait(kLong).ok());
    EXPECT_EQ(out, message);
  }
}

TEST(HostTransportTest, TagsAreIndependentAndOrderedWithinATag) {
  auto group = Group(2);
  std::vector<std::vector<std::byte>> messages;
  for (int i = 0; i < 6; ++i) messages.push_back(Bytes(64, 10 + i));
  // Tags 1, 2, 3 sent twice each, in order 1 2 3 1 2 3.
  std::vector<std::unique_ptr<Request>> sends;
  for (int i = 0; i < 6; ++i) {
    sends.push_back(Post(group[0]->Send(1, 1 + i % 3, messages[i])));
  }
  // Received in the opposite tag order: each tag's messages still come in
  // the order they were sent.
  std::vector<std::vector<std::byte>> out(6, std::vector<std::byte>(64));
  std::vector<std::unique_ptr<Request>> recvs;
  const int order[] = {2, 5, 1, 4, 0, 3};  // Message indices: tag 3, 2, 1.
  for (int i : order) {
    recvs.push_back(Post(group[1]->Recv(0, 1 + i % 3, absl::MakeSpan(out[i]))));
  }
  for (auto& r : recvs) EXPECT_TRUE(r->Wait(kLong).ok());
  for (auto& s : sends) EXPECT_TRUE(s->Wait(kLong).ok());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(out[i], messages[i]) << i;
}

TEST(HostTransportTest, SelfSendAndEmptyMessages) {
  auto group = Group(1);
  const auto message = Bytes(16, 3);
  std::vector<std::byte> out(16);
  auto send = Post(group[0]->Send(0, 9, message));
  auto recv = Post(group[0]->Recv(0, 9, absl::MakeSpan(out)));
  EXPECT_TRUE(recv->Wait(kLong).ok());
  EXPECT_TRUE(send->Wait(kLong).ok());
  EXPECT_EQ(out, message);
  auto empty_send = Post(group[0]->Send(0, 10, {}));
  auto empty_recv = Post(group[0]->Recv(0, 10, {}));
  EXPECT_TRUE(empty_recv->Wait(kLong).ok());
  EXPECT_TRUE(empty_send->Wait(kLong).ok());
}

TEST(HostTransportTest, SizeMismatchFailsBothSides) {
  auto group = Group(2);
  const auto message = Bytes(100, 4);
  std::vector<std::byte> out(64, std::byte{0x5a});
  auto send = Post(group[0]->Send(1, 3, message));
  auto recv = Post(group[1]->Recv(0, 3, absl::MakeSpan(out)));
  absl::Status recv_status = recv->Wait(kLong);
  EXPECT_EQ(recv_status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(recv_status.message().find("100"), absl::string_view::npos);
  EXPECT_NE(recv_status.message().find("64"), absl::string_view::npos);
  EXPECT_EQ(send->Wait(kLong).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(out, std::vector<std::byte>(64, std::byte{0x5a}));  // Untouched.
  // The pair was consumed: the next message on the tag matches normally.
  std::vector<std::byte> next(100);
  auto send2 = Post(group[0]->Send(1, 3, message));
  auto recv2 = Post(group[1]->Recv(0, 3, absl::MakeSpan(next)));
  EXPECT_TRUE(recv2->Wait(kLong).ok());
  EXPECT_EQ(next, message);
}

TEST(HostTransportTest, WaitTimesOutWithoutHanging) {
  auto group = Group(2);
  std::vector<std::byte> out(32);
  auto recv = Post(group[1]->Recv(0, 42, absl::MakeSpan(out)));
  absl::Status status = recv->Wait(absl::Milliseconds(20));
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded);
  const absl::string_view message = status.message();
  EXPECT_NE(message.find("from rank 0 tag 42"), absl::string_view::npos)
      << message;
  EXPECT_NE(message.find("did not arrive within 0.02s"),
            absl::string_view::npos)
      << message;
  EXPECT_FALSE(recv->IsComplete());
  // The request stays posted: a late send still completes it.
  const auto payload = Bytes(32, 5);
  auto send = Post(group[0]->Send(1, 42, payload));
  EXPECT_TRUE(recv->Wait(kLong).ok());
  EXPECT_EQ(out, payload);

  auto lonely_send = Post(group[0]->Send(1, 43, payload));
  absl::Status send_status = lonely_send->Wait(absl::Milliseconds(10));
  EXPECT_EQ(send_status.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(send_status.message().find("to rank 1 tag 43"),
            absl::string_view::npos)
      << send_status.message();
}

TEST(HostTransportTest, AbortFailsPendingAndLaterRequests) {
  auto group = Group(3);
  std::vector<std::byte> out(8);
  const auto payload = Bytes(8, 0);
  auto recv = Post(group[1]->Recv(0, 1, absl::MakeSpan(out)));
  auto send = Post(group[2]->Send(0, 1, payload));
  std::thread waiter([&] {
    absl::Status status = recv->Wait(kLong);
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
    EXPECT_NE(status.message().find("rank 2 lost its GPU"),
              absl::string_view::npos)
        << status.message();
  });
  absl::SleepFor(absl::Milliseconds(5));
  EXPECT_EQ(group[0]->Abort(absl::OkStatus()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(group[2]->Abort(absl::InternalError("rank 2 lost its GPU")).ok());
  // A later abort changes nothing: the first reason wins.
  EXPECT_TRUE(group[0]->Abort(absl::CancelledError("second")).ok());
  waiter.join();
  absl::Status send_status = send->Wait(kLong);
  EXPECT_EQ(send_status.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(send_status.message().find("lost its GPU"),
            absl::string_view::npos);
  absl::StatusOr<std::unique_ptr<Request>> later = group[0]->Send(1, 2, out);
  EXPECT_EQ(later.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(later.status().message().find("lost its GPU"),
            absl::string_view::npos);
  EXPECT_EQ(group[1]->Recv(0, 2, absl::MakeSpan(out)).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST(HostTransportTest, AbortForATimeoutIsDeadlineExceededEverywhere) {
  auto group = Group(2);
  std::vector<std::byte> out(8);
  auto recv = Post(group[1]->Recv(0, 1, absl::MakeSpan(out)));
  EXPECT_TRUE(
      group[0]->Abort(absl::DeadlineExceededError("step 3 timed out")).ok());
  absl::Status status = recv->Wait(kLong);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_NE(status.message().find("step 3 timed out"), absl::string_view::npos)
      << status;
  EXPECT_EQ(group[1]->Recv(0, 2, absl::MakeSpan(out)).status().code(),
            absl::StatusCode::kDeadlineExceeded);
}

TEST(HostTransportTest, GonePeerFailsRequests) {
  auto group = Group(3);
  std::vector<std::byte> out(8);
  const auto to_gone = Bytes(8, 0);
  const auto to_one = Bytes(8, 1);
  auto recv_from_gone = Post(group[1]->Recv(0, 1, absl::MakeSpan(out)));
  auto send_to_gone = Post(group[2]->Send(0, 1, to_gone));
  auto unrelated = Post(group[2]->Send(1, 1, to_one));
  group[0].reset();
  absl::Status status = recv_from_gone->Wait(kLong);
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(status.message().find("rank 0"), absl::string_view::npos);
  EXPECT_EQ(send_to_gone->Wait(kLong).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(group[1]->Send(0, 1, out).status().code(),
            absl::StatusCode::kUnavailable);
  // Ranks 1 and 2 still talk to each other.
  auto recv = Post(group[1]->Recv(2, 1, absl::MakeSpan(out)));
  EXPECT_TRUE(recv->Wait(kLong).ok());
  EXPECT_TRUE(unrelated->Wait(kLong).ok());
  EXPECT_EQ(out, to_one);
}

TEST(HostTransportTest, RequestsMayOutliveTheirEndpoints) {
  const auto payload = Bytes(4, 0);
  std::unique_ptr<Request> send;
  {
    auto group = Group(2);
    send = Post(group[0]->Send(1, 1, payload));
  }
  EXPECT_EQ(send->Wait(kLong).code(), absl::StatusCode::kUnavailable);
}

// Every rank sends a message of its own size to every other rank on several
// tags at once, from its own thread; large messages included.
TEST(HostTransportTest, AllToAllStress) {
  for (absl::Duration spin : {absl::ZeroDuration(), kDefaultSpin}) {
    constexpr int kRanks = 4;
    constexpr int kTags = 8;
    HostTransportOptions options;
    options.spin = spin;
    auto group = Group(kRanks, options);
    auto size_of = [](int src, int dst, int tag) -> size_t {
      return static_cast<size_t>((src * 7 + dst * 3 + tag) % 5) * 1000 +
             (tag == 0 ? (1 << 20) : 0);
    };
    std::vector<std::thread> threads;
    for (int rank = 0; rank < kRanks; ++rank) {
      threads.emplace_back([&, rank] {
        std::vector<std::vector<std::byte>> outgoing, incoming;
        std::vector<std::unique_ptr<Request>> requests;
        std::vector<std::tuple<int, int>>
            expected;  // (peer, tag) per incoming.
        for (int tag = kTags - 1; tag >= 0; --tag) {
          for (int peer = 0; peer < kRanks; ++peer) {
            if (peer == rank) continue;
            incoming.emplace_back(size_of(peer, rank, tag));
            expected.emplace_back(peer, tag);
          }
        }
        for (int tag = 0; tag < kTags; ++tag) {
          for (int peer = 0; peer < kRanks; ++peer) {
            if (peer == rank) continue;
            outgoing.push_back(
                Bytes(size_of(rank, peer, tag), rank * 100 + tag));
          }
        }
        size_t in = 0, out = 0;
        for (int tag = 0; tag < kTags; ++tag) {
          for (int peer = 0; peer < kRanks; ++peer) {
            if (peer == rank) continue;
            requests.push_back(
                Post(group[rank]->Send(peer, tag, outgoing[out++])));
          }
        }
        for (auto& [peer, tag] : expected) {
          requests.push_back(
              Post(group[rank]->Recv(peer, static_cast<uint64_t>(tag),
                                     absl::MakeSpan(incoming[in++]))));
        }
        for (auto& request : requests) {
          ASSERT_NE(request, nullptr);
          const absl::Status status = request->Wait(kLong);
          EXPECT_TRUE(status.ok()) << status;
        }
        for (size_t i = 0; i < expected.size(); ++i) {
          const auto [peer, tag] = expected[i];
          EXPECT_EQ(incoming[i],
                    Bytes(size_of(peer, rank, tag), peer * 100 + tag))
              << "rank " << rank << " from " << peer << " tag " << tag;
        }
      });
    }
    for (auto& t : threads) t.join();
  }
}

// Many small ping-pongs: the latency path, and a check that no wakeup is
// lost between spinning and blocking.
TEST(HostTransportTest, PingPong) {
  auto group = Group(2);
  constexpr int kRounds = 2000;
  std::thread echo([&] {
    std::vector<std::byte> buffer(64);
    for (int i = 0; i < kRounds; ++i) {
      auto recv = Post(group[1]->Recv(0, 0, absl::MakeSpan(buffer)));
      ASSERT_TRUE(recv->Wait(kLong).ok());
      auto send = Post(group[1]->Send(0, 1, buffer));
      ASSERT_TRUE(send->Wait(kLong).ok());
    }
  });
  std::vector<std::byte> ball = Bytes(64, 0);
  std::vector<std::byte> back(64);
  for (int i = 0; i < kRounds; ++i) {
    ball[0] = static_cast<std::byte>(i & 0xff);
    auto recv = Post(group[0]->Recv(1, 1, absl::MakeSpan(back)));
    auto send = Post(group[0]->Send(1, 0, ball));
    ASSERT_TRUE(send->Wait(kLong).ok());
    ASSERT_TRUE(recv->Wait(kLong).ok());
    ASSERT_EQ(back, ball);
  }
  echo.join();
}

// A large message whose receiver is already waiting when the sender
// arrives: the sender may hand the copy over to the spinning receiver (on a
// machine with a CPU per rank). Every combination of who waits and for how
// long must deliver the bytes, or fail both sides alike.
TEST(HostTransportTest, LargeMessagesToAWaitingReceiver) {
  constexpr size_t kSize = size_t{1} << 20;
  HostTransportOptions options;
  options.spin = absl::Seconds(5);  // The receiver spins throughout.
  auto group = Group(2, options);
  for (int round = 0; round < 20; ++round) {
    const std::vector<std::byte> message = Bytes(kSize, round);
    std::vector<std::byte> received(kSize);
    absl::Status recv_status;
    std::thread receiver([&] {
      auto recv = Post(group[1]->Recv(0, round, absl::MakeSpan(received)));
      ASSERT_NE(recv, nullptr);
      recv_status = recv->Wait(kLong);
    });
    absl::SleepFor(absl::Milliseconds(round % 4));  // Often after the Recv.
    auto send = Post(group[0]->Send(1, round, message));
    ASSERT_NE(send, nullptr);
    EXPECT_TRUE(send->Wait(kLong).ok());
    receiver.join();
    EXPECT_TRUE(recv_status.ok()) << recv_status;
    EXPECT_EQ(received, message) << "round " << round;
  }
  // A size mismatch found by the receiver's copy fails both sides.
  std::vector<std::byte> small(kSize - 1);
  absl::Status recv_status;
  std::thread receiver([&] {
    auto recv = Post(group[1]->Recv(0, 99, absl::MakeSpan(small)));
    ASSERT_NE(recv, nullptr);
    recv_status = recv->Wait(kLong);
  });
  absl::SleepFor(absl::Milliseconds(2));
  const std::vector<std::byte> message = Bytes(kSize, 5);
  auto send = Post(group[0]->Send(1, 99, message));
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(send->Wait(kLong).code(), absl::StatusCode::kInvalidArgument);
  receiver.join();
  EXPECT_EQ(recv_status.code(), absl::StatusCode::kInvalidArgument);
}

// A receiver that stops waiting (timeout) and waits again later still gets
// a large message sent in between.
TEST(HostTransportTest, LargeMessageAfterTheReceiverTimedOut) {
  constexpr size_t kSize = size_t{1} << 20;
  HostTransportOptions options;
  options.spin = absl::Seconds(5);
  auto group = Group(2, options);
  const std::vector<std::byte> message = Bytes(kSize, 3);
  std::vector<std::byte> received(kSize);
  auto recv = Post(group[1]->Recv(0, 1, absl::MakeSpan(received)));
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(recv->Wait(absl::Milliseconds(5)).code(),
            absl::StatusCode::kDeadlineExceeded);
  auto send = Post(group[0]->Send(1, 1, message));
  ASSERT_NE(send, nullptr);
  EXPECT_TRUE(send->Wait(kLong).ok());  // Nobody waits: the sender copied.
  EXPECT_TRUE(recv->Wait(kLong).ok());
  EXPECT_EQ(received, message);
}

}  // namespace
}  // namespace devices

namespace devices {
namespace {

using conformance::TransportConformanceTest;

INSTANTIATE_TEST_SUITE_P(
    Host, TransportConformanceTest,
    ::testing::Values(conformance::TransportBackend{
        "host",
        [](int n) -> absl::StatusOr<conformance::TransportGroup> {
          ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Transport>> group,
                           CreateHostTransportGroup(Names(n)));
          conformance::TransportGroup out;
          out.endpoints = std::move(group);
          return out;
        }}),
    conformance::BackendName);

}  // namespace
}  // namespace devices
