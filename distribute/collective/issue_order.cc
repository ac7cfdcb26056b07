// The in-order issue reordering pass; see issue_order.h.
#include "distribute/collective/issue_order.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

namespace distribute {
namespace collective {
namespace {

// Model time in units of one element's transfer.
using ModelTime = int64_t;

struct StepRef {
  int32_t rank = 0;
  int32_t index = 0;
};

// A model event: step `ref` becomes ready (kReady) or is done (kDone) at
// `time`. Ordered by (time, kind, rank, index) so that the run does not
// depend on container order.
struct Event {
  ModelTime time = 0;
  int kind = 0;  // kDone before kReady at equal times
  int32_t rank = 0;
  int32_t index = 0;
  bool operator>(const Event& o) const {
    return std::tie(time, kind, rank, index) >
           std::tie(o.time, o.kind, o.rank, o.index);
  }
};
constexpr int kDone = 0;
constexpr int kReady = 1;

class Model {
 public:
  explicit Model(const Schedule& s) : s_(s) {
    const size_t n = s.ranks.size();
    start_.resize(n);
    done_.resize(n);
    waiting_.resize(n);
    ready_at_.resize(n);
    posted_.resize(n);
    dependents_.resize(n);
    send_free_.assign(n, 0);
    recv_free_.assign(n, 0);
    for (size_t r = 0; r < n; ++r) {
      const std::vector<Step>& steps = s.ranks[r].steps;
      start_[r].assign(steps.size(), -1);
      done_[r].assign(steps.size(), -1);
      waiting_[r].assign(steps.size(), 0);
      ready_at_[r].assign(steps.size(), 0);
      posted_[r].assign(steps.size(), -1);
      dependents_[r].resize(steps.size());
      for (size_t i = 0; i < steps.size(); ++i) {
        waiting_[r][i] = static_cast<int64_t>(steps[i].deps.size());
        for (int32_t d : steps[i].deps) {
          dependents_[r][static_cast<size_t>(d)].push_back(
              static_cast<int32_t>(i));
        }
        const Step& st = steps[i];
        if (st.kind == StepKind::kSend) {
          partner_key_[{static_cast<int32_t>(r), st.peer, st.tag, 0}] =
              StepRef{static_cast<int32_t>(r), static_cast<int32_t>(i)};
        } else if (st.kind == StepKind::kRecv) {
          partner_key_[{st.peer, static_cast<int32_t>(r), st.tag, 1}] =
              StepRef{static_cast<int32_t>(r), static_cast<int32_t>(i)};
        }
      }
    }
  }

  // Runs the model; false if some step never completes.
  bool Run() {
    for (size_t r = 0; r < s_.ranks.size(); ++r) {
      for (size_t i = 0; i < s_.ranks[r].steps.size(); ++i) {
        if (waiting_[r][i] == 0) {
          events_.push(Event{0, kReady, static_cast<int32_t>(r),
                             static_cast<int32_t>(i)});
        }
      }
    }
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      if (e.kind == kReady) {
        Ready(e);
      } else {
        Done(e);
      }
    }
    for (const std::vector<ModelTime>& rank : done_) {
      for (ModelTime t : rank) {
        if (t < 0) return false;
      }
    }
    return true;
  }

  ModelTime start(size_t rank, size_t index) const {
    return start_[rank][index];
  }

 private:
  using Key = std::tuple<int32_t, int32_t, int64_t, int>;  // src, dst, tag

  void Ready(const Event& e) {
    const size_t r = static_cast<size_t>(e.rank);
    const size_t i = static_cast<size_t>(e.index);
    const Step& st = s_.ranks[r].steps[i];
    if (st.kind != StepKind::kSend && st.kind != StepKind::kRecv) {
      start_[r][i] = e.time;
      events_.push(Event{e.time, kDone, e.rank, e.index});
      return;
    }
    posted_[r][i] = e.time;
    const bool is_send = st.kind == StepKind::kSend;
    const int32_t src = is_send ? e.rank : st.peer;
    const int32_t dst = is_send ? st.peer : e.rank;
    auto partner = partner_key_.find(Key{src, dst, st.tag, is_send ? 1 : 0});
    if (partner == partner_key_.end()) return;  // unmatched: never done
    const StepRef other = partner->second;
    const size_t orank = static_cast<size_t>(other.rank);
    const size_t oindex = static_cast<size_t>(other.index);
    if (posted_[orank][oindex] < 0) return;  // the partner starts it
    // Both sides posted: the message takes the sender's send port and the
    // receiver's receive port, first come first served.
    const int64_t count = is_send ? st.src.count : st.dst.count;
    const ModelTime begin =
        std::max({e.time, send_free_[static_cast<size_t>(src)],
                  recv_free_[static_cast<size_t>(dst)]});
    const ModelTime end = begin + 1 + count;
    send_free_[static_cast<size_t>(src)] = end;
    recv_free_[static_cast<size_t>(dst)] = end;
    start_[r][i] = begin;
    start_[orank][oindex] = begin;
    events_.push(Event{end, kDone, e.rank, e.index});
    events_.push(Event{end, kDone, other.rank, other.index});
  }

  void Done(const Event& e) {
    const size_t r = static_cast<size_t>(e.rank);
    const size_t i = static_cast<size_t>(e.index);
    done_[r][i] = e.time;
    for (int32_t j : dependents_[r][i]) {
      const size_t dj = static_cast<size_t>(j);
      ready_at_[r][dj] = std::max(ready_at_[r][dj], e.time);
      if (--waiting_[r][dj] == 0) {
        events_.push(Event{ready_at_[r][dj], kReady, e.rank, j});
      }
    }
  }

  const Schedule& s_;
  std::vector<std::vector<ModelTime>> start_;
  std::vector<std::vector<ModelTime>> done_;
  std::vector<std::vector<int64_t>> waiting_;
  std::vector<std::vector<ModelTime>> ready_at_;
  std::vector<std::vector<ModelTime>> posted_;
  std::vector<std::vector<std::vector<int32_t>>> dependents_;
  std::vector<ModelTime> send_free_;
  std::vector<ModelTime> recv_free_;
  // (src, dst, tag, side) -> the step; side 0 is the send, 1 the receive.
  std::map<Key, StepRef> partner_key_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
};

}  // namespace

Schedule OrderForInOrderIssue(Schedule schedule) {
  Model model(schedule);
  if (!model.Run()) return schedule;
  for (size_t r = 0; r < schedule.ranks.size(); ++r) {
    std::vector<Step>& steps = schedule.ranks[r].steps;
    std::vector<int32_t> order(steps.size());
    for (size_t i = 0; i < order.size(); ++i) {
      order[i] = static_cast<int32_t>(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return model.start(r, static_cast<size_t>(a)) <
             model.start(r, static_cast<size_t>(b));
    });
    std::vector<int32_t> position(steps.size());
    for (size_t k = 0; k < order.size(); ++k) {
      position[static_cast<size_t>(order[k])] = static_cast<int32_t>(k);
    }
    std::vector<Step> reordered;
    reordered.reserve(steps.size());
    for (int32_t old : order) {
      Step step = std::move(steps[static_cast<size_t>(old)]);
      for (int32_t& d : step.deps) d = position[static_cast<size_t>(d)];
      std::sort(step.deps.begin(), step.deps.end());
      reordered.push_back(std::move(step));
    }
    steps = std::move(reordered);
  }
  return schedule;
}

}  // namespace collective
}  // namespace distribute
