#include "distribute/server/internal/mailbox.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/status_macros.h"

namespace distribute {
namespace server_internal {

absl::Status CheckMessageHeader(const server::MessageHeader& header) {
  if (header.group_key().empty() || header.src_rank() < 0 ||
      header.dst_rank() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad message header: group \"", header.group_key(),
                     "\" src ", header.src_rank(), " dst ", header.dst_rank()));
  }
  return absl::OkStatus();
}

namespace {

constexpr int64_t kMaxStagingReserve = int64_t{64} << 20;
// ReadChunk grows a staging buffer by at most this much per read.
constexpr size_t kMaxStagingStep = size_t{4} << 20;

std::string Describe(const Inbound& m) {
  return absl::StrCat(
      "the message from rank ", m.src,
      m.src_task.empty() ? "" : absl::StrCat(" (", m.src_task, ")"), " tag ",
      m.tag, " (", m.total, " bytes)");
}

absl::Status SizeMismatch(const Inbound& m, int dst, size_t recv_size) {
  return absl::InvalidArgumentError(absl::StrCat(
      "size mismatch for tag ", m.tag, " from rank ", m.src, " to rank ", dst,
      ": Send has ", m.total, " bytes but the matching Recv expects ",
      recv_size, " bytes; both sides must agree on the message size"));
}

// "4 ranks (2 on /job:worker/task:0, 2 on /job:worker/task:1)": the runs
// of consecutive ranks on one task.
std::string DescribeLayout(const std::vector<std::string>& layout) {
  std::vector<std::string> runs;
  for (size_t i = 0; i < layout.size();) {
    size_t end = i;
    while (end < layout.size() && layout[end] == layout[i]) ++end;
    runs.push_back(absl::StrCat(end - i, " on ", layout[i]));
    i = end;
  }
  return absl::StrCat(layout.size(), layout.size() == 1 ? " rank" : " ranks",
                      " (", absl::StrJoin(runs, ", "), ")");
}

}  // namespace

GroupMailbox::GroupMailbox(std::string group_key, int rank)
    : group_key_(std::move(group_key)), rank_(rank) {}

absl::Status GroupMailbox::status() const {
  absl::MutexLock lock(&mu_);
  return abort_status_;
}

bool GroupMailbox::Detach(RecvOp& op) {
  Inbound& inbound = *op.inbound;
  absl::MutexLock lock(&inbound.mu);
  if (inbound.recv.get() != &op) return false;
  inbound.recv.reset();
  inbound.discard = true;
  return true;
}

void GroupMailbox::Forget(const std::shared_ptr<RecvOp>& op) {
  absl::MutexLock lock(&mu_);
  in_progress_.erase(op);
}

absl::StatusOr<std::shared_ptr<RecvOp>> GroupMailbox::PostRecv(
    int src, uint64_t tag, absl::Span<std::byte> data) {
  auto op = std::make_shared<RecvOp>();
  op->src = src;
  op->tag = tag;
  op->data = data.data();
  op->size = data.size();
  absl::Status outcome;
  bool decided = false;
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(abort_status_);
    const Key key(src, tag);
    auto it = arrived_.find(key);
    if (it == arrived_.end()) {
      posted_[key].push_back(op);
      return op;
    }
    std::shared_ptr<Inbound> inbound = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) arrived_.erase(it);
    op->matched = true;
    op->inbound = inbound;
    // Copying the staged bytes under the mailbox lock keeps Abort from
    // seeing the receive half attached.
    absl::MutexLock message_lock(&inbound->mu);
    if (!inbound->failure.ok()) {
      outcome = inbound->failure;
      decided = true;
    } else if (static_cast<uint64_t>(inbound->total) != op->size) {
      outcome = SizeMismatch(*inbound, rank_, op->size);
      inbound->failure = outcome;
      inbound->discard = true;
      std::vector<StagedByte>().swap(inbound->staging);
      decided = true;
    } else {
      if (inbound->received > 0) {
        std::memcpy(op->data, inbound->staging.data(),
                    static_cast<size_t>(inbound->received));
      }
      std::vector<StagedByte>().swap(inbound->staging);
      if (inbound->complete) {
        decided = true;
      } else {
        inbound->recv = op;
        in_progress_.insert(op);
      }
    }
  }
  if (decided) op->completion.Complete(outcome);
  return op;
}

void GroupMailbox::CancelRecv(const std::shared_ptr<RecvOp>& op) {
  bool cancelled = false;
  {
    absl::MutexLock lock(&mu_);
    if (op->completion.done()) return;
    if (!op->matched) {
      auto it = posted_.find(Key(op->src, op->tag));
      if (it != posted_.end()) {
        auto& queue = it->second;
        queue.erase(std::remove(queue.begin(), queue.end(), op), queue.end());
        if (queue.empty()) posted_.erase(it);
      }
      cancelled = true;
    } else if (Detach(*op)) {
      in_progress_.erase(op);
      cancelled = true;
    }
  }
  if (cancelled) {
    op->completion.Complete(
        absl::CancelledError("request destroyed before it completed"));
  } else {
    // Detached by the thread completing it, which does so right away.
    op->completion.WaitFor(absl::InfiniteDuration());
  }
}

absl::StatusOr<std::shared_ptr<Inbound>> GroupMailbox::BeginMessage(
    const server::MessageHeader& header) {
  if (header.total_bytes() < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "message header has a negative size ", header.total_bytes()));
  }
  auto inbound = std::make_shared<Inbound>();
  inbound->src = header.src_rank();
  inbound->tag = header.tag();
  inbound->total = header.total_bytes();
  inbound->src_task = header.src_task();
  std::shared_ptr<RecvOp> mismatched;
  absl::Status mismatch;
  {
    absl::MutexLock lock(&mu_);
    RETURN_IF_ERROR(abort_status_);
    const Key key(inbound->src, inbound->tag);
    auto it = posted_.find(key);
    if (it == posted_.end()) {
      {
        // Room for the whole message up front (bounded: the size is the
        // sender's claim), so staging does not copy itself as it grows.
        absl::MutexLock message_lock(&inbound->mu);
        inbound->staging.reserve(
            static_cast<size_t>(std::min(inbound->total, kMaxStagingReserve)));
      }
      arrived_[key].push_back(inbound);
      return inbound;
    }
    std::shared_ptr<RecvOp> op = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) posted_.erase(it);
    op->matched = true;
    op->inbound = inbound;
    if (static_cast<uint64_t>(inbound->total) != op->size) {
      mismatch = SizeMismatch(*inbound, rank_, op->size);
      mismatched = std::move(op);
    } else {
      absl::MutexLock message_lock(&inbound->mu);
      inbound->recv = op;
      in_progress_.insert(std::move(op));
    }
  }
  if (mismatched != nullptr) {
    mismatched->completion.Complete(mismatch);
    return mismatch;
  }
  return inbound;
}

std::shared_ptr<RecvOp> GroupMailbox::TakeIfWhole(Inbound& message) {
  if (message.received != message.total || message.complete) return nullptr;
  message.complete = true;
  std::shared_ptr<RecvOp> done = std::move(message.recv);
  message.recv.reset();
  return done;
}

void GroupMailbox::Finish(const std::shared_ptr<RecvOp>& done) {
  if (done == nullptr) return;
  done->completion.Complete(absl::OkStatus());
  Forget(done);
}

absl::Status GroupMailbox::AddChunk(Inbound& message, int64_t offset,
                                    absl::string_view data) {
  return AddChunk(message, offset, absl::MakeConstSpan(&data, 1));
}

absl::Status GroupMailbox::AddChunk(
    Inbound& message, int64_t offset,
    absl::Span<const absl::string_view> pieces) {
  if (aborted()) return status();
  std::shared_ptr<RecvOp> done;
  {
    absl::MutexLock lock(&message.mu);
    RETURN_IF_ERROR(message.failure);
    if (offset != message.received) {
      return absl::InvalidArgumentError(
          absl::StrCat("chunk of ", Describe(message), " starts at byte ",
                       offset, " but ", message.received,
                       " bytes have arrived; chunks must come "
                       "in order"));
    }
    int64_t size = 0;
    for (absl::string_view piece : pieces) {
      size += static_cast<int64_t>(piece.size());
    }
    if (size > message.total - message.received) {
      return absl::InvalidArgumentError(
          absl::StrCat("chunk of ", size, " bytes at byte ", offset,
                       " overruns ", Describe(message)));
    }
    if (!message.discard && size > 0) {
      int64_t at = offset;
      for (absl::string_view piece : pieces) {
        if (message.recv != nullptr) {
          std::memcpy(message.recv->data + at, piece.data(), piece.size());
        } else {
          // (BeginMessage reserved room, bounded: total is the sender's
          // claim.)
          const size_t staged = message.staging.size();
          message.staging.resize(staged + piece.size());
          std::memcpy(message.staging.data() + staged, piece.data(),
                      piece.size());
        }
        at += static_cast<int64_t>(piece.size());
      }
    }
    message.received += size;
    done = TakeIfWhole(message);
  }
  Finish(done);
  return absl::OkStatus();
}

absl::StatusOr<size_t> GroupMailbox::ReadChunk(
    Inbound& message, size_t max,
    absl::FunctionRef<int64_t(std::byte* dst, size_t n)> read) {
  if (aborted()) return status();
  // Where the bytes of a message nobody will receive go.
  thread_local std::vector<std::byte> scratch(size_t{1} << 20);
  std::shared_ptr<RecvOp> done;
  int64_t got = 0;
  {
    absl::MutexLock lock(&message.mu);
    RETURN_IF_ERROR(message.failure);
    size_t n =
        std::min(max, static_cast<size_t>(message.total - message.received));
    if (n == 0) return 0;
    std::byte* dst = nullptr;
    size_t staged = 0;
    const bool staging = !message.discard && message.recv == nullptr;
    if (message.discard) {
      n = std::min(n, scratch.size());
      dst = scratch.data();
    } else if (message.recv != nullptr) {
      dst = message.recv->data + message.received;
    } else {
      // The size is only the sender's claim: grow by what may arrive now.
      n = std::min(n, kMaxStagingStep);
      staged = message.staging.size();
      message.staging.resize(staged + n);
      dst = &message.staging[staged].value;
    }
    got = read(dst, n);
    if (staging) {
      message.staging.resize(staged +
                             static_cast<size_t>(std::max<int64_t>(got, 0)));
    }
    if (got < 0) {
      return absl::UnavailableError(
          absl::StrCat("the connection carrying ", Describe(message),
                       " failed after ", message.received, " bytes"));
    }
    message.received += got;
    done = TakeIfWhole(message);
  }
  Finish(done);
  return static_cast<size_t>(got);
}

absl::Status GroupMailbox::EndMessage(const std::shared_ptr<Inbound>& message,
                                      const absl::Status& why) {
  std::shared_ptr<RecvOp> failed;
  absl::Status failure;
  {
    absl::MutexLock lock(&message->mu);
    if (message->complete) return absl::OkStatus();
    if (message->failure.ok()) {
      message->failure = absl::UnavailableError(absl::StrCat(
          Describe(*message), " to rank ", rank_, " of transport group \"",
          group_key_, "\" broke off after ", message->received, " bytes: ",
          why.ok() ? "the sender stopped sending" : why.ToString()));
    }
    failure = message->failure;
    failed = std::move(message->recv);
    message->recv.reset();
    message->discard = true;
    std::vector<StagedByte>().swap(message->staging);
  }
  if (failed != nullptr) {
    failed->completion.Complete(failure);
    Forget(failed);
    return failure;
  }
  // Not received yet: withdraw it, as if it had never been sent.
  absl::MutexLock lock(&mu_);
  auto it = arrived_.find(Key(message->src, message->tag));
  if (it != arrived_.end()) {
    auto& queue = it->second;
    queue.erase(std::remove(queue.begin(), queue.end(), message), queue.end());
    if (queue.empty()) arrived_.erase(it);
  }
  return failure;
}

bool GroupMailbox::Abort(absl::Status status, bool relay) {
  std::vector<std::shared_ptr<RecvOp>> failed;
  {
    absl::MutexLock lock(&mu_);
    if (!abort_status_.ok()) return false;
    abort_status_ = status;
    relay_.store(relay, std::memory_order_release);
    aborted_.store(true, std::memory_order_release);
    for (auto& [key, queue] : posted_) {
      for (auto& op : queue) failed.push_back(std::move(op));
    }
    posted_.clear();
    for (auto& [key, queue] : arrived_) {
      for (auto& inbound : queue) {
        absl::MutexLock message_lock(&inbound->mu);
        inbound->discard = true;
        if (inbound->failure.ok()) inbound->failure = status;
        std::vector<StagedByte>().swap(inbound->staging);
      }
    }
    arrived_.clear();
    for (const auto& op : in_progress_) {
      if (Detach(*op)) failed.push_back(op);
    }
    in_progress_.clear();
  }
  for (auto& op : failed) op->completion.Complete(status);
  absl::MutexLock lock(&listener_mu_);
  if (listener_) listener_(status);
  return true;
}

void GroupMailbox::SetAbortListener(
    std::function<void(const absl::Status&)> listener) {
  absl::MutexLock lock(&listener_mu_);
  listener_ = std::move(listener);
}

absl::StatusOr<std::shared_ptr<GroupMailbox>> MailboxRegistry::ForIncoming(
    absl::string_view group_key, int rank) {
  absl::MutexLock lock(&mu_);
  if (stopped_) return stop_status_;
  Entry& entry = entries_[Key(std::string(group_key), rank)];
  if (entry.closed) {
    return absl::UnavailableError(
        absl::StrCat("rank ", rank, " of transport group \"", group_key,
                     "\" has left: its endpoint on this task was destroyed"));
  }
  if (entry.mailbox == nullptr) {
    entry.mailbox =
        std::make_shared<GroupMailbox>(std::string(group_key), rank);
  }
  return entry.mailbox;
}

absl::StatusOr<std::shared_ptr<GroupMailbox>> MailboxRegistry::Register(
    const std::string& group_key, int rank, std::vector<std::string> targets,
    std::vector<std::string> layout) {
  absl::MutexLock lock(&mu_);
  if (stopped_) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create a transport endpoint on a stopped server (",
                     stop_status_.message(), ")"));
  }
  Entry& entry = entries_[Key(group_key, rank)];
  if (entry.has_endpoint) {
    return absl::AlreadyExistsError(absl::StrCat(
        "rank ", rank, " of transport group \"", group_key,
        "\" already has a live endpoint on this server; use a new group key "
        "for a new group"));
  }
  if (entry.mailbox == nullptr || entry.closed) {
    entry.mailbox = std::make_shared<GroupMailbox>(group_key, rank);
  }
  entry.has_endpoint = true;
  entry.closed = false;
  entry.targets = std::move(targets);
  entry.layout = std::move(layout);
  return entry.mailbox;
}

absl::Status MailboxRegistry::CheckLayout(
    absl::string_view group_key, const std::vector<std::string>& layout,
    absl::string_view caller, absl::string_view here) {
  std::vector<std::shared_ptr<GroupMailbox>> hit;
  absl::Status mismatch;
  absl::Status aborted;  // Of an endpoint here that agrees.
  {
    absl::MutexLock lock(&mu_);
    const auto [first, last] = GroupEntries(group_key);
    for (auto it = first; it != last; ++it) {
      const Entry& entry = it->second;
      if (!entry.has_endpoint || entry.layout.empty()) continue;
      if (entry.layout == layout) {
        if (aborted.ok()) aborted = entry.mailbox->status();
        continue;
      }
      if (mismatch.ok()) {
        mismatch = absl::FailedPreconditionError(absl::StrCat(
            "transport group \"", group_key, "\" has two layouts: ", caller,
            " sees ", DescribeLayout(layout), " but rank ", it->first.second,
            " (", here, ") sees ", DescribeLayout(entry.layout),
            "; every rank must list the same ranks on the same tasks (a "
            "MultiWorkerMirroredStrategy needs as many local devices on "
            "every worker)"));
      }
      hit.push_back(entry.mailbox);
    }
  }
  for (auto& mailbox : hit) mailbox->Abort(mismatch, /*relay=*/true);
  if (!mismatch.ok() || aborted.ok()) return mismatch;
  // The group is already over here: a refusal passes on as it is, any
  // other abort as ABORTED (the caller must not take it for a server that
  // is briefly unreachable).
  if (aborted.code() == absl::StatusCode::kFailedPrecondition) return aborted;
  return absl::AbortedError(absl::StrCat("transport group \"", group_key,
                                         "\" is already aborted on ", here,
                                         ": ", aborted.ToString()));
}

void MailboxRegistry::Unregister(const GroupMailbox& mailbox) {
  std::shared_ptr<GroupMailbox> gone;
  {
    absl::MutexLock lock(&mu_);
    auto it = entries_.find(Key(mailbox.group_key(), mailbox.rank()));
    if (it == entries_.end() || it->second.mailbox.get() != &mailbox) return;
    it->second.has_endpoint = false;
    it->second.closed = true;
    it->second.targets.clear();
    gone = std::move(it->second.mailbox);
    it->second.mailbox.reset();
  }
  gone->Abort(absl::UnavailableError(absl::StrCat(
      "rank ", gone->rank(), " of transport group \"", gone->group_key(),
      "\" has left: its endpoint was destroyed")));
  DropAbortedStrays(gone->group_key());
}

void MailboxRegistry::DropAbortedStrays(absl::string_view group_key) {
  std::vector<std::shared_ptr<GroupMailbox>> dropped;  // Freed unlocked.
  absl::MutexLock lock(&mu_);
  const auto [first, last] = GroupEntries(group_key);
  for (auto it = first; it != last; ++it) {
    if (it->second.has_endpoint) return;
  }
  for (auto it = first; it != last;) {
    const Entry& entry = it->second;
    if (!entry.closed && entry.mailbox != nullptr && entry.mailbox->aborted()) {
      dropped.push_back(entry.mailbox);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

absl::Status MailboxRegistry::GroupStatus(absl::string_view group_key) {
  absl::MutexLock lock(&mu_);
  const auto [first, last] = GroupEntries(group_key);
  for (auto it = first; it != last; ++it) {
    if (it->second.mailbox == nullptr) continue;
    RETURN_IF_ERROR(it->second.mailbox->status());
  }
  return absl::OkStatus();
}

std::pair<std::map<MailboxRegistry::Key, MailboxRegistry::Entry>::iterator,
          std::map<MailboxRegistry::Key, MailboxRegistry::Entry>::iterator>
MailboxRegistry::GroupEntries(absl::string_view group_key) {
  const std::string key(group_key);
  return {entries_.lower_bound(Key(key, INT_MIN)),
          entries_.upper_bound(Key(key, INT_MAX))};
}

int MailboxRegistry::AbortInvolving(absl::string_view target,
                                    const absl::Status& status) {
  std::vector<std::shared_ptr<GroupMailbox>> hit;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [key, entry] : entries_) {
      if (!entry.has_endpoint) continue;
      if (std::find(entry.targets.begin(), entry.targets.end(), target) !=
          entry.targets.end()) {
        hit.push_back(entry.mailbox);
      }
    }
  }
  int aborted = 0;
  for (auto& mailbox : hit) {
    if (mailbox->Abort(status)) ++aborted;
  }
  return aborted;
}

void MailboxRegistry::Shutdown(const absl::Status& status) {
  std::vector<std::shared_ptr<GroupMailbox>> all;
  {
    absl::MutexLock lock(&mu_);
    if (stopped_) return;
    stopped_ = true;
    stop_status_ = status;
    for (const auto& [key, entry] : entries_) {
      if (entry.mailbox != nullptr) all.push_back(entry.mailbox);
    }
  }
  for (auto& mailbox : all) mailbox->Abort(status);
}

}  // namespace server_internal
}  // namespace distribute
