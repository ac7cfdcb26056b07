// NcclCommunicator: creation, destruction, and the machinery every
// collective shares (queueing on the rank's device, polling, aborting).
// The collectives themselves are in nccl_collectives.cc.
#include "devices/cuda/nccl_communicator.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "devices/completion.h"
#include "devices/cuda/cuda_status.h"
#include "devices/cuda/nccl_state.h"
#include "devices/status_macros.h"

namespace devices {
namespace cuda {
namespace internal {
namespace {

// The communicator's state: the error of the query itself, else its
// asynchronous result (kNcclInProgress while a non-blocking call goes on).
int AsyncResult(ncclComm* comm) {
  int async = kNcclSuccess;
  const int polled = NcclCommGetAsyncError(comm, &async);
  return polled != kNcclSuccess ? polled : async;
}

}  // namespace

absl::Status NcclStatus(int result, absl::string_view what, ncclComm* comm) {
  if (result == kNcclSuccess) return absl::OkStatus();
  const char* last = NcclLastError(comm);
  const std::string message = absl::StrCat(
      what, " failed: ", NcclErrorString(result),
      last != nullptr && last[0] != '\0' ? absl::StrCat(" (", last, ")") : "");
  switch (result) {
    case kNcclSystemError:
    case kNcclRemoteError:
      return absl::UnavailableError(
          absl::StrCat(message, "; a peer process or the network may be gone"));
    case kNcclInvalidArgument:
      return absl::InvalidArgumentError(message);
    case kNcclInvalidUsage:
      return absl::FailedPreconditionError(message);
    case kNcclInProgress:
      return absl::InternalError(
          absl::StrCat(what, " was still in progress where it should be done"));
    default:
      return absl::InternalError(message);
  }
}

absl::Status AwaitEnqueued(NcclRankState& state, int result,
                           absl::string_view what, absl::Time deadline,
                           const std::atomic<bool>* group_aborted) {
  PollBackoff backoff;
  while (result == kNcclInProgress) {
    if (state.aborted.load() ||
        (group_aborted != nullptr && group_aborted->load())) {
      return absl::UnavailableError(absl::StrCat(
          what, " was aborted while NCCL was still enqueueing it"));
    }
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          what,
          " was still being set up by NCCL (ranks connecting) at its "
          "deadline; the other ranks may not have joined"));
    }
    backoff.Pause();
    result = AsyncResult(state.comm);
  }
  return NcclStatus(result, what, state.comm);
}

void AbortRank(NcclRankState& state) {
  if (state.aborted.exchange(true)) return;
  // Work queued after this sees `aborted` and leaves the communicator
  // alone. A launch already under way gets a moment to finish; one stuck
  // inside NCCL (waiting for absent peers) is aborted under its feet, which
  // is what ncclCommAbort is for.
  const absl::Time give_up = absl::Now() + absl::Seconds(1);
  bool locked = state.mu.TryLock();
  while (!locked && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
    locked = state.mu.TryLock();
  }
  NcclCommAbort(state.comm);
  if (locked) state.mu.Unlock();
}

}  // namespace internal

using internal::AbortRank;
using internal::AwaitEnqueued;
using internal::NcclStatus;

NcclCommunicator::NcclCommunicator(
    std::vector<std::string> device_names,
    std::vector<std::shared_ptr<RankState>> ranks)
    : device_names_(std::move(device_names)),
      ranks_(std::move(ranks)),
      group_(std::make_shared<GroupState>()) {}

namespace {

// INVALID_ARGUMENT unless `devices` is a non-empty list of distinct GPUs.
absl::Status CheckDistinctGpus(const std::vector<CudaDevice*>& devices,
                               absl::string_view caller) {
  if (devices.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(caller, ": an NCCL communicator needs at least one GPU"));
  }
  std::set<int> seen;
  for (CudaDevice* device : devices) {
    if (device == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("NcclCommunicator::", caller, " got a null device"));
    }
    if (!seen.insert(device->ordinal()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("GPU ", device->name(),
                       " appears more than once; NCCL needs a "
                       "distinct GPU for each rank of a communicator"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::CreateLocal(
    std::vector<CudaDevice*> devices, absl::Duration timeout) {
  RETURN_IF_ERROR(CheckDistinctGpus(devices, "CreateLocal"));
  // What ncclCommInitAll does (a unique id, then every rank's init inside
  // one group call), with non-blocking communicators: no NCCL call then
  // blocks a queue thread, so an abort never pulls a communicator from
  // under a thread still inside NCCL, and the set-up has a deadline.
  ASSIGN_OR_RETURN(std::string id, NewUniqueId());
  std::vector<std::string> names;
  for (CudaDevice* device : devices) names.push_back(device->name());
  return CreateRanks(std::move(devices), id, /*first_rank=*/0, std::move(names),
                     timeout);
}

absl::StatusOr<std::string> NcclCommunicator::NewUniqueId() {
  std::string id(kNcclUniqueIdBytes, '\0');
  const int result = NcclGetUniqueId(id.data());
  if (result != kNcclSuccess) {
    return NcclStatus(result, "ncclGetUniqueId", nullptr);
  }
  return id;
}

absl::StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::CreateRank(
    CudaDevice& device, absl::string_view unique_id, int rank,
    std::vector<std::string> device_names, absl::Duration timeout) {
  return CreateRanks({&device}, unique_id, rank, std::move(device_names),
                     timeout);
}

absl::StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::CreateRanks(
    std::vector<CudaDevice*> devices, absl::string_view unique_id,
    int first_rank, std::vector<std::string> device_names,
    absl::Duration timeout) {
  const int size = static_cast<int>(device_names.size());
  if (unique_id.size() != static_cast<size_t>(kNcclUniqueIdBytes)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "an NCCL unique id has ", kNcclUniqueIdBytes, " bytes, not ",
        unique_id.size(), "; pass what NewUniqueId() returned, unchanged"));
  }
  RETURN_IF_ERROR(CheckDistinctGpus(devices, "CreateRanks"));
  const int count = static_cast<int>(devices.size());
  if (size < 1 || first_rank < 0 || first_rank + count > size) {
    return absl::InvalidArgumentError(
        count == 1
            ? absl::StrCat("rank ", first_rank, " is outside an NCCL group of ",
                           size, " ranks")
            : absl::StrCat("ranks ", first_rank, "..", first_rank + count - 1,
                           " are not all inside an NCCL group of ", size,
                           " ranks"));
  }
  std::string what;
  if (count == 1) {
    what = absl::StrCat("NCCL communicator init of rank ", first_rank, " of ",
                        size, " on ", devices[0]->name());
  } else {
    std::vector<std::string> names;
    for (CudaDevice* device : devices) names.push_back(device->name());
    what = absl::StrCat("NCCL communicator init of ranks ", first_rank, "..",
                        first_rank + count - 1, " of ", size, " on ",
                        absl::StrJoin(names, ", "));
  }
  // One thread joining several ranks must do so inside one group call (each
  // ncclCommInitRank would otherwise wait for the others to join).
  std::vector<ncclComm*> comms(devices.size(), nullptr);
  absl::Status setup;
  int result = count > 1 ? NcclGroupStart() : kNcclSuccess;
  for (int i = 0; i < count && setup.ok(); ++i) {
    if (result != kNcclSuccess && result != kNcclInProgress) break;
    ScopedCudaDevice on_device(devices[i]->ordinal());
    if (!on_device.status().ok()) {
      setup = on_device.status();
      break;
    }
    result = NcclCommInitRankNonBlocking(&comms[i], size, unique_id.data(),
                                         first_rank + i);
  }
  if (count > 1) {
    const int ended = NcclGroupEnd();
    if (result == kNcclSuccess || result == kNcclInProgress) result = ended;
  }
  std::vector<std::shared_ptr<RankState>> states;
  for (int i = 0; i < count; ++i) {
    if (comms[i] == nullptr) continue;
    states.push_back(
        std::make_shared<RankState>(first_rank + i, devices[i], comms[i]));
  }
  auto abort_all = [&] {
    for (const std::shared_ptr<RankState>& state : states) AbortRank(*state);
  };
  if (!setup.ok() || (result != kNcclSuccess && result != kNcclInProgress) ||
      static_cast<int>(states.size()) != count) {
    abort_all();
    RETURN_IF_ERROR(setup);
    return NcclStatus(result == kNcclSuccess ? kNcclInternalError : result,
                      what, nullptr);
  }
  const absl::Time deadline = absl::Now() + timeout;
  for (const std::shared_ptr<RankState>& state : states) {
    absl::Status init = AwaitEnqueued(*state, result, what, deadline);
    if (init.ok()) continue;
    abort_all();
    if (absl::IsDeadlineExceeded(init)) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "%s did not complete within %gs: %s", what,
          absl::ToDoubleSeconds(timeout),
          count == size ? "NCCL did not connect this process's own ranks"
                        : "the other ranks did not all join; each process "
                          "must call CreateRank(s) with the same unique id "
                          "and its own ranks"));
    }
    return init;
  }
  std::vector<std::shared_ptr<RankState>> ranks(device_names.size());
  for (std::shared_ptr<RankState>& state : states) {
    const int rank = state->rank;
    ranks[rank] = std::move(state);
  }
  return std::unique_ptr<NcclCommunicator>(
      new NcclCommunicator(std::move(device_names), std::move(ranks)));
}

NcclCommunicator::~NcclCommunicator() {
  // Communicators flush first (ncclCommFinalize) and are destroyed once
  // that is done, or aborted rather than hang. Every local
  // rank's finalize is started before any is waited for: NCCL may make a
  // rank's finalize wait for the other ranks of its host, so finalizing one
  // rank at a time could wait out each one's grace and abort them all.
  // A group already aborted (a failed replica, a dead worker) is not
  // flushed: its ranks are aborted at once.
  const bool group_aborted = group_->aborted.load();
  std::vector<RankState*> finalizing;
  std::vector<int> results;
  for (const std::shared_ptr<RankState>& state : ranks_) {
    if (state == nullptr) continue;
    if (group_aborted) {
      // Not after a wait for the rank's lock: a launch stuck inside NCCL
      // (waiting for absent peers) holds it; AbortRank aborts under it.
      AbortRank(*state);
      continue;
    }
    // Marked first, so that work still queued leaves the rank alone.
    if (state->aborted.exchange(true)) continue;
    state->mu.Lock();
    finalizing.push_back(state.get());  // Stays locked until destroyed.
    results.push_back(NcclCommFinalize(state->comm));
  }
  const absl::Time give_up = absl::Now() + absl::Seconds(10);
  bool pending = true;
  while (pending) {
    pending = false;
    for (size_t i = 0; i < finalizing.size(); ++i) {
      if (results[i] != kNcclInProgress) continue;
      results[i] = internal::AsyncResult(finalizing[i]->comm);
      pending = pending || results[i] == kNcclInProgress;
    }
    if (!pending || absl::Now() >= give_up) break;
    absl::SleepFor(absl::Microseconds(100));
  }
  for (size_t i = 0; i < finalizing.size(); ++i) {
    if (results[i] == kNcclSuccess) {
      NcclCommDestroy(finalizing[i]->comm);
    } else {
      NcclCommAbort(finalizing[i]->comm);
    }
    finalizing[i]->mu.Unlock();
  }
}

const std::string& NcclCommunicator::device(int rank) const {
  static const std::string* const kNone = new std::string();
  return rank >= 0 && rank < size() ? device_names_[rank] : *kNone;
}

bool NcclCommunicator::IsLocal(int rank) const {
  return rank >= 0 && rank < size() && ranks_[rank] != nullptr;
}

bool NcclCommunicator::aborted() const { return group_->aborted.load(); }

std::string NcclCommunicator::Describe(absl::string_view collective,
                                       int rank) const {
  return absl::StrCat("NCCL ", collective, " on rank ", rank, " of ", size(),
                      " (", device(rank), ")");
}

absl::Status NcclCommunicator::AbortedError(absl::string_view what) const {
  absl::MutexLock lock(&group_->mu);
  return absl::UnavailableError(absl::StrCat(
      what, ": the NCCL communicator was aborted (", group_->reason.message(),
      "); it cannot be used again: make a new one (across "
      "workers, every worker must restart)"));
}

absl::StatusOr<std::shared_ptr<NcclCommunicator::RankState>>
NcclCommunicator::Local(int rank, absl::string_view collective) const {
  if (rank < 0 || rank >= size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("NCCL ", collective, ": rank ", rank,
                     " is outside the group of ", size(), " ranks"));
  }
  if (ranks_[rank] == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("NCCL ", collective, ": rank ", rank,
                     " is driven by another process, not this one"));
  }
  if (group_->aborted.load()) {
    AbortRank(*ranks_[rank]);
    return AbortedError(Describe(collective, rank));
  }
  return ranks_[rank];
}

absl::Status NcclCommunicator::CheckTensor(const RankState& state,
                                           absl::string_view collective,
                                           absl::string_view role,
                                           const Tensor& tensor) const {
  if (tensor.device() != state.device->name()) {
    return absl::InvalidArgumentError(absl::StrCat(
        Describe(collective, state.rank), ": ", role, " ", tensor.DebugString(),
        " is not on the rank's GPU ", state.device->name()));
  }
  if (!tensor.has_data()) {
    return absl::InvalidArgumentError(
        absl::StrCat(Describe(collective, state.rank), ": ", role, " ",
                     tensor.DebugString(), " has no data"));
  }
  return absl::OkStatus();
}

absl::Status NcclCommunicator::Abort(absl::Status reason) {
  if (reason.ok()) {
    return absl::InvalidArgumentError(
        "NcclCommunicator::Abort needs a non-OK reason");
  }
  // No ncclCommAbort here: a rank's communicator is aborted by the thread
  // that drives it (Await and Local see the flag), never under its feet.
  AbortGroup(reason, {});
  return absl::OkStatus();
}

void NcclCommunicator::AbortGroup(
    const absl::Status& reason,
    const std::vector<std::shared_ptr<RankState>>& states) {
  {
    absl::MutexLock lock(&group_->mu);
    if (!group_->aborted.load()) {
      group_->reason = reason;
      group_->aborted.store(true);
    }
  }
  for (const auto& state : states) AbortRank(*state);
}

absl::Status NcclCommunicator::Run(const std::shared_ptr<RankState>& state,
                                   absl::string_view collective, int64_t bytes,
                                   const CollectiveOptions& options,
                                   Launch launch) {
  const absl::Time deadline = absl::Now() + options.timeout;
  std::string what = Describe(collective, state->rank);
  std::shared_ptr<CudaEvent> event = state->device->EnqueueCuda(
      KernelCost{absl::StrCat("Nccl", collective), 0,
                 2 * static_cast<double>(bytes)},
      [state, group = group_, what, deadline,
       launch = std::move(launch)]() mutable -> absl::Status {
        absl::MutexLock lock(&state->mu);
        if (state->aborted.load() || group->aborted.load()) {
          return absl::UnavailableError(absl::StrCat(
              what, " was not started: the communicator was aborted"));
        }
        const int result = launch(state->comm, state->device->stream());
        return AwaitEnqueued(*state, result, what, deadline, &group->aborted);
      });
  return Await(what, {state}, {event}, deadline, options.timeout);
}

absl::Status NcclCommunicator::Await(
    const std::string& what,
    const std::vector<std::shared_ptr<RankState>>& states,
    const std::vector<std::shared_ptr<CudaEvent>>& events, absl::Time deadline,
    absl::Duration timeout) {
  std::vector<bool> done(events.size(), false);
  PollBackoff backoff;
  while (true) {
    if (group_->aborted.load()) {
      for (const auto& state : states) AbortRank(*state);
      return AbortedError(what);
    }
    bool all_done = true;
    for (size_t i = 0; i < events.size(); ++i) {
      if (done[i]) continue;
      std::optional<absl::Status> status = events[i]->Poll();
      if (!status.has_value()) {
        all_done = false;
        continue;
      }
      if (!status->ok()) {
        AbortGroup(*status, states);
        return *status;
      }
      done[i] = true;
    }
    if (all_done) return absl::OkStatus();
    for (const auto& state : states) {
      const int result = internal::AsyncResult(state->comm);
      if (result != kNcclSuccess && result != kNcclInProgress) {
        absl::Status status = NcclStatus(result, what, state->comm);
        if (!absl::IsUnavailable(status)) {
          status = absl::InternalError(status.message());
        }
        AbortGroup(status, states);
        return status;
      }
    }
    if (absl::Now() >= deadline) {
      absl::Status status = absl::DeadlineExceededError(absl::StrFormat(
          "%s did not complete within %gs; the other ranks of the group "
          "(ranks 0..%d) may not have joined this collective, or a GPU is "
          "stuck. The communicator has been aborted (ncclCommAbort); create "
          "a new one",
          what, absl::ToDoubleSeconds(timeout), size() - 1));
      AbortGroup(status, states);
      return status;
    }
    backoff.Pause();
  }
}

}  // namespace cuda
}  // namespace devices
