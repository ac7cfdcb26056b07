// The simulated platform's Transport; see sim_transport.h.
#include "simulator/sim_transport.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/btree_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "devices/status_macros.h"

namespace simulator {
namespace {

// One posted Send or Recv.
struct Op {
  bool is_send = false;
  int src = 0;  // Sending rank.
  int dst = 0;  // Receiving rank.
  uint64_t tag = 0;
  const std::byte* send_data = nullptr;
  std::byte* recv_data = nullptr;
  size_t size = 0;
  // Guarded by the group's mutex.
  bool matched = false;
  bool cancelled = false;  // its Request was destroyed
  std::vector<ActorWakeup> waiters;
  // Written once, before `done` becomes true.
  absl::Status status;
  std::atomic<bool> done{false};
};

using OpPtr = std::shared_ptr<Op>;

std::string Describe(const Op& op) {
  if (op.is_send) {
    return absl::StrFormat("Send from rank %d to rank %d tag %d (%d bytes)",
                           op.src, op.dst, op.tag, op.size);
  }
  return absl::StrFormat(
      "Recv on rank %d of the message from rank %d tag %d (%d bytes)", op.dst,
      op.src, op.tag, op.size);
}

struct Mailbox {
  std::deque<OpPtr> sends;
  std::deque<OpPtr> recvs;
};

// Removes and returns the first op with `tag`, or nullptr.
OpPtr TakeFirst(std::deque<OpPtr>& queue, uint64_t tag) {
  for (auto it = queue.begin(); it != queue.end(); ++it) {
    if ((*it)->tag == tag) {
      OpPtr op = std::move(*it);
      queue.erase(it);
      return op;
    }
  }
  return nullptr;
}

class Group : public std::enable_shared_from_this<Group> {
 public:
  Group(std::shared_ptr<SimContext> context, std::vector<int> devices)
      : context_(std::move(context)),
        devices_(std::move(devices)),
        size_(static_cast<int>(devices_.size())),
        gone_(devices_.size(), false) {
    for (int device : devices_) names_.push_back(context_->device_name(device));
  }

  SimContext& context() const { return *context_; }
  int size() const { return size_; }
  const std::string& device(int rank) const {
    static const std::string* const kNone = new std::string();
    return rank >= 0 && rank < size_ ? names_[static_cast<size_t>(rank)]
                                     : *kNone;
  }

  // OK, or UNAVAILABLE if the group is aborted or src or dst is gone.
  absl::Status CheckOpen(int src, int dst) {
    absl::MutexLock lock(&mu_);
    return CheckOpenLocked(src, dst);
  }

  // On the driving thread: matches `op` or queues it.
  void Post(const OpPtr& op) {
    OpPtr send;
    OpPtr recv;
    std::vector<ActorWakeup> wake;
    {
      absl::MutexLock lock(&mu_);
      if (op->cancelled || op->done.load()) return;
      absl::Status open = CheckOpenLocked(op->src, op->dst);
      if (!open.ok()) {
        CompleteLocked(*op, open, wake);
      } else {
        Mailbox& box = boxes_[Box(op->src, op->dst)];
        OpPtr peer = TakeFirst(op->is_send ? box.recvs : box.sends, op->tag);
        if (peer == nullptr) {
          (op->is_send ? box.sends : box.recvs).push_back(op);
          return;
        }
        op->matched = true;
        peer->matched = true;
        send = op->is_send ? op : peer;
        recv = op->is_send ? peer : op;
        in_flight_.push_back(send);
        in_flight_.push_back(recv);
      }
    }
    for (const ActorWakeup& w : wake) w();
    if (send != nullptr) Start(send, recv);
  }

  // On the driving thread: the request's park starts.
  void AddWaiter(const OpPtr& op, ActorWakeup wake) {
    {
      absl::MutexLock lock(&mu_);
      if (!op->done.load()) {
        op->waiters.push_back(wake);
        return;
      }
    }
    wake();
  }

  // A Request is destroyed before completing.
  void Cancel(const OpPtr& op) {
    {
      absl::MutexLock lock(&mu_);
      if (op->done.load()) return;
      if (!op->matched) {
        op->cancelled = true;
        Mailbox& box = boxes_[Box(op->src, op->dst)];
        auto& queue = op->is_send ? box.sends : box.recvs;
        queue.erase(std::remove(queue.begin(), queue.end(), op), queue.end());
        return;
      }
    }
    // In flight: wait for the transfer, so that the buffer is left alone.
    WaitFor(op, context_->wall_timeout()).IgnoreError();
    absl::MutexLock lock(&mu_);
    // Still not done after the timeout: never touch its buffer.
    op->cancelled = true;
  }

  // Parks the caller until `op` completes. Returns its status, or
  // DEADLINE_EXCEEDED on deadlock or timeout.
  absl::Status WaitFor(const OpPtr& op, absl::Duration timeout) {
    if (op->done.load(std::memory_order_acquire)) return op->status;
    const std::string what = Describe(*op);
    if (timeout <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(
          absl::StrCat(what, " has not completed (timeout 0)"));
    }
    ParkOutcome outcome;
    {
      SimActor actor(*context_, what);
      std::shared_ptr<Group> self = shared_from_this();
      outcome = actor.Park(
          what, [self, op](ActorWakeup wake) { self->AddWaiter(op, wake); },
          timeout);
    }
    if (op->done.load(std::memory_order_acquire)) return op->status;
    if (outcome.reason == WakeReason::kDeadlock) {
      const int peer = op->is_send ? op->dst : op->src;
      return absl::DeadlineExceededError(absl::StrCat(
          what, " can never complete: rank ", peer, " (", device(peer),
          ") has not posted the matching ", op->is_send ? "Recv" : "Send",
          " with tag ", op->tag, "; ", outcome.status.message()));
    }
    if (outcome.reason == WakeReason::kWallTimeout) {
      return absl::DeadlineExceededError(absl::StrCat(
          what, " did not complete within ", absl::FormatDuration(timeout),
          " of host time: ", outcome.status.message()));
    }
    return outcome.status;
  }

  absl::Status Abort(int rank, absl::Status reason) {
    std::vector<ActorWakeup> wake;
    {
      absl::MutexLock lock(&mu_);
      if (!abort_.ok()) return absl::OkStatus();  // The first one wins.
      abort_ = absl::Status(devices::GroupAbortCode(reason.code()),
                            absl::StrCat("transport group of ", size_,
                                         " ranks was aborted by rank ", rank,
                                         ": ", reason.ToString()));
      for (auto& [b, box] : boxes_) {
        for (auto* queue : {&box.sends, &box.recvs}) {
          for (OpPtr& op : *queue) CompleteLocked(*op, abort_, wake);
          queue->clear();
        }
      }
      for (OpPtr& op : in_flight_) CompleteLocked(*op, abort_, wake);
      in_flight_.clear();
    }
    for (const ActorWakeup& w : wake) w();
    return absl::OkStatus();
  }

  // The endpoint of `rank` was destroyed: its unmatched messages fail.
  void Leave(int rank) {
    std::vector<ActorWakeup> wake;
    {
      absl::MutexLock lock(&mu_);
      gone_[static_cast<size_t>(rank)] = true;
      for (int other = 0; other < size_; ++other) {
        for (size_t b : {Box(rank, other), Box(other, rank)}) {
          auto it = boxes_.find(b);
          if (it == boxes_.end()) continue;
          Mailbox& box = it->second;
          for (auto* queue : {&box.sends, &box.recvs}) {
            for (OpPtr& op : *queue) {
              CompleteLocked(*op, CheckOpenLocked(op->src, op->dst), wake);
            }
            queue->clear();
          }
        }
      }
    }
    for (const ActorWakeup& w : wake) w();
  }

 private:
  size_t Box(int src, int dst) const {
    return static_cast<size_t>(src) * devices_.size() +
           static_cast<size_t>(dst);
  }

  absl::Status CheckOpenLocked(int src, int dst)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    RETURN_IF_ERROR(abort_);
    for (int rank : {src, dst}) {
      if (gone_[static_cast<size_t>(rank)]) {
        return absl::UnavailableError(absl::StrCat(
            "rank ", rank, " (", device(rank),
            ") has left the transport group (its endpoint was destroyed); "
            "messages between ranks ",
            src, " and ", dst, " can no longer be delivered"));
      }
    }
    return absl::OkStatus();
  }

  // Completes `op` unless it is done; its waiters go into `wake`.
  void CompleteLocked(Op& op, const absl::Status& status,
                      std::vector<ActorWakeup>& wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (op.done.load()) return;
    op.status = status;
    op.done.store(true, std::memory_order_release);
    for (ActorWakeup& w : op.waiters) wake.push_back(w);
    op.waiters.clear();
  }

  // Completes both sides of a matched message.
  void Finish(const OpPtr& send, const OpPtr& recv, const absl::Status& status,
              bool copy) {
    std::vector<ActorWakeup> wake;
    {
      absl::MutexLock lock(&mu_);
      for (const OpPtr& op : {send, recv}) {
        in_flight_.erase(std::remove(in_flight_.begin(), in_flight_.end(), op),
                         in_flight_.end());
      }
      absl::Status recv_status = status;
      if (status.ok() && copy) {
        if (send->cancelled) {
          recv_status = absl::UnavailableError(
              absl::StrCat(Describe(*send),
                           " was withdrawn (its request destroyed) before "
                           "the transfer finished"));
        } else if (!recv->cancelled && !send->done.load() &&
                   !recv->done.load() && send->size > 0) {
          std::memcpy(recv->recv_data, send->send_data, send->size);
        }
      }
      CompleteLocked(*send, status, wake);
      CompleteLocked(*recv, recv_status, wake);
    }
    for (const ActorWakeup& w : wake) w();
  }

  // On the driving thread: starts the flow of a matched pair.
  void Start(const OpPtr& send, const OpPtr& recv) {
    if (send->size != recv->size) {
      Finish(send, recv,
             absl::InvalidArgumentError(absl::StrCat(
                 "size mismatch for tag ", send->tag, " from rank ", send->src,
                 " to rank ", send->dst, ": Send has ", send->size,
                 " bytes but the matching Recv expects ", recv->size,
                 " bytes; both sides must agree on the message size")),
             false);
      return;
    }
    const int src = devices_[static_cast<size_t>(send->src)];
    const int dst = devices_[static_cast<size_t>(send->dst)];
    absl::StatusOr<std::vector<int>> route = context_->Route(src, dst);
    absl::Status started = route.status();
    if (route.ok()) {
      // The network model owns the callback and the group owns the
      // simulation (through its context): a strong reference here would
      // keep both alive forever when a transfer is still in flight at the
      // end (after an abort). Endpoints and requests hold the group while
      // anyone can wait for the transfer.
      std::weak_ptr<Group> weak = weak_from_this();
      const bool copy = context_->functional();
      started = context_->simulation().StartTransfer(
          src, dst, *route, static_cast<int64_t>(send->size),
          absl::StrCat("rank ", send->src, "->", send->dst, " tag ", send->tag),
          [weak, send, recv, copy](absl::Status status) {
            std::shared_ptr<Group> self = weak.lock();
            if (self == nullptr) return;
            if (!status.ok()) {
              status = absl::Status(
                  status.code(),
                  absl::StrCat(Describe(*send), " failed: ", status.message()));
            }
            self->Finish(send, recv, status, copy);
          });
    }
    if (!started.ok()) {
      Finish(send, recv,
             absl::Status(
                 started.code(),
                 absl::StrCat(Describe(*send), " failed: ", started.message())),
             false);
    }
  }

  const std::shared_ptr<SimContext> context_;
  const std::vector<int> devices_;
  const int size_;
  std::vector<std::string> names_;
  absl::Mutex mu_;
  // [src * size + dst], made when first used (a group of n ranks has n^2
  // pairs, and most never talk); ordered, so that failing them all is
  // deterministic.
  absl::btree_map<size_t, Mailbox> boxes_ ABSL_GUARDED_BY(mu_);
  std::vector<bool> gone_ ABSL_GUARDED_BY(mu_);
  std::vector<OpPtr> in_flight_ ABSL_GUARDED_BY(mu_);
  absl::Status abort_ ABSL_GUARDED_BY(mu_);
};

class SimRequest : public devices::Request {
 public:
  SimRequest(std::shared_ptr<Group> group, OpPtr op)
      : group_(std::move(group)), op_(std::move(op)) {}
  SimRequest(const SimRequest&) = delete;
  SimRequest& operator=(const SimRequest&) = delete;
  ~SimRequest() override {
    if (!op_->done.load()) group_->Cancel(op_);
  }

  absl::Status Wait(absl::Duration timeout) override {
    return group_->WaitFor(op_, timeout);
  }
  bool IsComplete() const override { return op_->done.load(); }

 private:
  const std::shared_ptr<Group> group_;
  const OpPtr op_;
};

class SimTransport : public devices::Transport {
 public:
  SimTransport(std::shared_ptr<Group> group, int rank)
      : group_(std::move(group)), rank_(rank) {}
  SimTransport(const SimTransport&) = delete;
  SimTransport& operator=(const SimTransport&) = delete;
  ~SimTransport() override { group_->Leave(rank_); }

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  const std::string& device(int rank) const override {
    return group_->device(rank);
  }

  absl::StatusOr<std::unique_ptr<devices::Request>> Send(
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

  absl::StatusOr<std::unique_ptr<devices::Request>> Recv(
      int peer, uint64_t tag, absl::Span<std::byte> data) override {
    RETURN_IF_ERROR(CheckPeer(peer, "Recv"));
    auto op = std::make_shared<Op>();
    op->src = peer;
    op->dst = rank_;
    op->tag = tag;
    op->recv_data = data.data();
    op->size = data.size();
    return Post(std::move(op));
  }

  absl::Status Abort(absl::Status reason) override {
    if (reason.ok()) {
      return absl::InvalidArgumentError(
          "Abort needs a non-OK reason saying why the group is aborted");
    }
    return group_->Abort(rank_, std::move(reason));
  }

 private:
  absl::Status CheckPeer(int peer, absl::string_view what) const {
    if (peer < 0 || peer >= group_->size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " on rank ", rank_, " names peer ", peer,
          ", outside the group's ranks [0, ", group_->size(), ")"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<devices::Request>> Post(OpPtr op) {
    RETURN_IF_ERROR(group_->CheckOpen(op->src, op->dst));
    {
      SimActor actor(group_->context(), Describe(*op));
      RETURN_IF_ERROR(actor.Submit([group = group_, op] { group->Post(op); }));
    }
    return std::unique_ptr<devices::Request>(new SimRequest(group_, op));
  }

  const std::shared_ptr<Group> group_;
  const int rank_;
};

}  // namespace

absl::StatusOr<std::vector<std::unique_ptr<devices::Transport>>>
CreateSimTransportGroup(std::shared_ptr<SimContext> context,
                        std::vector<int> devices) {
  if (devices.empty()) {
    return absl::InvalidArgumentError(
        "a transport group needs at least one device");
  }
  std::vector<bool> used(static_cast<size_t>(context->num_devices()), false);
  for (int device : devices) {
    if (device < 0 || device >= context->num_devices()) {
      return absl::InvalidArgumentError(
          absl::StrCat("transport group names device index ", device,
                       ", outside [0, ", context->num_devices(), ")"));
    }
    if (used[static_cast<size_t>(device)]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device ", context->device_name(device),
          " appears more than once in the transport group; each rank needs "
          "its own device"));
    }
    used[static_cast<size_t>(device)] = true;
  }
  const int size = static_cast<int>(devices.size());
  auto group = std::make_shared<Group>(std::move(context), std::move(devices));
  std::vector<std::unique_ptr<devices::Transport>> endpoints;
  endpoints.reserve(static_cast<size_t>(size));
  for (int rank = 0; rank < size; ++rank) {
    endpoints.push_back(std::make_unique<SimTransport>(group, rank));
  }
  return endpoints;
}

}  // namespace simulator
