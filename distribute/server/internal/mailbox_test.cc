#include "distribute/server/internal/mailbox.h"

#include <cstddef>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "devices/status_macros.h"
#include "gtest/gtest.h"

namespace distribute {
namespace server_internal {
namespace {

server::MessageHeader Header(int src, uint64_t tag, int64_t total) {
  server::MessageHeader header;
  header.set_group_key("g");
  header.set_src_rank(src);
  header.set_dst_rank(0);
  header.set_tag(tag);
  header.set_total_bytes(total);
  header.set_src_task("/job:worker/task:1");
  return header;
}

absl::Span<std::byte> Span(std::string& s) {
  return absl::MakeSpan(reinterpret_cast<std::byte*>(&s[0]), s.size());
}

// Delivers `data` as one message in chunks of `pack` bytes.
absl::Status DeliverAll(GroupMailbox& box, int src, uint64_t tag,
                        const std::string& data, size_t pack) {
  ASSIGN_OR_RETURN(auto message,
                   box.BeginMessage(Header(src, tag, data.size())));
  absl::Status status;
  size_t offset = 0;
  do {
    const size_t n = std::min(pack, data.size() - offset);
    status = box.AddChunk(*message, offset,
                          absl::string_view(data).substr(offset, n));
    offset += n;
  } while (status.ok() && offset < data.size());
  absl::Status ended = box.EndMessage(message, status);
  return status.ok() ? ended : status;
}

TEST(GroupMailboxTest, MessageBeforeReceiveIsStagedThenCopied) {
  GroupMailbox box("g", 0);
  ASSERT_TRUE(DeliverAll(box, 1, 7, "hello world", 3).ok());
  std::string out(11, '.');
  auto op = box.PostRecv(1, 7, Span(out));
  ASSERT_TRUE(op.ok());
  ASSERT_TRUE((*op)->completion.done());
  EXPECT_TRUE((*op)->completion.status().ok());
  EXPECT_EQ(out, "hello world");
}

TEST(GroupMailboxTest, ReceiveBeforeMessageGetsTheBytesDirectly) {
  GroupMailbox box("g", 0);
  std::string out(11, '.');
  auto op = box.PostRecv(1, 7, Span(out));
  ASSERT_TRUE(op.ok());
  EXPECT_FALSE((*op)->completion.done());
  ASSERT_TRUE(DeliverAll(box, 1, 7, "hello world", 4).ok());
  ASSERT_TRUE((*op)->completion.done());
  EXPECT_TRUE((*op)->completion.status().ok());
  EXPECT_EQ(out, "hello world");
}

TEST(GroupMailboxTest, ReceivePostedMidMessageTakesTheRest) {
  GroupMailbox box("g", 0);
  auto message = box.BeginMessage(Header(1, 3, 6));
  ASSERT_TRUE(message.ok());
  ASSERT_TRUE(box.AddChunk(**message, 0, "abc").ok());
  std::string out(6, '.');
  auto op = box.PostRecv(1, 3, Span(out));
  ASSERT_TRUE(op.ok());
  EXPECT_FALSE((*op)->completion.done());
  ASSERT_TRUE(box.AddChunk(**message, 3, "def").ok());
  EXPECT_TRUE(box.EndMessage(*message, absl::OkStatus()).ok());
  ASSERT_TRUE((*op)->completion.done());
  EXPECT_EQ(out, "abcdef");
}

// The size in a header is the sender's claim: a chunk of a message that
// claims a terabyte, with no receive posted, stages only its own bytes
// (it used to reserve the claimed size and throw).
TEST(GroupMailboxTest, AnAbsurdClaimedSizeStagesOnlyTheBytesSent) {
  GroupMailbox box("g", 0);
  auto message = box.BeginMessage(Header(1, 4, int64_t{1} << 40));
  ASSERT_TRUE(message.ok());
  ASSERT_TRUE(box.AddChunk(**message, 0, "abc").ok());
  // Cut short: withdrawn, and the same tag then serves a real message.
  EXPECT_EQ(box.EndMessage(*message, absl::UnavailableError("cut")).code(),
            absl::StatusCode::kUnavailable);
  ASSERT_TRUE(DeliverAll(box, 1, 4, "xyz", 3).ok());
  std::string out(3, '.');
  auto op = box.PostRecv(1, 4, Span(out));
  ASSERT_TRUE(op.ok());
  ASSERT_TRUE((*op)->completion.done());
  EXPECT_TRUE((*op)->completion.status().ok()) << (*op)->completion.status();
  EXPECT_EQ(out, "xyz");
}

TEST(GroupMailboxTest, SameTagMatchesInOrderAndTagsAreIndependent) {
  GroupMailbox box("g", 0);
  ASSERT_TRUE(DeliverAll(box, 1, 5, "first", 10).ok());
  ASSERT_TRUE(DeliverAll(box, 1, 5, "secnd", 10).ok());
  ASSERT_TRUE(DeliverAll(box, 1, 9, "other", 10).ok());
  ASSERT_TRUE(DeliverAll(box, 2, 5, "rank2", 10).ok());
  std::string a(5, '.'), b(5, '.'), c(5, '.'), d(5, '.');
  ASSERT_TRUE(box.PostRecv(1, 9, Span(c)).ok());
  ASSERT_TRUE(box.PostRecv(2, 5, Span(d)).ok());
  ASSERT_TRUE(box.PostRecv(1, 5, Span(a)).ok());
  ASSERT_TRUE(box.PostRecv(1, 5, Span(b)).ok());
  EXPECT_EQ(a, "first");
  EXPECT_EQ(b, "secnd");
  EXPECT_EQ(c, "other");
  EXPECT_EQ(d, "rank2");
}

TEST(GroupMailboxTest, SizeMismatchFailsBothSidesInEitherOrder) {
  GroupMailbox box("g", 0);
  std::string small(3, '.');
  auto posted = box.PostRecv(1, 1, Span(small));
  ASSERT_TRUE(posted.ok());
  absl::Status sent = DeliverAll(box, 1, 1, "toolong", 10);
  EXPECT_EQ(sent.code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE((*posted)->completion.done());
  EXPECT_EQ((*posted)->completion.status().code(),
            absl::StatusCode::kInvalidArgument);

  ASSERT_TRUE(DeliverAll(box, 1, 2, "toolong", 10).ok());
  auto late = box.PostRecv(1, 2, Span(small));
  ASSERT_TRUE(late.ok());
  ASSERT_TRUE((*late)->completion.done());
  EXPECT_EQ((*late)->completion.status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_NE((*late)->completion.status().message().find("7 bytes"),
            std::string::npos);
}

TEST(GroupMailboxTest, BrokenMessageFailsItsReceiveOrIsWithdrawn) {
  GroupMailbox box("g", 0);
  std::string out(6, '.');
  auto op = box.PostRecv(1, 1, Span(out));
  auto message = box.BeginMessage(Header(1, 1, 6));
  ASSERT_TRUE(message.ok());
  ASSERT_TRUE(box.AddChunk(**message, 0, "abc").ok());
  EXPECT_EQ(box.EndMessage(*message, absl::OkStatus()).code(),
            absl::StatusCode::kUnavailable);
  ASSERT_TRUE((*op)->completion.done());
  EXPECT_EQ((*op)->completion.status().code(), absl::StatusCode::kUnavailable);

  // Unreceived: withdrawn, so the next message with the tag is the one.
  auto broken = box.BeginMessage(Header(1, 2, 6));
  ASSERT_TRUE(box.AddChunk(**broken, 0, "xyz").ok());
  EXPECT_EQ(
      box.EndMessage(*broken, absl::CancelledError("sender cancelled")).code(),
      absl::StatusCode::kUnavailable);
  ASSERT_TRUE(DeliverAll(box, 1, 2, "ghijkl", 6).ok());
  auto next = box.PostRecv(1, 2, Span(out));
  ASSERT_TRUE((*next)->completion.done());
  EXPECT_TRUE((*next)->completion.status().ok());
  EXPECT_EQ(out, "ghijkl");
}

TEST(GroupMailboxTest, OutOfOrderChunkIsRefused) {
  GroupMailbox box("g", 0);
  auto message = box.BeginMessage(Header(1, 1, 6));
  EXPECT_EQ(box.AddChunk(**message, 3, "abc").code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(box.AddChunk(**message, 0, "abcdefg").code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(GroupMailboxTest, CancelledReceiveIsWithdrawnAndUntouched) {
  GroupMailbox box("g", 0);
  std::string first(3, '.');
  auto op = box.PostRecv(1, 1, Span(first));
  box.CancelRecv(*op);
  EXPECT_EQ((*op)->completion.status().code(), absl::StatusCode::kCancelled);
  std::string second(3, '.');
  auto op2 = box.PostRecv(1, 1, Span(second));
  ASSERT_TRUE(DeliverAll(box, 1, 1, "abc", 3).ok());
  EXPECT_EQ(first, "...");
  EXPECT_EQ(second, "abc");

  // Cancelled mid-message: the rest of the message is dropped.
  std::string third(6, '.');
  auto op3 = box.PostRecv(1, 2, Span(third));
  auto message = box.BeginMessage(Header(1, 2, 6));
  ASSERT_TRUE(box.AddChunk(**message, 0, "abc").ok());
  box.CancelRecv(*op3);
  ASSERT_TRUE(box.AddChunk(**message, 3, "def").ok());
  EXPECT_EQ(third, "abc...");
}

TEST(GroupMailboxTest, AbortFailsPendingAndLaterOperations) {
  GroupMailbox box("g", 0);
  absl::Status heard;
  box.SetAbortListener([&](const absl::Status& s) { heard = s; });
  std::string a(3, '.'), b(6, '.');
  auto waiting = box.PostRecv(1, 1, Span(a));
  auto arriving = box.PostRecv(1, 2, Span(b));
  auto message = box.BeginMessage(Header(1, 2, 6));
  ASSERT_TRUE(box.AddChunk(**message, 0, "abc").ok());
  EXPECT_TRUE(box.Abort(absl::UnavailableError("peer died")));
  EXPECT_FALSE(box.Abort(absl::UnavailableError("second")));
  EXPECT_EQ((*waiting)->completion.status(),
            absl::UnavailableError("peer died"));
  EXPECT_EQ((*arriving)->completion.status(),
            absl::UnavailableError("peer died"));
  EXPECT_EQ(heard, absl::UnavailableError("peer died"));
  EXPECT_EQ(box.AddChunk(**message, 3, "def").code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(b, "abc...");
  EXPECT_EQ(box.PostRecv(1, 3, Span(a)).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_EQ(box.BeginMessage(Header(1, 3, 3)).status().code(),
            absl::StatusCode::kUnavailable);
  box.SetAbortListener(nullptr);
}

TEST(GroupMailboxTest, ConcurrentSendersAndReceivers) {
  GroupMailbox box("g", 0);
  constexpr int kMessages = 200;
  std::vector<std::string> out(kMessages, std::string(8, '.'));
  std::vector<std::shared_ptr<RecvOp>> ops(kMessages);
  std::thread receiver([&] {
    for (int i = 0; i < kMessages; ++i)
      ops[i] = *box.PostRecv(1, i % 7, Span(out[i]));
  });
  std::thread sender([&] {
    for (int i = 0; i < kMessages; ++i) {
      ASSERT_TRUE(
          DeliverAll(box, 1, i % 7, absl::StrFormat("%08d", i), 3).ok());
    }
  });
  sender.join();
  receiver.join();
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_TRUE(ops[i]->completion.WaitFor(absl::Seconds(5)));
    EXPECT_EQ(out[i], absl::StrFormat("%08d", i));
  }
}

TEST(MailboxRegistryTest, RegistersOnceAndRefusesAfterUnregister) {
  MailboxRegistry registry;
  auto incoming = registry.ForIncoming("g", 0);
  ASSERT_TRUE(incoming.ok());
  auto mine = registry.Register("g", 0, {"a:1", "b:2"});
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(mine->get(), incoming->get());  // Adopts early arrivals.
  EXPECT_EQ(registry.Register("g", 0, {}).status().code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(registry.AbortInvolving("c:3", absl::UnavailableError("x")), 0);
  EXPECT_EQ(registry.AbortInvolving("b:2", absl::UnavailableError("b died")),
            1);
  EXPECT_EQ((*mine)->status(), absl::UnavailableError("b died"));
  EXPECT_FALSE((*mine)->relay_abort());
  EXPECT_FALSE(registry.GroupStatus("g").ok());
  registry.Unregister(**mine);
  EXPECT_EQ(registry.ForIncoming("g", 0).status().code(),
            absl::StatusCode::kUnavailable);
  EXPECT_TRUE(registry.GroupStatus("g").ok());  // Its endpoint is gone.
  auto again = registry.Register("g", 0, {});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)->status().ok());
  registry.Shutdown(absl::UnavailableError("stopped"));
  EXPECT_EQ((*again)->status(), absl::UnavailableError("stopped"));
  EXPECT_EQ(registry.Register("h", 0, {}).status().code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(registry.ForIncoming("h", 0).status().code(),
            absl::StatusCode::kUnavailable);
}

// Two views of one group: the registered endpoints that disagree with a
// caller are aborted and the caller is told both layouts; endpoints of
// other groups, or without a layout, and callers that agree pass.
TEST(MailboxRegistryTest, CheckLayoutAbortsEndpointsOfAnotherLayout) {
  MailboxRegistry registry;
  const std::vector<std::string> two = {"/job:worker/task:0",
                                        "/job:worker/task:1"};
  const std::vector<std::string> four = {
      "/job:worker/task:0", "/job:worker/task:0", "/job:worker/task:1",
      "/job:worker/task:1"};
  auto rank0 = registry.Register("g", 0, {"a:1", "b:2"}, four);
  auto rank1 = registry.Register("g", 1, {"a:1", "b:2"}, four);
  auto other = registry.Register("h", 0, {"a:1", "b:2"}, two);
  auto unchecked = registry.Register("g2", 0, {"a:1"});
  ASSERT_TRUE(rank0.ok() && rank1.ok() && other.ok() && unchecked.ok());
  EXPECT_TRUE(registry.CheckLayout("g", four, "rank 3 (b)", "a").ok());
  EXPECT_TRUE(registry.CheckLayout("g2", two, "rank 1 (b)", "a").ok());
  EXPECT_TRUE(registry.CheckLayout("absent", two, "rank 1 (b)", "a").ok());

  absl::Status refused = registry.CheckLayout(
      "g", two, "rank 1 (/job:worker/task:1)", "/job:worker/task:0");
  EXPECT_EQ(refused.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(
      refused.message().find("rank 1 (/job:worker/task:1) sees 2 ranks (1 on "
                             "/job:worker/task:0, 1 on /job:worker/task:1)"),
      std::string::npos)
      << refused;
  EXPECT_NE(
      refused.message().find("rank 0 (/job:worker/task:0) sees 4 ranks (2 on "
                             "/job:worker/task:0, 2 on /job:worker/task:1)"),
      std::string::npos)
      << refused;
  EXPECT_EQ((*rank0)->status(), refused);
  EXPECT_EQ((*rank1)->status(), refused);
  EXPECT_TRUE((*rank0)->relay_abort());  // Its peers may never ask here.
  EXPECT_TRUE((*other)->status().ok());
  EXPECT_TRUE((*unchecked)->status().ok());

  EXPECT_EQ(registry.GroupStatus("g"), refused);
  EXPECT_TRUE(registry.GroupStatus("h").ok());
  // Those who agree with the aborted endpoints hear the refusal; for
  // another abort, ABORTED with its status.
  EXPECT_EQ(registry.CheckLayout("g", four, "rank 3 (b)", "a"), refused);
  (*other)->Abort(absl::UnavailableError("task 1 died"));
  absl::Status over = registry.CheckLayout("h", two, "rank 1 (b)", "a");
  EXPECT_EQ(over.code(), absl::StatusCode::kAborted);
  EXPECT_NE(over.message().find("task 1 died"), std::string::npos) << over;

  // A destroyed endpoint's layout no longer counts.
  registry.Unregister(**other);
  EXPECT_TRUE(registry.CheckLayout("h", four, "rank 0 (a)", "a").ok());
}

// A notice for a rank that has no endpoint here leaves an aborted mailbox
// behind: it fails the group's rendezvous here, until no endpoint of the
// group is left and it is dropped (a later group of the key starts clean).
TEST(MailboxRegistryTest, AbortedStraysFailTheGroupUntilItIsGone) {
  MailboxRegistry registry;
  auto stray = registry.ForIncoming("g", 3);
  auto waiting = registry.ForIncoming("g", 4);  // Staged, not aborted.
  ASSERT_TRUE(stray.ok() && waiting.ok());
  (*stray)->Abort(absl::UnavailableError("notice"));
  EXPECT_EQ(registry.GroupStatus("g"), absl::UnavailableError("notice"));
  EXPECT_TRUE(registry.GroupStatus("other").ok());

  auto live = registry.Register("g", 1, {"a:1"}, {"/job:worker/task:0"});
  ASSERT_TRUE(live.ok());
  registry.DropAbortedStrays("g");  // An endpoint is left: kept.
  EXPECT_FALSE(registry.GroupStatus("g").ok());
  registry.Unregister(**live);  // The last one: dropped.
  EXPECT_TRUE(registry.GroupStatus("g").ok());
  auto again = registry.Register("g", 3, {"a:1"});
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE((*again)->status().ok());
  auto kept = registry.Register("g", 4, {"a:1"});
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(kept->get(), waiting->get());  // Early arrivals survive.
}

}  // namespace
}  // namespace server_internal
}  // namespace distribute
