#include "devices/host_transport.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "devices/completion.h"
#include "devices/direct_access.h"
#include "devices/status_macros.h"

namespace devices {
namespace {

// Who copies a matched message. Whichever side comes second copies, except
// that a sender arriving second hands a large message over to its receiver
// when the receiver is spinning in Wait on it: then each rank copies what it
// receives, in parallel with its peers and into its own cache right before
// it reduces, instead of the rank that runs ahead copying for everyone.
// Receives carry the protocol in `pull`:
//   kNoPuller  -> kPuller     a Wait starts spinning on the receive (only
//                             one Wait registers at a time);
//   kPuller    -> kNoPuller   it stops spinning without a hand-over;
//   kPuller    -> kHandedOff  a sender matched it and left the copy to it;
//                             the registered Wait copies (Transfer) before
//                             it returns, whatever happens, so a hand-over
//                             always completes.
enum PullState : int { kNoPuller, kPuller, kHandedOff };

// Messages below this size are copied by whichever side comes second: for
// them the hand-over would cost more than the copy.
constexpr size_t kMinPullBytes = size_t{64} << 10;

// One posted Send or Recv.
struct Op {
  bool is_send = false;
  int src = 0;  // Sending rank.
  int dst = 0;  // Receiving rank.
  uint64_t tag = 0;
  const std::byte* send_data = nullptr;
  std::byte* recv_data = nullptr;
  size_t size = 0;
  // Set, under the mailbox mutex, when the op leaves its queue to be paired
  // with its counterpart; from then on only the side that copies touches
  // the buffers.
  bool matched = false;
  // Receives only (see PullState): the matched send, set under the mailbox
  // mutex before a hand-over, and the hand-over state.
  std::shared_ptr<Op> partner;
  std::atomic<int> pull{kNoPuller};
  Completion completion;
};

// The unmatched sends and receives from one rank to another, in posting
// order. Matching scans for the first op with the same tag, which keeps
// per-tag FIFO order.
struct Mailbox {
  absl::Mutex mu;
  std::deque<std::shared_ptr<Op>> sends ABSL_GUARDED_BY(mu);
  std::deque<std::shared_ptr<Op>> recvs ABSL_GUARDED_BY(mu);
};

// Removes and returns the first op with `tag`, or nullptr.
std::shared_ptr<Op> TakeFirst(std::deque<std::shared_ptr<Op>>& queue,
                              uint64_t tag) {
  for (auto it = queue.begin(); it != queue.end(); ++it) {
    if ((*it)->tag == tag) {
      std::shared_ptr<Op> op = std::move(*it);
      queue.erase(it);
      return op;
    }
  }
  return nullptr;
}

// Copies the message and completes both sides.
void Transfer(Op& send, Op& recv) {
  absl::Status status;
  if (send.size != recv.size) {
    status = absl::InvalidArgumentError(
        absl::StrCat("size mismatch for tag ", send.tag, " from rank ",
                     send.src, " to rank ", send.dst, ": Send has ", send.size,
                     " bytes but the matching Recv expects ", recv.size,
                     " bytes; both sides must agree on the message size"));
  } else if (send.size > 0) {
    std::memcpy(recv.recv_data, send.send_data, send.size);
  }
  recv.completion.Complete(status);
  send.completion.Complete(status);
}

class Group {
 public:
  Group(std::vector<std::string> devices, HostTransportOptions options)
      : devices_(std::move(devices)),
        options_(options),
        size_(static_cast<int>(devices_.size())),
        oversubscribed_(size_ > UsableCpus()),
        gone_(new std::atomic<bool>[devices_.size()]),
        direct_(size_, options_.spin, oversubscribed_,
                [this](int rank, const absl::Status& reason) {
                  Abort(rank, reason).IgnoreError();  // reason is not OK.
                }) {
    boxes_.reserve(devices_.size() * devices_.size());
    for (size_t i = 0; i < devices_.size() * devices_.size(); ++i) {
      boxes_.push_back(std::make_unique<Mailbox>());
    }
    for (int r = 0; r < size_; ++r) gone_[r].store(false);
  }

  int size() const { return size_; }
  const HostTransportOptions& options() const { return options_; }
  // More ranks than CPUs: waiting ranks should yield their core.
  bool oversubscribed() const { return oversubscribed_; }
  const std::string& device(int rank) const {
    static const std::string* const kNone = new std::string();
    return rank >= 0 && rank < size_ ? devices_[rank] : *kNone;
  }
  Mailbox& box(int src, int dst) { return *boxes_[src * size_ + dst]; }
  DirectAccessGroup& direct() { return direct_; }

  // Matches `op` with a posted counterpart (and transfers) or queues it.
  absl::Status Post(const std::shared_ptr<Op>& op) {
    Mailbox& mailbox = box(op->src, op->dst);
    std::shared_ptr<Op> peer;
    {
      absl::MutexLock lock(&mailbox.mu);
      // Checked under the mailbox lock: Abort and Leave set their flags
      // before draining the mailboxes under the same lock, so an op is
      // either refused here or drained there.
      RETURN_IF_ERROR(CheckOpen(op->src, op->dst));
      auto& others = op->is_send ? mailbox.recvs : mailbox.sends;
      peer = TakeFirst(others, op->tag);
      if (peer == nullptr) {
        (op->is_send ? mailbox.sends : mailbox.recvs).push_back(op);
        return absl::OkStatus();
      }
      peer->matched = true;
      op->matched = true;
      if (op->is_send && op->size >= kMinPullBytes && !oversubscribed_) {
        peer->partner = op;
      }
    }
    if (!op->is_send) {
      Transfer(*peer, *op);
      return absl::OkStatus();
    }
    int puller = kPuller;
    if (peer->partner == nullptr ||
        !peer->pull.compare_exchange_strong(puller, kHandedOff,
                                            std::memory_order_acq_rel)) {
      Transfer(*op, *peer);  // The receiver is busy elsewhere: copy now.
    }
    return absl::OkStatus();
  }

  // Withdraws an incomplete op whose Request is being destroyed, or waits
  // for its transfer in progress.
  void Cancel(const std::shared_ptr<Op>& op) {
    Mailbox& mailbox = box(op->src, op->dst);
    bool withdrawn = false;
    {
      absl::MutexLock lock(&mailbox.mu);
      if (!op->matched) {
        auto& queue = op->is_send ? mailbox.sends : mailbox.recvs;
        auto it = std::find(queue.begin(), queue.end(), op);
        if (it != queue.end()) queue.erase(it);
        withdrawn = true;
      }
    }
    if (withdrawn) {
      op->completion.Complete(
          absl::CancelledError("request destroyed before it completed"));
    } else {
      op->completion.WaitFor(absl::InfiniteDuration());  // One memcpy away.
    }
  }

  absl::Status Abort(int rank, absl::Status reason) {
    if (reason.ok()) {
      return absl::InvalidArgumentError(
          "Transport::Abort needs a non-OK reason saying why the group is "
          "aborted");
    }
    {
      absl::MutexLock lock(&abort_mu_);
      if (!abort_status_.ok()) return absl::OkStatus();  // First one wins.
      abort_status_ = absl::Status(GroupAbortCode(reason.code()),
                                   absl::StrCat("transport group of ", size_,
                                                " ranks was aborted by rank ",
                                                rank, ": ", reason.ToString()));
      aborted_.store(true);
      direct_.Abort(abort_status_);
    }
    for (int src = 0; src < size_; ++src) {
      for (int dst = 0; dst < size_; ++dst) Drain(src, dst);
    }
    return absl::OkStatus();
  }

  // The endpoint of `rank` was destroyed.
  void Leave(int rank) {
    gone_[rank].store(true);
    direct_.Leave(rank);
    for (int other = 0; other < size_; ++other) {
      Drain(rank, other);
      if (other != rank) Drain(other, rank);
    }
  }

 private:
  // OK, or UNAVAILABLE if the group is aborted or src or dst is gone.
  absl::Status CheckOpen(int src, int dst) {
    if (aborted_.load()) {
      absl::MutexLock lock(&abort_mu_);
      return abort_status_;
    }
    for (int rank : {src, dst}) {
      if (gone_[rank].load()) {
        return absl::UnavailableError(absl::StrCat(
            "rank ", rank, " (", devices_[rank],
            ") has left the transport group (its endpoint was destroyed); "
            "messages between ranks ",
            src, " and ", dst, " can no longer be delivered"));
      }
    }
    return absl::OkStatus();
  }

  // Fails every unmatched op in mailbox (src, dst) with CheckOpen's error.
  void Drain(int src, int dst) {
    Mailbox& mailbox = box(src, dst);
    std::deque<std::shared_ptr<Op>> failed;
    absl::Status status;
    {
      absl::MutexLock lock(&mailbox.mu);
      status = CheckOpen(src, dst);
      if (status.ok()) return;
      for (auto* queue : {&mailbox.sends, &mailbox.recvs}) {
        for (auto& op : *queue) failed.push_back(std::move(op));
        queue->clear();
      }
    }
    for (auto& op : failed) op->completion.Complete(status);
  }

  const std::vector<std::string> devices_;
  const HostTransportOptions options_;
  const int size_;
  const bool oversubscribed_;
  std::vector<std::unique_ptr<Mailbox>> boxes_;  // [src * size + dst]
  std::unique_ptr<std::atomic<bool>[]> gone_;
  std::atomic<bool> aborted_{false};
  absl::Mutex abort_mu_;
  absl::Status abort_status_ ABSL_GUARDED_BY(abort_mu_);
  // Shares the abort: Abort aborts it, and it aborts the group when a
  // direct-access wait fails.
  DirectAccessGroup direct_;
};

class HostRequest : public Request {
 public:
  HostRequest(std::shared_ptr<Group> group, std::shared_ptr<Op> op)
      : group_(std::move(group)), op_(std::move(op)) {}
  HostRequest(const HostRequest&) = delete;
  HostRequest& operator=(const HostRequest&) = delete;

  ~HostRequest() override {
    if (!op_->completion.done()) group_->Cancel(op_);
  }

  absl::Status Wait(absl::Duration timeout) override {
    Completion& completion = op_->completion;
    absl::Duration spin = group_->options().spin;
    absl::Duration left = timeout;
    if (!op_->is_send && !group_->oversubscribed() && !completion.done() &&
        spin > absl::ZeroDuration() && timeout > absl::ZeroDuration()) {
      int none = kNoPuller;
      if (op_->pull.compare_exchange_strong(none, kPuller,
                                            std::memory_order_acq_rel)) {
        const absl::Duration spun = SpinAsPuller(std::min(spin, timeout));
        left = std::max(timeout - spun, absl::ZeroDuration());
        spin = absl::ZeroDuration();
      }
    }
    if (group_->oversubscribed() && !completion.done() &&
        spin > absl::ZeroDuration() && timeout > absl::ZeroDuration()) {
      // The rank this one waits for may be queued for this very core:
      // hand the core over rather than spin on it, then block.
      const absl::Time start = absl::Now();
      const absl::Duration yield_for = std::min(spin, timeout);
      absl::Duration waited = absl::ZeroDuration();
      while (!completion.done() && waited < yield_for) {
        std::this_thread::yield();
        waited = absl::Now() - start;
      }
      left = std::max(timeout - waited, absl::ZeroDuration());
      spin = absl::ZeroDuration();
    }
    if (completion.WaitFor(left, spin)) return completion.status();
    const double seconds = absl::ToDoubleSeconds(timeout);
    if (op_->is_send) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "Send from rank %d to rank %d tag %d (%d bytes) was not received "
          "within %gs; the receiver may be slow, stuck, or waiting for a "
          "different tag",
          op_->src, op_->dst, op_->tag, op_->size, seconds));
    }
    return absl::DeadlineExceededError(absl::StrFormat(
        "Recv on rank %d of the message from rank %d tag %d (%d bytes) did "
        "not arrive within %gs; the sender may be slow, stuck, or sending a "
        "different tag",
        op_->dst, op_->src, op_->tag, op_->size, seconds));
  }

  bool IsComplete() const override { return op_->completion.done(); }

 private:
  // Spins for up to `spin` as the receive's registered puller, copying the
  // message if a sender hands it over, and unregisters. Returns the time
  // spent.
  absl::Duration SpinAsPuller(absl::Duration spin) {
    const absl::Time start = absl::Now();
    for (int i = 1;; ++i) {
      if (op_->pull.load(std::memory_order_acquire) == kHandedOff) break;
      if (op_->completion.done()) break;
      CpuRelax();
      if (i % 64 == 0 && absl::Now() - start >= spin) break;
    }
    int puller = kPuller;
    if (!op_->pull.compare_exchange_strong(puller, kNoPuller,
                                           std::memory_order_acq_rel)) {
      // Handed over (now or just before the exchange): copy.
      std::shared_ptr<Op> send = std::move(op_->partner);
      Transfer(*send, *op_);
    }
    return absl::Now() - start;
  }

  const std::shared_ptr<Group> group_;
  const std::shared_ptr<Op> op_;
};

class HostTransport : public Transport {
 public:
  HostTransport(std::shared_ptr<Group> group, int rank)
      : group_(std::move(group)),
        rank_(rank),
        anchor_(std::make_shared<std::shared_ptr<Group>>(group_)) {}
  HostTransport(const HostTransport&) = delete;
  HostTransport& operator=(const HostTransport&) = delete;
  ~HostTransport() override { group_->Leave(rank_); }

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  const std::string& device(int rank) const override {
    return group_->device(rank);
  }

  absl::StatusOr<std::unique_ptr<Request>> Send(
      int peer, uint64_t tag, absl::Span<const std::byte> data) override {
    RETURN_IF_ERROR(CheckPeer(peer, "Send"));
    auto op = std::make_shared<Op>();
    op->is_send = true;
    op->src = rank_;
    op->dst = peer;
    op->tag = tag;
    op->send_data = data.data();
    op->size = data.size();
    return Post(std::move(op));
  }

  absl::StatusOr<std::unique_ptr<Request>> Recv(
      int peer, uint64_t tag, absl::Span<std::byte> data) override {
    RETURN_IF_ERROR(CheckPeer(peer, "Recv"));
    auto op = std::make_shared<Op>();
    op->is_send = false;
    op->src = peer;
    op->dst = rank_;
    op->tag = tag;
    op->recv_data = data.data();
    op->size = data.size();
    return Post(std::move(op));
  }

  absl::Status Abort(absl::Status reason) override {
    return group_->Abort(rank_, std::move(reason));
  }

  DirectAccessGroup* direct_access() override { return &group_->direct(); }

 private:
  absl::Status CheckPeer(int peer, absl::string_view what) const {
    if (peer < 0 || peer >= group_->size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " on rank ", rank_, " names peer ", peer,
          ", outside the group's ranks [0, ", group_->size(), ")"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<Request>> Post(std::shared_ptr<Op> op) {
    RETURN_IF_ERROR(group_->Post(op));
    // The request keeps the group alive through this endpoint's own
    // reference count (an aliasing pointer), so that ranks posting at once
    // do not contend on the group's.
    return std::unique_ptr<Request>(new HostRequest(
        std::shared_ptr<Group>(anchor_, anchor_->get()), std::move(op)));
  }

  const std::shared_ptr<Group> group_;
  const int rank_;
  // Holds group_; requests share ownership of it.
  const std::shared_ptr<const std::shared_ptr<Group>> anchor_;
};

}  // namespace

absl::StatusOr<std::vector<std::unique_ptr<Transport>>>
CreateHostTransportGroup(std::vector<std::string> device_names,
                         HostTransportOptions options) {
  if (device_names.empty()) {
    return absl::InvalidArgumentError(
        "a transport group needs at least one device");
  }
  const int size = static_cast<int>(device_names.size());
  auto group = std::make_shared<Group>(std::move(device_names), options);
  std::vector<std::unique_ptr<Transport>> endpoints;
  endpoints.reserve(static_cast<size_t>(size));
  for (int rank = 0; rank < size; ++rank) {
    endpoints.push_back(std::make_unique<HostTransport>(group, rank));
  }
  return endpoints;
}

}  // namespace devices
