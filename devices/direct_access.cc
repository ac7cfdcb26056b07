#include "devices/direct_access.h"

#include <algorithm>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "devices/abort_code.h"
#include "devices/completion.h"

namespace devices {

DirectAccessGroup::DirectAccessGroup(
    int size, absl::Duration spin, bool oversubscribed,
    std::function<void(int, const absl::Status&)> on_abort)
    : size_(size < 1 ? 1 : size),
      spin_(spin),
      oversubscribed_(oversubscribed),
      on_abort_(std::move(on_abort)),
      slots_(new Slot[static_cast<size_t>(size < 1 ? 1 : size)]) {}

bool DirectAccessGroup::AllArrived(uint64_t generation) const {
  for (int q = 0; q < size_; ++q) {
    if (slots_[q].arrived.load(std::memory_order_acquire) < generation) {
      return false;
    }
  }
  return true;
}

void DirectAccessGroup::WakeAll() {
  absl::MutexLock lock(&mu_);
  cv_.SignalAll();
}

absl::Status DirectAccessGroup::status() const {
  if (!aborted_.load(std::memory_order_seq_cst)) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  return abort_status_;
}

void DirectAccessGroup::Abort(const absl::Status& reason) {
  if (reason.ok()) return;  // An abort needs a cause; the transport checks.
  {
    absl::MutexLock lock(&mu_);
    if (abort_status_.ok()) abort_status_ = reason;
    aborted_.store(true, std::memory_order_seq_cst);
    cv_.SignalAll();
  }
}

void DirectAccessGroup::Leave(int rank) {
  if (rank < 0 || rank >= size_) return;
  slots_[rank].reading.store(false, std::memory_order_seq_cst);
  slots_[rank].gone.store(true, std::memory_order_seq_cst);
  WakeAll();
}

void DirectAccessGroup::Finish(int rank) {
  if (rank < 0 || rank >= size_) return;
  slots_[rank].reading.store(false, std::memory_order_release);
}

absl::Status DirectAccessGroup::Fail(int rank, absl::Status reason) {
  if (reason.ok()) {
    reason = absl::InternalError("DirectAccessGroup::Fail without a reason");
  }
  if (rank >= 0 && rank < size_) {
    slots_[rank].reading.store(false, std::memory_order_seq_cst);
  }
  FailAndQuiesce(rank, reason, /*notify=*/true);
  return reason;
}

void DirectAccessGroup::FailAndQuiesce(int rank, const absl::Status& reason,
                                       bool notify) {
  bool first = false;
  {
    absl::MutexLock lock(&mu_);
    if (abort_status_.ok()) {
      // Peers see UNAVAILABLE (DEADLINE_EXCEEDED after a timeout) naming
      // the cause; this rank returns `reason`.
      abort_status_ =
          absl::IsUnavailable(reason)
              ? reason
              : absl::Status(GroupAbortCode(reason.code()),
                             absl::StrCat("direct-access group of ", size_,
                                          " ranks was aborted by rank ", rank,
                                          ": ", reason.ToString()));
      first = true;
    }
    aborted_.store(true, std::memory_order_seq_cst);
    cv_.SignalAll();
  }
  if (first && notify && on_abort_) on_abort_(rank, reason);
  // A peer that passed a barrier before the abort may still be reading this
  // rank's buffers; it stops at its next Arrive or Finish, after a bounded
  // amount of copying (the algorithms do nothing else between barriers).
  // Readers that pass after the abort see it and do not read (the
  // seq_cst store of `reading` and load of aborted_ in Arrive pair with the
  // store of aborted_ above and the loads below).
  for (int q = 0; q < size_; ++q) {
    if (q == rank) continue;
    while (slots_[q].reading.load(std::memory_order_seq_cst)) {
      std::this_thread::yield();
    }
  }
}

absl::Status DirectAccessGroup::Arrive(int rank, absl::Time deadline) {
  LazyDeadline fixed = LazyDeadline::At(deadline);
  return Arrive(rank, fixed);
}

absl::Status DirectAccessGroup::Arrive(int rank, LazyDeadline& deadline) {
  if (rank < 0 || rank >= size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("DirectAccessGroup::Arrive: rank ", rank,
                     " is outside the group's ranks [0, ", size_, ")"));
  }
  Slot& me = slots_[rank];
  // (Finish usually ended the reads already; the store is a full fence.)
  if (me.reading.load(std::memory_order_relaxed)) {
    me.reading.store(false, std::memory_order_seq_cst);
  }
  if (aborted_.load(std::memory_order_seq_cst)) {
    absl::Status s = status();
    FailAndQuiesce(rank, s, /*notify=*/false);
    return s;
  }
  const uint64_t generation = me.arrived.load(std::memory_order_relaxed) + 1;
  me.arrived.store(generation, std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_seq_cst) > 0) WakeAll();

  auto any_gone = [this]() {
    for (int q = 0; q < size_; ++q) {
      if (slots_[q].gone.load(std::memory_order_acquire)) return q;
    }
    return -1;
  };
  auto settled = [&]() {
    return AllArrived(generation) || aborted_.load(std::memory_order_seq_cst) ||
           any_gone() >= 0;
  };
  // Spin (pause or yield), then block. The clock is first read when the
  // time is first checked (after 64 pauses, or the first yield), which
  // starts both the spin and a lazy deadline.
  bool done = settled();
  if (!done && spin_ > absl::ZeroDuration()) {
    absl::Time spin_until = absl::InfinitePast();
    for (int i = 1; !done; ++i) {
      if (oversubscribed_) {
        std::this_thread::yield();
      } else {
        CpuRelax();
      }
      done = settled();
      if (!done && (oversubscribed_ || i % 64 == 0)) {
        const absl::Time now = absl::Now();
        if (spin_until == absl::InfinitePast()) {
          spin_until = std::min(now + spin_, deadline.Get(now));
        }
        if (now >= spin_until) break;
      }
    }
  }
  if (!done) {
    const absl::Time until = deadline.Get(absl::Now());
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    {
      absl::MutexLock lock(&mu_);
      while (!settled()) {
        if (cv_.WaitWithDeadline(&mu_, until)) break;  // Timed out.
      }
    }
    sleepers_.fetch_sub(1, std::memory_order_seq_cst);
  }

  if (AllArrived(generation)) {
    me.reading.store(true, std::memory_order_seq_cst);
    if (!aborted_.load(std::memory_order_seq_cst)) return absl::OkStatus();
    me.reading.store(false, std::memory_order_seq_cst);
  }
  absl::Status failure;
  if (aborted_.load(std::memory_order_seq_cst)) {
    failure = status();
  } else if (const int q = any_gone(); q >= 0) {
    failure = absl::UnavailableError(absl::StrCat(
        "rank ", q,
        " has left the direct-access group (its transport endpoint was "
        "destroyed); the collective cannot complete"));
  } else {
    std::vector<int> missing;
    for (int q = 0; q < size_; ++q) {
      if (slots_[q].arrived.load(std::memory_order_acquire) < generation) {
        missing.push_back(q);
      }
    }
    failure = absl::DeadlineExceededError(absl::StrCat(
        "rank ", rank, " waited at shared-memory barrier ", generation,
        " until its deadline but rank(s) ", absl::StrJoin(missing, ", "),
        " did not arrive; they may be slow, stuck, or running a different "
        "collective (every rank must issue the same collectives in the same "
        "order); the group is now aborted"));
  }
  FailAndQuiesce(rank, failure, /*notify=*/true);
  return failure;
}

}  // namespace devices
