// Replays a collective schedule without a host thread per rank; see
// schedule_replay.h.
#include "tools/distsim/schedule_replay.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "simulator/actor_runtime.h"
#include "simulator/engine.h"
#include "simulator/network_model.h"
#include "simulator/sim_context.h"
#include "tools/distsim/symmetric_replay.h"

namespace distsim {
namespace {

namespace dc = distribute::collective;
using simulator::SimTime;

// One posted send or receive (a step of a rank's program).
struct Message {
  bool is_send = false;
  int src = 0;  // sending rank
  int dst = 0;  // receiving rank
  uint64_t tag = 0;
  int64_t bytes = 0;
  bool done = false;
  absl::Status status;
  int waiter = -1;  // the rank that waits for it, if any
};

// Where a rank's program stands: in its steps (waiting for the deps of
// `step`, the first `dep` of them done), or, past the last step, waiting
// for its messages in order (`final_index`).
struct RankState {
  size_t step = 0;
  size_t dep = 0;
  bool draining = false;
  size_t final_index = 0;
  bool finished = false;
  SimTime end = 0;
};

using MessageKey = std::tuple<int, int, uint64_t>;  // src, dst, tag

// The ranks' state machines, over a network the subclass provides.
class ReplayCore {
 public:
  // `release_order`: the ranks in the order they run when woken together.
  ReplayCore(const dc::Schedule& schedule, int64_t element_size,
             std::vector<int> release_order)
      : schedule_(schedule),
        element_size_(element_size),
        n_(schedule.group_size()),
        ranks_(static_cast<size_t>(schedule.group_size())),
        release_order_(std::move(release_order)) {
    size_t total = 0;
    for (const dc::RankProgram& program : schedule_.ranks) {
      offsets_.push_back(total);
      total += program.steps.size();
    }
    messages_.resize(total);
    pending_.assign(total, 0);
    position_.resize(static_cast<size_t>(n_));
    is_woken_.assign(static_cast<size_t>(n_), 0);
    for (int p = 0; p < n_; ++p) position_[release_order_[p]] = p;
  }
  virtual ~ReplayCore() = default;

 protected:
  virtual SimTime Now() const = 0;
  // Starts the transfer of a matched pair; calls Complete for both when it
  // ends.
  virtual void Start(size_t send, size_t recv) = 0;

  void WakeAll() {
    for (int p = 0; p < n_; ++p) Wake(p);
  }

  // Runs the woken ranks, lowest release position first, each until it
  // waits for a message that has not completed (or ends), then posts its
  // messages and parks it.
  void RunWoken() {
    std::vector<size_t> posts;
    while (!woken_.empty() && error_.ok()) {
      const int position = woken_.top();
      woken_.pop();
      is_woken_[static_cast<size_t>(position)] = 0;
      const int rank = release_order_[static_cast<size_t>(position)];
      posts.clear();
      const std::optional<size_t> blocked = RunRank(rank, posts);
      for (size_t id : posts) Post(id);
      if (!blocked.has_value()) continue;
      Message& message = messages_[*blocked];
      if (message.done) {
        Wake(position_[rank]);
      } else {
        message.waiter = rank;
      }
    }
  }

  void Complete(size_t id, const absl::Status& status) {
    Message& message = messages_[id];
    if (message.done) return;
    message.done = true;
    message.status = status;
    if (message.waiter >= 0) {
      Wake(position_[static_cast<size_t>(message.waiter)]);
      message.waiter = -1;
    }
  }

  bool finished() const { return finished_ == n_; }

  // From `start` to the last rank's end.
  SimTime Elapsed(SimTime start) const {
    SimTime elapsed = 0;
    for (const RankState& rank : ranks_) {
      elapsed = std::max(elapsed, rank.end - start);
    }
    return elapsed;
  }

  // "rank 3 waits for rank 2's message tag 7; ..." (a few of them).
  std::string Waiting() const {
    std::string out;
    int listed = 0;
    for (size_t id = 0; id < messages_.size() && listed < 4; ++id) {
      const Message& m = messages_[id];
      if (m.waiter < 0) continue;
      absl::StrAppend(&out, listed == 0 ? "" : "; ", "rank ", m.waiter,
                      " waits for the ", m.is_send ? "send to rank " : "",
                      m.is_send ? m.dst : m.src, m.is_send ? "" : "'s message",
                      " tag ", m.tag);
      ++listed;
    }
    return out.empty() ? "no rank waits" : out;
  }

  const dc::Schedule& schedule_;
  const int64_t element_size_;
  const int n_;
  std::vector<size_t> offsets_;    // first message id of each rank
  std::vector<Message> messages_;  // by offset + step index
  absl::Status error_;

 private:
  // Runs `rank`'s program as ExecuteSchedule does on a timing-only device:
  // waits for each step's deps, then issues it (sends and receives into
  // `posts`; reductions and copies take no time); at the end waits for
  // every message in order. Returns the message it waits for, or nothing
  // when it ended (or failed: error_).
  std::optional<size_t> RunRank(int rank, std::vector<size_t>& posts) {
    RankState& state = ranks_[static_cast<size_t>(rank)];
    const dc::RankProgram& program = schedule_.ranks[static_cast<size_t>(rank)];
    const size_t offset = offsets_[static_cast<size_t>(rank)];
    // 0: go on; 1: wait for it; -1: it failed.
    auto check = [&](size_t index) {
      const size_t id = offset + index;
      if (!pending_[id]) return 0;
      const Message& message = messages_[id];
      if (!message.done) return 1;
      pending_[id] = 0;
      if (!message.status.ok()) {
        const dc::Step& step = program.steps[index];
        error_ = absl::Status(
            message.status.code(),
            absl::StrCat("collective rank ", rank, " step ", index, " (",
                         step.kind == dc::StepKind::kSend ? "send" : "recv",
                         " with rank ", step.peer,
                         "): ", message.status.message()));
        return -1;
      }
      return 0;
    };
    while (!state.draining) {
      if (state.step == program.steps.size()) {
        state.draining = true;
        break;
      }
      const dc::Step& step = program.steps[state.step];
      while (state.dep < step.deps.size()) {
        const size_t dep = static_cast<size_t>(step.deps[state.dep]);
        const int c = check(dep);
        if (c == 1) return offset + dep;
        if (c < 0) return std::nullopt;
        ++state.dep;
      }
      if (step.kind == dc::StepKind::kSend ||
          step.kind == dc::StepKind::kRecv) {
        const size_t id = offset + state.step;
        Message& message = messages_[id];
        message.is_send = step.kind == dc::StepKind::kSend;
        message.src = message.is_send ? rank : step.peer;
        message.dst = message.is_send ? step.peer : rank;
        message.tag = static_cast<uint64_t>(step.tag);
        message.bytes =
            (message.is_send ? step.src.count : step.dst.count) * element_size_;
        pending_[id] = 1;
        posts.push_back(id);
      }
      ++state.step;
      state.dep = 0;
    }
    while (state.final_index < program.steps.size()) {
      const int c = check(state.final_index);
      if (c == 1) return offset + state.final_index;
      if (c < 0) return std::nullopt;
      ++state.final_index;
    }
    state.finished = true;
    state.end = Now();
    ++finished_;
    return std::nullopt;
  }

  // Matches message `id` with its peer's, or keeps it until the peer posts.
  void Post(size_t id) {
    const Message& message = messages_[id];
    const MessageKey key{message.src, message.dst, message.tag};
    auto& others = message.is_send ? unmatched_recvs_ : unmatched_sends_;
    auto it = others.find(key);
    if (it == others.end()) {
      auto& mine = message.is_send ? unmatched_sends_ : unmatched_recvs_;
      if (!mine.emplace(key, id).second) {
        Complete(id, absl::InvalidArgumentError(absl::StrCat(
                         "two messages from rank ", message.src, " to rank ",
                         message.dst, " with tag ", message.tag)));
      }
      return;
    }
    const size_t peer = it->second;
    others.erase(it);
    const size_t send = message.is_send ? id : peer;
    const size_t recv = message.is_send ? peer : id;
    if (messages_[send].bytes != messages_[recv].bytes) {
      const Message& s = messages_[send];
      const absl::Status status = absl::InvalidArgumentError(
          absl::StrCat("size mismatch for tag ", s.tag, " from rank ", s.src,
                       " to rank ", s.dst, ": ", s.bytes, " bytes sent, ",
                       messages_[recv].bytes, " expected"));
      Complete(send, status);
      Complete(recv, status);
      return;
    }
    Start(send, recv);
  }

  void Wake(int position) {
    char& woken = is_woken_[static_cast<size_t>(position)];
    if (woken) return;
    woken = 1;
    woken_.push(position);
  }

  std::vector<RankState> ranks_;
  std::vector<char> pending_;       // posted and not yet waited for
  std::vector<int> release_order_;  // ranks in release order
  std::vector<int> position_;       // rank -> its place in release_order_
  // Release positions of the woken ranks, lowest first, each once.
  std::priority_queue<int, std::vector<int>, std::greater<int>> woken_;
  std::vector<char> is_woken_;
  absl::flat_hash_map<MessageKey, size_t> unmatched_sends_;
  absl::flat_hash_map<MessageKey, size_t> unmatched_recvs_;
  int finished_ = 0;
};

// Ranks ordered by a key, ties by rank.
std::vector<int> OrderBy(const std::vector<int>& key) {
  std::vector<int> order(key.size());
  for (size_t r = 0; r < order.size(); ++r) order[r] = static_cast<int>(r);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return key[static_cast<size_t>(a)] < key[static_cast<size_t>(b)];
  });
  return order;
}

// Every rank on its device of the platform.
class PlatformReplay final : public ReplayCore {
 public:
  // The actor runtime releases bound threads in actor-id order, and a
  // device's actor ids follow its index.
  PlatformReplay(simulator::SimPlatform& platform,
                 const std::vector<int>& devices, const dc::Schedule& schedule,
                 int64_t element_size)
      : ReplayCore(schedule, element_size, OrderBy(devices)),
        context_(platform.context()),
        devices_(devices) {}

  absl::StatusOr<ScheduleReplayResult> Run() {
    WakeAll();
    simulator::SimActor actor(context_, "schedule replay");
    bool started = false;
    SimTime start = 0;
    while (true) {
      simulator::ParkOutcome outcome = actor.Park(
          "schedule replay",
          [&](simulator::ActorWakeup wake) {
            if (!started) {
              start = context_.simulation().now();
              started = true;
            }
            RunWoken();
            if (!error_.ok() || finished()) {
              wake();
              return;
            }
            wake_ = wake;  // the next completion calls it
          },
          context_.wall_timeout());
      wake_.reset();
      RETURN_IF_ERROR(error_);
      if (finished()) break;
      if (outcome.reason != simulator::WakeReason::kCompleted) {
        return absl::DeadlineExceededError(
            absl::StrCat("replaying ", n_, " ranks of ",
                         dc::AlgorithmName(schedule_.algorithm), " ",
                         dc::OpName(schedule_.op), ": ", Waiting(), "; ",
                         outcome.status.message()));
      }
    }
    ScheduleReplayResult result;
    result.elapsed = Elapsed(start);
    return result;
  }

 private:
  SimTime Now() const override { return context_.simulation().now(); }

  // Starts the transfer of a matched pair over the devices' route.
  void Start(size_t send, size_t recv) override {
    const Message& s = messages_[send];
    auto fail = [&](const absl::Status& status) {
      Complete(send, status);
      Complete(recv, status);
    };
    const int src = devices_[static_cast<size_t>(s.src)];
    const int dst = devices_[static_cast<size_t>(s.dst)];
    absl::StatusOr<const std::vector<int>*> route = Route(s.src, s.dst);
    if (!route.ok()) {
      fail(route.status());
      return;
    }
    // The flow's label only reaches errors, which RunRank prefixes with the
    // rank, step and peer; a short constant label costs no allocation for
    // each of millions of messages.
    absl::Status started = context_.simulation().StartTransfer(
        src, dst, **route, s.bytes, "replay message",
        [this, send, recv](absl::Status status) {
          Complete(send, status);
          Complete(recv, status);
          if (wake_.has_value()) (*wake_)();
        });
    if (!started.ok()) fail(started);
  }

  // The route from rank `src`'s device to rank `dst`'s. A schedule sends
  // between the same pairs again and again (a ring step after step), so
  // each pair's route is asked of the router once.
  absl::StatusOr<const std::vector<int>*> Route(int src, int dst) {
    const uint64_t key =
        (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) |
        static_cast<uint32_t>(dst);
    auto it = routes_.find(key);
    if (it == routes_.end()) {
      ASSIGN_OR_RETURN(std::vector<int> route,
                       context_.Route(devices_[static_cast<size_t>(src)],
                                      devices_[static_cast<size_t>(dst)]));
      it = routes_.emplace(key, std::move(route)).first;
    }
    return &it->second;
  }

  simulator::SimContext& context_;
  const std::vector<int>& devices_;
  // By (sending rank << 32 | receiving rank); node_hash_map, as pointers
  // to its values are handed out.
  absl::node_hash_map<uint64_t, std::vector<int>> routes_;
  std::optional<simulator::ActorWakeup> wake_;
};

// A rank per class of equivalent ranks, on a network of a link per class
// of equivalent links (symmetric_replay.h), driven on an engine of its own.
class ClassReplay final : public ReplayCore {
 public:
  ClassReplay(const SymmetryPlan& plan, const std::vector<int>& devices,
              int64_t element_size)
      : ReplayCore(plan.quotient, element_size,
                   OrderBy(RepresentativeDevices(plan, devices))),
        plan_(plan),
        network_(engine_) {}

  // nullopt when the network refuses a link or a flow, or the ranks stall
  // (the full replay reports why).
  std::optional<ScheduleReplayResult> Run() {
    for (size_t k = 0; k < plan_.links.size(); ++k) {
      if (!network_
               .AddLink({absl::StrCat("class ", k), plan_.links[k].capacity, 0})
               .ok()) {
        return std::nullopt;
      }
    }
    WakeAll();
    RunWoken();
    // As the platform's actor runtime does: every event of one time, then
    // the ranks they woke.
    while (error_.ok() && !failed_) {
      const std::optional<SimTime> next = engine_.NextEventTime();
      if (!next.has_value()) break;
      engine_.RunUntil(*next);
      RunWoken();
    }
    if (!error_.ok() || failed_ || !finished()) return std::nullopt;
    ScheduleReplayResult result;
    result.elapsed = Elapsed(0);
    result.rank_classes = n_;
    result.class_events = engine_.events_processed();
    return result;
  }

 private:
  static std::vector<int> RepresentativeDevices(
      const SymmetryPlan& plan, const std::vector<int>& devices) {
    std::vector<int> out;
    for (const int rank : plan.representatives) {
      out.push_back(devices[static_cast<size_t>(rank)]);
    }
    return out;
  }

  SimTime Now() const override { return engine_.now(); }

  void Start(size_t send, size_t recv) override {
    const Message& s = messages_[send];
    const size_t step = send - offsets_[static_cast<size_t>(s.src)];
    const int32_t index = plan_.flow_of[static_cast<size_t>(s.src)][step];
    if (index < 0) {
      failed_ = true;
      return;
    }
    const QuotientFlow& flow = plan_.flows[static_cast<size_t>(index)];
    simulator::FlowSpec spec;
    spec.route.assign(flow.links.begin(), flow.links.end());
    spec.multiplicity = flow.multiplicity;
    spec.extra_latency = flow.latency;
    spec.bytes = s.bytes;
    spec.start_time = engine_.now();
    absl::StatusOr<simulator::FlowId> started = network_.StartFlow(
        std::move(spec),
        [this, send, recv](const simulator::FlowResult& result) {
          Complete(send, result.status);
          Complete(recv, result.status);
        });
    if (!started.ok()) failed_ = true;
  }

  const SymmetryPlan& plan_;
  simulator::Engine engine_;
  simulator::NetworkModel network_;
  bool failed_ = false;
};

}  // namespace

absl::StatusOr<ScheduleReplayResult> ReplaySchedule(
    simulator::SimPlatform& platform, const std::vector<int>& devices,
    const dc::Schedule& schedule, int64_t element_size,
    ScheduleReplayOptions options) {
  if (static_cast<int>(devices.size()) != schedule.group_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a schedule of ", schedule.group_size(),
                     " ranks replayed on ", devices.size(), " devices"));
  }
  std::set<int> seen;
  for (int device : devices) {
    if (device < 0 || device >= platform.topology().num_devices() ||
        !seen.insert(device).second) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device index ", device, " is out of range or listed twice"));
    }
  }
  simulator::SimContext& context = platform.context();
  const simulator::SimulationOptions& simulation =
      context.simulation().options();
  if (options.use_symmetry && !simulation.trace &&
      simulation.faults.faults().empty() &&
      context.simulation().PendingEvents() == 0) {
    std::optional<SymmetryPlan> plan =
        FindSymmetry(schedule, devices, platform.topology(),
                     [&](int src, int dst) { return context.Route(src, dst); });
    if (plan.has_value()) {
      ClassReplay replay(*plan, devices, element_size);
      std::optional<ScheduleReplayResult> result = replay.Run();
      if (result.has_value()) return *result;
    }
  }
  PlatformReplay replay(platform, devices, schedule, element_size);
  return replay.Run();
}

}  // namespace distsim
