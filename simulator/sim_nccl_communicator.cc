// The simulated NCCL communicator; see sim_nccl_communicator.h.
#include "simulator/sim_nccl_communicator.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "devices/dtype.h"
#include "devices/reduce_kernels.h"
#include "devices/status_macros.h"
#include "simulator/group_hardware.h"
#include "simulator/nccl_model.h"
#include "simulator/sim_nccl_call.h"
#include "simulator/sim_transport.h"
#include "simulator/trace.h"

namespace simulator {
namespace {

using internal::Agree;
using internal::Arrival;
using internal::CallName;
using internal::ComputeResults;
using internal::FormatSize;

// One collective: the k-th call of every rank.
struct Call {
  explicit Call(int n) : ranks(static_cast<size_t>(n)) {}
  struct Rank {
    bool arrived = false;
    bool withdrawn = false;  // gave up; its buffers are off limits
    bool picked_up = false;  // its thread returned
    Arrival arrival;
    std::vector<ActorWakeup> wake;
  };
  std::vector<Rank> ranks;
  int arrived = 0;
  int picked_up = 0;
  bool started = false;
  bool done = false;
  absl::Status status;  // the call's outcome, once done (or failed early)
};

// What the communicator's ranks share with the simulation's events.
class State {
 public:
  State(std::shared_ptr<SimContext> context, std::vector<int> devices,
        std::vector<int> links, GroupHardware hardware)
      : context_(std::move(context)),
        devices_(std::move(devices)),
        links_(std::move(links)),
        n_(static_cast<int>(devices_.size())),
        hardware_(std::move(hardware)),
        next_call_(devices_.size(), 0) {}

  SimContext& context() const { return *context_; }
  int size() const { return n_; }

  // On the caller's thread: the rank's next call number.
  uint64_t NextCall(int rank) {
    absl::MutexLock lock(&mu_);
    return next_call_[static_cast<size_t>(rank)]++;
  }

  absl::Status aborted() {
    absl::MutexLock lock(&mu_);
    return abort_;
  }

  // From any thread: aborts the communicator with `reason` (the first
  // reason wins). Calls that have not started fail at once; a started call
  // ends at its simulated time and then fails (see Finish).
  void Abort(const absl::Status& reason) {
    std::vector<ActorWakeup> to_wake;
    {
      absl::MutexLock lock(&mu_);
      if (!abort_.ok()) return;
      abort_ = absl::UnavailableError(absl::StrCat(
          kSimNcclName, " communicator was aborted: ", reason.message()));
      for (auto& [seq, call] : calls_) {
        if (!call.started && !call.done) FailLocked(call, abort_, to_wake);
      }
    }
    for (const ActorWakeup& w : to_wake) w(absl::OkStatus());
  }

  // On the driving thread (a park's start function): rank arrives at call
  // `seq`.
  void Arrive(std::shared_ptr<State> self, uint64_t seq, int rank,
              const Arrival& arrival, ActorWakeup wake) {
    std::vector<ActorWakeup> to_wake;
    absl::Status start_error;
    {
      absl::MutexLock lock(&mu_);
      Call& call = CallLocked(seq);
      Call::Rank& me = call.ranks[static_cast<size_t>(rank)];
      me.arrived = true;
      me.arrival = arrival;
      me.wake.push_back(wake);
      ++call.arrived;
      if (!abort_.ok() && !call.done) FailLocked(call, abort_, to_wake);
      if (call.done) {
        to_wake.push_back(wake);
        me.wake.clear();
      } else {
        const Arrival* first = nullptr;
        for (const Call::Rank& r : call.ranks) {
          if (r.arrived) {
            first = &r.arrival;
            break;
          }
        }
        absl::Status agree = Agree(*first, arrival, rank);
        if (!agree.ok()) FailLocked(call, agree, to_wake);
      }
      if (!call.done && call.arrived == n_) {
        start_error = StartLocked(self, seq, call);
        if (!start_error.ok()) FailLocked(call, start_error, to_wake);
      }
    }
    for (const ActorWakeup& w : to_wake) w(absl::OkStatus());
  }

  // On the caller's thread, after its park: the rank leaves call `seq`.
  // A non-OK `gave_up` (a deadlock or host timeout) withdraws it and, if
  // the call has not ended, aborts the communicator; returns `gave_up` if
  // non-OK, else the call's status.
  absl::Status Leave(uint64_t seq, int rank, const absl::Status& gave_up) {
    std::vector<ActorWakeup> to_wake;
    absl::Status result;
    {
      absl::MutexLock lock(&mu_);
      auto it = calls_.find(seq);
      if (it == calls_.end()) return gave_up;
      Call& call = it->second;
      Call::Rank& me = call.ranks[static_cast<size_t>(rank)];
      if (call.done) {
        result = gave_up.ok() ? call.status : gave_up;
      } else {
        result = gave_up;
        me.withdrawn = true;
        me.arrival.input = nullptr;
        me.arrival.output = nullptr;
        me.wake.clear();
        if (abort_.ok()) {
          abort_ = absl::UnavailableError(absl::StrCat(
              kSimNcclName, " communicator was aborted: rank ", rank, " (",
              context_->device_name(devices_[static_cast<size_t>(rank)]),
              ") gave up on call ", seq, ": ", gave_up.message()));
        }
        // Ranks still waiting in a call that has not started would wait in
        // vain; a started call ends on its own (and fails, see Finish).
        if (!call.started) FailLocked(call, abort_, to_wake);
      }
      if (!me.picked_up) {
        me.picked_up = true;
        if (++call.picked_up == n_) calls_.erase(it);
      }
    }
    for (const ActorWakeup& w : to_wake) w(absl::OkStatus());
    return result;
  }

  // The ranks of call `seq` that have not arrived, for messages.
  std::string Missing(uint64_t seq) {
    absl::MutexLock lock(&mu_);
    std::vector<std::string> missing;
    auto it = calls_.find(seq);
    for (int r = 0; r < n_; ++r) {
      if (it == calls_.end() ||
          !it->second.ranks[static_cast<size_t>(r)].arrived) {
        missing.push_back(absl::StrCat(
            r, " (", context_->device_name(devices_[static_cast<size_t>(r)]),
            ")"));
      }
    }
    return absl::StrJoin(missing, ", ");
  }

 private:
  Call& CallLocked(uint64_t seq) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = calls_.find(seq);
    if (it == calls_.end()) it = calls_.emplace(seq, Call(n_)).first;
    return it->second;
  }

  // Ends a call that has not started with `status`; its waiters go into
  // `to_wake`.
  void FailLocked(Call& call, const absl::Status& status,
                  std::vector<ActorWakeup>& to_wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (call.done) return;
    call.done = true;
    call.status = status;
    for (Call::Rank& r : call.ranks) {
      for (ActorWakeup& w : r.wake) to_wake.push_back(w);
      r.wake.clear();
    }
  }

  // Every rank is here: charge the modeled time.
  absl::Status StartLocked(std::shared_ptr<State> self, uint64_t seq,
                           Call& call) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const Arrival& a = call.ranks[0].arrival;
    const int64_t elem = static_cast<int64_t>(devices::DTypeSize(a.dtype));
    // nccl-tests' sizes (nccl_model.h): the buffer of an all-reduce,
    // broadcast or reduce; the whole output of an all-gather and the whole
    // input of a reduce-scatter; the per-rank buffer of an all-to-all.
    int64_t count = a.input_count;
    if (a.op == NcclOp::kAllGather) count = a.output_count;
    if (a.op == NcclOp::kBroadcast) count = a.output_count;
    const int64_t bytes = count * elem;
    ASSIGN_OR_RETURN(NcclPrediction prediction,
                     PredictNcclOn(hardware_, a.op, bytes));
    const SimTime duration =
        static_cast<SimTime>(std::llround(prediction.time_us * 1e6));
    const std::string name = absl::StrCat(
        CallName(a.op), " ", prediction.Label(), " ", FormatSize(bytes));
    std::vector<TraceArg> args = {
        {"algorithm", std::string(NcclAlgorithmName(prediction.algorithm))},
        {"protocol", std::string(NcclProtocolName(prediction.protocol))},
        {"bytes", bytes},
        {"ranks", int64_t{n_}},
        {"call", static_cast<int64_t>(seq)}};
    call.started = true;
    return context_->simulation().StartCollective(
        devices_, links_, duration, name, std::move(args),
        [self, seq](absl::Status status) { self->Finish(seq, status); });
  }

  // On the driving thread, when the modeled time has passed.
  void Finish(uint64_t seq, absl::Status status) {
    std::vector<ActorWakeup> to_wake;
    {
      absl::MutexLock lock(&mu_);
      auto it = calls_.find(seq);
      if (it == calls_.end()) return;
      Call& call = it->second;
      for (int r = 0; r < n_ && status.ok(); ++r) {
        if (call.ranks[static_cast<size_t>(r)].withdrawn) {
          status = absl::UnavailableError(absl::StrCat(
              "rank ", r,
              " gave up on the call before it ended: ", abort_.message()));
        }
      }
      if (status.ok() && context_->functional()) {
        std::vector<const Arrival*> arrivals;
        for (const Call::Rank& r : call.ranks) arrivals.push_back(&r.arrival);
        status = ComputeResults(arrivals, scratch_);
      }
      call.done = true;
      call.status = status;
      for (Call::Rank& r : call.ranks) {
        for (ActorWakeup& w : r.wake) to_wake.push_back(w);
        r.wake.clear();
      }
    }
    for (const ActorWakeup& w : to_wake) w(absl::OkStatus());
  }

  const std::shared_ptr<SimContext> context_;
  const std::vector<int> devices_;
  // The links of the ring through the ranks, which every collective needs.
  const std::vector<int> links_;
  const int n_;
  const GroupHardware hardware_;
  absl::Mutex mu_;
  std::vector<uint64_t> next_call_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Call> calls_ ABSL_GUARDED_BY(mu_);
  absl::Status abort_ ABSL_GUARDED_BY(mu_);
  std::vector<std::byte> scratch_ ABSL_GUARDED_BY(mu_);
};

bool Overlap(const devices::Tensor& a, const devices::Tensor& b) {
  const auto* pa = static_cast<const std::byte*>(a.raw_data());
  const auto* pb = static_cast<const std::byte*>(b.raw_data());
  if (pa == nullptr || pb == nullptr || a.bytes() == 0 || b.bytes() == 0) {
    return false;
  }
  return pa < pb + b.bytes() && pb < pa + a.bytes();
}

class SimNcclCommunicator : public devices::Communicator {
 public:
  SimNcclCommunicator(std::shared_ptr<State> state,
                      std::vector<std::unique_ptr<devices::Transport>> p2p,
                      std::vector<std::string> names)
      : state_(std::move(state)),
        p2p_(std::move(p2p)),
        names_(std::move(names)),
        send_count_(names_.size() * names_.size(), 0),
        recv_count_(names_.size() * names_.size(), 0) {}
  SimNcclCommunicator(const SimNcclCommunicator&) = delete;
  SimNcclCommunicator& operator=(const SimNcclCommunicator&) = delete;

  const std::string& name() const override { return name_; }
  int size() const override { return state_->size(); }

  absl::Status Abort(absl::Status reason) override {
    if (reason.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat(kSimNcclName, " Abort needs a non-OK reason"));
    }
    state_->Abort(reason);
    for (const std::unique_ptr<devices::Transport>& t : p2p_) {
      if (t != nullptr) t->Abort(reason).IgnoreError();
    }
    return absl::OkStatus();
  }
  const std::string& device(int rank) const override {
    static const std::string* const kNone = new std::string();
    return rank >= 0 && rank < size() ? names_[static_cast<size_t>(rank)]
                                      : *kNone;
  }

  absl::Status AllReduce(int rank, const devices::Tensor& input,
                         devices::Tensor& output,
                         const devices::CollectiveOptions& options) override {
    return Collective(NcclOp::kAllReduce, rank, 0, input, &output,
                      input.num_elements(), options);
  }
  absl::Status AllGather(int rank, const devices::Tensor& input,
                         devices::Tensor& output,
                         const devices::CollectiveOptions& options) override {
    return Collective(NcclOp::kAllGather, rank, 0, input, &output,
                      input.num_elements() * size(), options);
  }
  absl::Status ReduceScatter(
      int rank, const devices::Tensor& input, devices::Tensor& output,
      const devices::CollectiveOptions& options) override {
    if (input.num_elements() % size() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ncclReduceScatter on rank ", rank, ": the input's ",
          input.num_elements(), " elements do not split into ", size(),
          " equal blocks; pad it to a multiple of the group size"));
    }
    return Collective(NcclOp::kReduceScatter, rank, 0, input, &output,
                      input.num_elements() / size(), options);
  }
  absl::Status Broadcast(int rank, int root, devices::Tensor& tensor,
                         const devices::CollectiveOptions& options) override {
    return Collective(NcclOp::kBroadcast, rank, root, tensor, &tensor,
                      tensor.num_elements(), options);
  }
  absl::Status Reduce(int rank, int root, const devices::Tensor& input,
                      devices::Tensor& output,
                      const devices::CollectiveOptions& options) override {
    return Collective(NcclOp::kReduce, rank, root, input,
                      rank == root ? &output : nullptr, input.num_elements(),
                      options);
  }
  absl::Status AllToAll(int rank, const devices::Tensor& input,
                        devices::Tensor& output,
                        const devices::CollectiveOptions& options) override {
    if (input.num_elements() % size() != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "ncclAllToAll on rank ", rank, ": the input's ", input.num_elements(),
          " elements do not split into ", size(),
          " equal blocks; pad it to a multiple of the group size"));
    }
    return Collective(NcclOp::kAllToAll, rank, 0, input, &output,
                      input.num_elements(), options);
  }

  absl::Status Send(int rank, int peer, const devices::Tensor& tensor,
                    const devices::CollectiveOptions& options) override {
    RETURN_IF_ERROR(CheckPeer("ncclSend", rank, peer, tensor));
    const uint64_t tag = NextTag(send_count_, rank, peer);
    absl::Span<const std::byte> data(
        static_cast<const std::byte*>(tensor.raw_data()), tensor.bytes());
    ASSIGN_OR_RETURN(auto request,
                     p2p_[static_cast<size_t>(rank)]->Send(peer, tag, data));
    return request->Wait(options.timeout);
  }
  absl::Status Recv(int rank, int peer, devices::Tensor& tensor,
                    const devices::CollectiveOptions& options) override {
    RETURN_IF_ERROR(CheckPeer("ncclRecv", rank, peer, tensor));
    const uint64_t tag = NextTag(recv_count_, peer, rank);
    absl::Span<std::byte> data(static_cast<std::byte*>(tensor.raw_data()),
                               tensor.bytes());
    ASSIGN_OR_RETURN(auto request,
                     p2p_[static_cast<size_t>(rank)]->Recv(peer, tag, data));
    return request->Wait(options.timeout);
  }

 private:
  absl::Status CheckRank(absl::string_view what, int rank) const {
    if (rank < 0 || rank >= size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " names rank ", rank, ", outside the ", name_,
                       " communicator's ranks [0, ", size(), ")"));
    }
    return absl::OkStatus();
  }

  // INVALID_ARGUMENT if `t` is on another device than the rank's (host
  // tensors, on no device, are accepted: the strategies compute with host
  // kernels on the simulator); in functional mode FAILED_PRECONDITION
  // unless it has data.
  absl::Status CheckTensor(absl::string_view what, int rank,
                           const devices::Tensor& t) const {
    if (!t.device().empty() && t.device() != device(rank)) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " on rank ", rank, " (", device(rank),
                       ") was given a tensor on '", t.device(),
                       "'; each rank's tensors must be on its own device"));
    }
    if (state_->context().functional() && !t.host_accessible()) {
      return absl::FailedPreconditionError(
          absl::StrCat(what, " on rank ", rank, " was given ", t.DebugString(),
                       ", which has no data"));
    }
    return absl::OkStatus();
  }

  absl::Status CheckPeer(absl::string_view what, int rank, int peer,
                         const devices::Tensor& t) const {
    absl::Status s = CheckRank(what, rank);
    if (s.ok()) s = CheckRank(absl::StrCat(what, " (peer)"), peer);
    if (s.ok() && peer == rank) {
      s = absl::InvalidArgumentError(
          absl::StrCat(what, " on rank ", rank, " names itself as the peer"));
    }
    if (s.ok()) s = CheckTensor(what, rank, t);
    return s;
  }

  uint64_t NextTag(std::vector<uint64_t>& counts, int src, int dst) {
    absl::MutexLock lock(&mu_);
    return counts[static_cast<size_t>(src) * names_.size() +
                  static_cast<size_t>(dst)]++;
  }

  // Validates one rank's part of a collective and runs it. `output` is null
  // where the rank has none (Reduce off the root); it must hold
  // `output_count` elements.
  absl::Status Collective(NcclOp op, int rank, int root,
                          const devices::Tensor& input, devices::Tensor* output,
                          int64_t output_count,
                          const devices::CollectiveOptions& options) {
    const std::string what = CallName(op);
    absl::Status s = CheckRank(what, rank);
    if (s.ok() && (op == NcclOp::kBroadcast || op == NcclOp::kReduce)) {
      s = CheckRank(absl::StrCat(what, " (root)"), root);
    }
    if (s.ok()) s = CheckTensor(what, rank, input);
    if (s.ok() && output != nullptr) s = CheckTensor(what, rank, *output);
    RETURN_IF_ERROR(s);
    if (output != nullptr) {
      if (output->dtype() != input.dtype() ||
          output->num_elements() != output_count) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, " on rank ", rank, " needs an output of ", output_count,
            " elements of ", devices::DTypeName(input.dtype()), " but got ",
            output->DebugString()));
      }
      const bool may_alias = op == NcclOp::kAllReduce ||
                             op == NcclOp::kBroadcast || op == NcclOp::kReduce;
      if (!may_alias && Overlap(input, *output)) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, " on rank ", rank,
            ": input and output overlap; this collective needs separate "
            "buffers"));
      }
    }
    if (options.timeout <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(
          absl::StrCat(what, " on rank ", rank, " was given no time (timeout ",
                       absl::FormatDuration(options.timeout), ")"));
    }
    RETURN_IF_ERROR(state_->aborted());

    Arrival arrival;
    arrival.op = op;
    arrival.root = root;
    arrival.dtype = input.dtype();
    arrival.reduce = options.op;
    arrival.input_count = input.num_elements();
    arrival.output_count = output_count;
    arrival.input = static_cast<const std::byte*>(input.raw_data());
    arrival.output = output == nullptr
                         ? nullptr
                         : static_cast<std::byte*>(output->raw_data());
    const uint64_t seq = state_->NextCall(rank);
    const std::string call = absl::StrCat(what, " (call ", seq, ") on rank ",
                                          rank, " (", device(rank), ")");
    ParkOutcome outcome;
    {
      SimActor actor(state_->context(), call);
      outcome = actor.Park(
          call,
          [state = state_, seq, rank, arrival](ActorWakeup wake) {
            state->Arrive(state, seq, rank, arrival, wake);
          },
          options.timeout);
    }
    if (outcome.reason == WakeReason::kCompleted) {
      return state_->Leave(seq, rank, outcome.status);
    }
    absl::Status gave_up;
    if (outcome.reason == WakeReason::kDeadlock) {
      gave_up = absl::DeadlineExceededError(absl::StrCat(
          call, " can never complete: rank(s) ", state_->Missing(seq),
          " have not joined the call; ", outcome.status.message()));
    } else {
      gave_up = absl::DeadlineExceededError(
          absl::StrCat(call, " did not complete within ",
                       absl::FormatDuration(options.timeout),
                       " of host time: ", outcome.status.message()));
    }
    return state_->Leave(seq, rank, gave_up);
  }

  const std::string name_ = kSimNcclName;
  const std::shared_ptr<State> state_;
  const std::vector<std::unique_ptr<devices::Transport>> p2p_;
  const std::vector<std::string> names_;
  absl::Mutex mu_;
  std::vector<uint64_t> send_count_ ABSL_GUARDED_BY(mu_);  // [src * n + dst]
  std::vector<uint64_t> recv_count_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

absl::StatusOr<std::unique_ptr<devices::Communicator>>
CreateSimNcclCommunicator(std::shared_ptr<SimContext> context,
                          std::vector<int> devices) {
  if (devices.empty()) {
    return absl::InvalidArgumentError(
        "an NCCL communicator needs at least one device");
  }
  std::vector<std::string> names;
  std::vector<bool> used(static_cast<size_t>(context->num_devices()), false);
  for (int device : devices) {
    if (device < 0 || device >= context->num_devices()) {
      return absl::InvalidArgumentError(
          absl::StrCat("NCCL communicator names device index ", device,
                       ", outside [0, ", context->num_devices(), ")"));
    }
    if (used[static_cast<size_t>(device)]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "device ", context->device_name(device),
          " appears more than once in the NCCL communicator; each rank "
          "needs its own GPU"));
    }
    used[static_cast<size_t>(device)] = true;
    if (context->topology().device(device).kind != DeviceDef::GPU) {
      return absl::FailedPreconditionError(absl::StrCat(
          "an NCCL communicator spans GPUs only, not ",
          context->device_name(device),
          "; use CreateTransportGroup (e.g. "
          "distribute::collective::ScheduleCommunicator) for groups with "
          "CPUs or TPU cores"));
    }
    names.push_back(context->device_name(device));
  }
  ASSIGN_OR_RETURN(GroupHardware hardware,
                   DescribeGroupHardware(context->topology(), devices));
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<devices::Transport>> p2p,
                   CreateSimTransportGroup(context, devices));
  // The modeled collectives need every link of the ring through the ranks
  // (the routes DescribeGroupHardware measured): a cut one fails them.
  std::vector<int> links;
  if (devices.size() > 1) {
    for (size_t i = 0; i < devices.size(); ++i) {
      ASSIGN_OR_RETURN(
          std::vector<int> route,
          context->Route(devices[i], devices[(i + 1) % devices.size()]));
      links.insert(links.end(), route.begin(), route.end());
    }
    std::sort(links.begin(), links.end());
    links.erase(std::unique(links.begin(), links.end()), links.end());
  }
  auto state = std::make_shared<State>(std::move(context), std::move(devices),
                                       std::move(links), std::move(hardware));
  return std::unique_ptr<devices::Communicator>(new SimNcclCommunicator(
      std::move(state), std::move(p2p), std::move(names)));
}

}  // namespace simulator
