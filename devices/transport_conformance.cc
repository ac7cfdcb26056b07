#include "devices/transport_conformance.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace devices {
namespace conformance {
namespace {

// Long enough for anything that must complete, on a loaded machine.
constexpr absl::Duration kLong = absl::Seconds(30);

std::vector<std::byte> Bytes(size_t n, int seed) {
  std::vector<std::byte> bytes(n);
  for (size_t i = 0; i < n; ++i) {
    bytes[i] =
        static_cast<std::byte>((i * 31 + static_cast<size_t>(seed) * 7) & 0xff);
  }
  return bytes;
}

std::unique_ptr<Request> Posted(
    absl::StatusOr<std::unique_ptr<Request>> request) {
  EXPECT_TRUE(request.ok()) << request.status();
  return request.ok() ? *std::move(request) : nullptr;
}

bool Mentions(const absl::Status& status, absl::string_view text) {
  return status.message().find(text) != absl::string_view::npos;
}

}  // namespace

// Linked into tests that instantiate it, and into others that share their
// dependencies.
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(TransportConformanceTest);

void PrintTo(const TransportBackend& backend, std::ostream* os) {
  *os << backend.name;
}

std::string BackendName(
    const ::testing::TestParamInfo<TransportBackend>& info) {
  return info.param.name;
}

void TransportConformanceTest::SetUp() {
  absl::StatusOr<TransportGroup> group = GetParam().make(kGroupSize);
  if (!group.ok() && (absl::IsFailedPrecondition(group.status()) ||
                      absl::IsUnavailable(group.status()))) {
    GTEST_SKIP() << GetParam().name
                 << " cannot run here: " << group.status().message();
  }
  ASSERT_TRUE(group.ok()) << group.status();
  ASSERT_EQ(group->endpoints.size(), static_cast<size_t>(kGroupSize));
  group_ = *std::move(group);
}

void TransportConformanceTest::TearDown() {
  group_.endpoints.clear();
  group_.owner.reset();
}

TEST_P(TransportConformanceTest, DescribesTheGroup) {
  for (int r = 0; r < kGroupSize; ++r) {
    EXPECT_EQ(rank(r).rank(), r);
    EXPECT_EQ(rank(r).size(), kGroupSize);
    EXPECT_FALSE(rank(0).device(r).empty()) << r;
    EXPECT_EQ(rank(r).device(r), rank(0).device(r)) << r;
    for (int o = 0; o < r; ++o) EXPECT_NE(rank(0).device(r), rank(0).device(o));
  }
  EXPECT_EQ(rank(0).device(kGroupSize), "");
  EXPECT_EQ(rank(0).device(-1), "");
}

// A message arrives whole whichever side posts first, from 0 bytes to
// 1 MiB, and both requests complete OK.
TEST_P(TransportConformanceTest, DeliversInEitherPostingOrder) {
  uint64_t tag = 1;
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{4096}, size_t{1} << 20}) {
    for (bool send_first : {true, false}) {
      const std::vector<std::byte> message =
          Bytes(bytes, static_cast<int>(tag));
      std::vector<std::byte> received(bytes);
      std::unique_ptr<Request> send, recv;
      if (send_first) send = Posted(rank(0).Send(1, tag, message));
      recv = Posted(rank(1).Recv(0, tag, absl::MakeSpan(received)));
      if (!send_first) send = Posted(rank(0).Send(1, tag, message));
      ASSERT_NE(send, nullptr);
      ASSERT_NE(recv, nullptr);
      EXPECT_TRUE(recv->Wait(kLong).ok()) << bytes;
      EXPECT_TRUE(send->Wait(kLong).ok()) << bytes;
      EXPECT_TRUE(recv->IsComplete());
      EXPECT_TRUE(send->IsComplete());
      EXPECT_EQ(received, message)
          << bytes << " bytes, send first " << send_first;
      ++tag;
    }
  }
}

// Sender and receiver on threads of their own, as collectives run them.
TEST_P(TransportConformanceTest, DeliversAcrossThreads) {
  const std::vector<std::byte> message = Bytes(64 << 10, 3);
  std::vector<std::byte> received(message.size());
  std::thread sender([&] {
    std::unique_ptr<Request> send = Posted(rank(0).Send(1, 7, message));
    ASSERT_NE(send, nullptr);
    EXPECT_TRUE(send->Wait(kLong).ok());
  });
  std::thread receiver([&] {
    std::unique_ptr<Request> recv =
        Posted(rank(1).Recv(0, 7, absl::MakeSpan(received)));
    ASSERT_NE(recv, nullptr);
    EXPECT_TRUE(recv->Wait(kLong).ok());
  });
  sender.join();
  receiver.join();
  EXPECT_EQ(received, message);
}

// Messages of one (sender, receiver, tag) match receives in posting order;
// other tags are independent of them.
TEST_P(TransportConformanceTest, TagsAreIndependentAndOrderedWithinATag) {
  const std::vector<std::byte> a = Bytes(16, 1), b = Bytes(16, 2),
                               c = Bytes(16, 3);
  std::vector<std::byte> got_c(16), got_a(16), got_b(16);
  std::unique_ptr<Request> recv_c =
      Posted(rank(1).Recv(0, 2, absl::MakeSpan(got_c)));
  std::unique_ptr<Request> recv_a =
      Posted(rank(1).Recv(0, 1, absl::MakeSpan(got_a)));
  std::unique_ptr<Request> recv_b =
      Posted(rank(1).Recv(0, 1, absl::MakeSpan(got_b)));
  std::unique_ptr<Request> send_a = Posted(rank(0).Send(1, 1, a));
  std::unique_ptr<Request> send_b = Posted(rank(0).Send(1, 1, b));
  std::unique_ptr<Request> send_c = Posted(rank(0).Send(1, 2, c));
  for (Request* r : {recv_a.get(), recv_b.get(), recv_c.get(), send_a.get(),
                     send_b.get(), send_c.get()}) {
    ASSERT_NE(r, nullptr);
    EXPECT_TRUE(r->Wait(kLong).ok());
  }
  EXPECT_EQ(got_a, a);
  EXPECT_EQ(got_b, b);
  EXPECT_EQ(got_c, c);
}

// The same tag between other pairs, or the other way, is another channel;
// a rank may send to itself.
TEST_P(TransportConformanceTest, PairsDirectionsAndSelfAreSeparate) {
  const std::vector<std::byte> zero_to_one = Bytes(32, 1),
                               one_to_zero = Bytes(32, 2),
                               two_to_one = Bytes(32, 3), self = Bytes(32, 4);
  std::vector<std::byte> at_one_from_zero(32), at_zero(32), at_one_from_two(32),
      at_self(32);
  std::vector<std::unique_ptr<Request>> requests;
  requests.push_back(
      Posted(rank(1).Recv(2, 5, absl::MakeSpan(at_one_from_two))));
  requests.push_back(
      Posted(rank(1).Recv(0, 5, absl::MakeSpan(at_one_from_zero))));
  requests.push_back(Posted(rank(0).Recv(1, 5, absl::MakeSpan(at_zero))));
  requests.push_back(Posted(rank(0).Recv(0, 5, absl::MakeSpan(at_self))));
  requests.push_back(Posted(rank(0).Send(1, 5, zero_to_one)));
  requests.push_back(Posted(rank(1).Send(0, 5, one_to_zero)));
  requests.push_back(Posted(rank(2).Send(1, 5, two_to_one)));
  requests.push_back(Posted(rank(0).Send(0, 5, self)));
  for (const auto& r : requests) {
    ASSERT_NE(r, nullptr);
    EXPECT_TRUE(r->Wait(kLong).ok());
  }
  EXPECT_EQ(at_one_from_zero, zero_to_one);
  EXPECT_EQ(at_zero, one_to_zero);
  EXPECT_EQ(at_one_from_two, two_to_one);
  EXPECT_EQ(at_self, self);
}

TEST_P(TransportConformanceTest, SizeMismatchFailsBothSides) {
  const std::vector<std::byte> message = Bytes(16, 1);
  std::vector<std::byte> buffer(32);
  std::unique_ptr<Request> recv =
      Posted(rank(1).Recv(0, 3, absl::MakeSpan(buffer)));
  std::unique_ptr<Request> send = Posted(rank(0).Send(1, 3, message));
  ASSERT_NE(recv, nullptr);
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(recv->Wait(kLong).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(send->Wait(kLong).code(), absl::StatusCode::kInvalidArgument);
  // The pair is consumed: the next message of the tag goes to the next
  // receive.
  std::vector<std::byte> next(16);
  std::unique_ptr<Request> recv2 =
      Posted(rank(1).Recv(0, 3, absl::MakeSpan(next)));
  std::unique_ptr<Request> send2 = Posted(rank(0).Send(1, 3, message));
  ASSERT_NE(recv2, nullptr);
  ASSERT_NE(send2, nullptr);
  EXPECT_TRUE(recv2->Wait(kLong).ok());
  EXPECT_TRUE(send2->Wait(kLong).ok());
  EXPECT_EQ(next, message);
}

// A wait that runs out says DEADLINE_EXCEEDED and leaves the request
// posted: a late message still completes it.
TEST_P(TransportConformanceTest, WaitTimesOutAndTheRequestStaysPosted) {
  std::vector<std::byte> buffer(32);
  std::unique_ptr<Request> recv =
      Posted(rank(1).Recv(0, 42, absl::MakeSpan(buffer)));
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(recv->Wait(absl::Milliseconds(20)).code(),
            absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(recv->IsComplete());
  const std::vector<std::byte> late = Bytes(32, 9);
  std::unique_ptr<Request> send = Posted(rank(0).Send(1, 42, late));
  ASSERT_NE(send, nullptr);
  EXPECT_TRUE(recv->Wait(kLong).ok());
  EXPECT_TRUE(send->Wait(kLong).ok());
  EXPECT_EQ(buffer, late);
}

TEST_P(TransportConformanceTest, PeerOutsideTheGroupIsInvalidArgument) {
  std::vector<std::byte> buffer(4);
  EXPECT_EQ(rank(0).Send(kGroupSize, 0, buffer).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(rank(0).Send(-1, 0, buffer).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      rank(1).Recv(kGroupSize + 2, 0, absl::MakeSpan(buffer)).status().code(),
      absl::StatusCode::kInvalidArgument);
}

// A receive destroyed before its message came is withdrawn: the message
// goes to the next receive, and the destroyed one's buffer is never
// written.
TEST_P(TransportConformanceTest, DestroyedReceiveIsWithdrawn) {
  std::vector<std::byte> doomed(8, std::byte{0});
  {
    std::unique_ptr<Request> recv =
        Posted(rank(1).Recv(0, 1, absl::MakeSpan(doomed)));
    ASSERT_NE(recv, nullptr);
    EXPECT_EQ(recv->Wait(absl::Milliseconds(1)).code(),
              absl::StatusCode::kDeadlineExceeded);
  }
  const std::vector<std::byte> message = Bytes(8, 6);
  std::vector<std::byte> out(8);
  std::unique_ptr<Request> send = Posted(rank(0).Send(1, 1, message));
  std::unique_ptr<Request> recv =
      Posted(rank(1).Recv(0, 1, absl::MakeSpan(out)));
  ASSERT_NE(send, nullptr);
  ASSERT_NE(recv, nullptr);
  EXPECT_TRUE(recv->Wait(kLong).ok());
  EXPECT_TRUE(send->Wait(kLong).ok());
  EXPECT_EQ(out, message);
  EXPECT_EQ(doomed, std::vector<std::byte>(8, std::byte{0}));
}

// One rank's abort fails every rank's pending requests and later posts
// with UNAVAILABLE carrying its reason; an abort needs a reason, and an
// endpoint that knows of one keeps it.
TEST_P(TransportConformanceTest, AbortFailsPendingAndLaterRequests) {
  std::vector<std::byte> at_zero(8), at_one(8);
  std::unique_ptr<Request> pending0 =
      Posted(rank(0).Recv(1, 1, absl::MakeSpan(at_zero)));
  std::unique_ptr<Request> pending1 =
      Posted(rank(1).Recv(0, 1, absl::MakeSpan(at_one)));
  ASSERT_NE(pending0, nullptr);
  ASSERT_NE(pending1, nullptr);
  EXPECT_EQ(rank(0).Abort(absl::OkStatus()).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(rank(2).Abort(absl::InternalError("rank 2 lost its GPU")).ok());
  const absl::Status failed0 = pending0->Wait(kLong);
  EXPECT_EQ(failed0.code(), absl::StatusCode::kUnavailable) << failed0;
  EXPECT_TRUE(Mentions(failed0, "rank 2 lost its GPU")) << failed0;
  EXPECT_TRUE(pending0->IsComplete());
  // Rank 0 knows of the abort now: another reason changes nothing.
  EXPECT_TRUE(rank(0).Abort(absl::CancelledError("a second reason")).ok());
  const absl::Status failed1 = pending1->Wait(kLong);
  EXPECT_EQ(failed1.code(), absl::StatusCode::kUnavailable) << failed1;
  EXPECT_TRUE(Mentions(failed1, "rank 2 lost its GPU")) << failed1;
  // Every rank refuses new requests once it knows.
  for (int r : {2, 1, 0}) {
    absl::StatusOr<std::unique_ptr<Request>> later =
        rank(r).Send((r + 1) % kGroupSize, 2, at_zero);
    absl::Status status = later.status();
    if (later.ok()) status = (*later)->Wait(kLong);
    EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable) << r << status;
    EXPECT_TRUE(Mentions(status, "lost its GPU")) << r << status;
  }
}

// An abort for a timeout reports the timeout on every rank.
TEST_P(TransportConformanceTest, AbortForATimeoutIsDeadlineExceeded) {
  std::vector<std::byte> buffer(8);
  std::unique_ptr<Request> recv =
      Posted(rank(1).Recv(0, 1, absl::MakeSpan(buffer)));
  ASSERT_NE(recv, nullptr);
  EXPECT_TRUE(
      rank(0).Abort(absl::DeadlineExceededError("step 3 timed out")).ok());
  const absl::Status status = recv->Wait(kLong);
  EXPECT_EQ(status.code(), absl::StatusCode::kDeadlineExceeded) << status;
  EXPECT_TRUE(Mentions(status, "step 3 timed out")) << status;
}

}  // namespace conformance
}  // namespace devices
