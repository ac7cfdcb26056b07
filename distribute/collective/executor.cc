#include "distribute/collective/executor.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "devices/reduce_kernels.h"
#include "devices/status_macros.h"

namespace distribute {
namespace collective {
namespace {

// Resolves BufferRanges of one rank to bytes.
class Buffers {
 public:
  Buffers(const void* input, void* output, std::byte* scratch, size_t elem)
      : input_(static_cast<const std::byte*>(input)),
        output_(static_cast<std::byte*>(output)),
        scratch_(scratch),
        elem_(elem) {}

  bool timing_only() const { return input_ == nullptr && output_ == nullptr; }

  const std::byte* Read(const BufferRange& r) const {
    const std::byte* base = r.buffer == BufferKind::kInput    ? input_
                            : r.buffer == BufferKind::kOutput ? output_
                                                              : scratch_;
    return base == nullptr ? nullptr : base + r.offset * elem_;
  }

  std::byte* Write(const BufferRange& r) const {
    // Programs never write their input (schedule.h); the checker proves it.
    std::byte* base = r.buffer == BufferKind::kOutput ? output_ : scratch_;
    return base == nullptr ? nullptr : base + r.offset * elem_;
  }

  size_t Bytes(const BufferRange& r) const { return r.count * elem_; }

 private:
  const std::byte* input_;
  std::byte* output_;
  std::byte* scratch_;
  size_t elem_;
};

// Whether this rank's output holds a full reduction that kMean must divide.
bool HoldsFullReduction(const Schedule& s, int rank) {
  switch (s.op) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kReduceScatter:
      return true;
    case CollectiveOp::kReduce:
      return rank == s.options.root;
    default:
      return false;
  }
}

// Buffers a thread reuses from one collective to the next, so that a
// steady stream of collectives allocates nothing here: the scratch buffer
// (kept up to kMaxRetainedScratchBytes; larger ones are freed after the
// call) and the table of pending requests (always emptied before the call
// returns, which destroys, and so cancels, whatever is still pending).
// Should a transport ever run another collective on the same thread from
// inside a wait, that nested call uses buffers of its own (in_use).
constexpr size_t kMaxRetainedScratchBytes = size_t{64} << 20;

struct ThreadBuffers {
  bool in_use = false;
  std::unique_ptr<std::byte[]> scratch;
  size_t scratch_bytes = 0;
  std::vector<std::unique_ptr<devices::Request>> pending;
};

ThreadBuffers& LocalBuffers() {
  thread_local ThreadBuffers buffers;
  return buffers;
}

// Scratch of at least `bytes` bytes (contents undefined).
std::byte* AcquireScratch(ThreadBuffers& local, size_t bytes) {
  if (local.scratch_bytes < bytes) {
    local.scratch.reset();  // Free the old one before taking a larger one.
    local.scratch.reset(new std::byte[bytes]);
    local.scratch_bytes = bytes;
  }
  return local.scratch.get();
}

const char* StepName(StepKind kind) {
  switch (kind) {
    case StepKind::kSend:
      return "send";
    case StepKind::kRecv:
      return "recv";
    case StepKind::kReduce:
      return "reduce";
    case StepKind::kCopy:
      return "copy";
  }
  return "step";
}

}  // namespace

absl::Status ExecuteSchedule(const Schedule& schedule,
                             devices::Transport& transport, const void* input,
                             void* output, const ExecuteOptions& exec) {
  const int rank = transport.rank();
  if (transport.size() != schedule.group_size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the transport group has ", transport.size(),
        " ranks but the schedule was built for ", schedule.group_size()));
  }
  const RankProgram& program = schedule.ranks[rank];
  if ((input == nullptr) != (output == nullptr) &&
      (program.input_count > 0 || program.output_count > 0)) {
    return absl::InvalidArgumentError(
        "input and output must both hold data or both be null (timing-only)");
  }
  const size_t elem = devices::DTypeSize(exec.dtype);
  const absl::Time deadline = absl::Now() + exec.timeout;

  std::optional<ThreadBuffers> nested;
  ThreadBuffers& local =
      LocalBuffers().in_use ? nested.emplace() : LocalBuffers();
  local.in_use = true;
  std::byte* scratch = nullptr;
  if (input != nullptr && program.scratch_count > 0) {
    scratch = AcquireScratch(local,
                             static_cast<size_t>(program.scratch_count) * elem);
  }
  Buffers buffers(input, output, scratch, elem);
  const devices::ReduceOp accumulate_op =
      exec.op == devices::ReduceOp::kMean ? devices::ReduceOp::kSum : exec.op;

  // Requests of posted sends and receives, by step index; null once done.
  std::vector<std::unique_ptr<devices::Request>>& pending = local.pending;
  pending.resize(program.steps.size());
  absl::Cleanup release = [&local] {
    // Destroying a request that is still pending (on an error path)
    // cancels it, as the Transport contract says.
    local.pending.clear();
    if (local.scratch_bytes > kMaxRetainedScratchBytes) {
      local.scratch.reset();
      local.scratch_bytes = 0;
    }
    local.in_use = false;
  };

  auto fail = [&](absl::Status status) {
    if (exec.abort_on_error) transport.Abort(status).IgnoreError();
    return status;
  };
  auto wait_for = [&](int32_t index) -> absl::Status {
    std::unique_ptr<devices::Request>& request = pending[index];
    if (request == nullptr) return absl::OkStatus();
    // A completed request needs no clock read: waiting zero returns its
    // status at once.
    absl::Duration left = absl::ZeroDuration();
    if (!request->IsComplete()) {
      left = std::max(deadline - absl::Now(), absl::ZeroDuration());
    }
    absl::Status status = request->Wait(left);
    request.reset();
    if (!status.ok()) {
      const Step& step = program.steps[index];
      return absl::Status(
          status.code(), absl::StrCat("collective rank ", rank, " step ", index,
                                      " (", StepName(step.kind), " with rank ",
                                      step.peer, "): ", status.message()));
    }
    return absl::OkStatus();
  };

  const auto post_recv = [&](size_t i) -> absl::Status {
    const Step& step = program.steps[i];
    absl::Span<std::byte> data(buffers.Write(step.dst),
                               buffers.Bytes(step.dst));
    ASSIGN_OR_RETURN(
        auto request,
        transport.Recv(step.peer,
                       exec.tag_base + static_cast<uint64_t>(step.tag), data));
    pending[i] = std::move(request);
    return absl::OkStatus();
  };
  // On transports that prefer it, receives that wait for nothing are posted
  // up front (the schedule contract allows any order that respects deps),
  // so their data lands in place however early it comes instead of being
  // staged and copied (grpc+tcp, 2 processes, 4 MiB: the all-gather's
  // message used to arrive while this rank still reduced).
  const bool early = transport.prefers_early_receives();
  auto posted_early = [early](const Step& step) {
    return early && step.kind == StepKind::kRecv && step.deps.empty();
  };
  for (size_t i = 0; early && i < program.steps.size(); ++i) {
    if (!posted_early(program.steps[i])) continue;
    absl::Status s = post_recv(i);
    if (!s.ok()) return fail(s);
  }

  for (size_t i = 0; i < program.steps.size(); ++i) {
    const Step& step = program.steps[i];
    if (posted_early(step)) continue;
    for (int32_t dep : step.deps) {
      absl::Status s = wait_for(dep);
      if (!s.ok()) return fail(s);
    }
    const uint64_t tag = exec.tag_base + static_cast<uint64_t>(step.tag);
    switch (step.kind) {
      case StepKind::kSend: {
        absl::Span<const std::byte> data(buffers.Read(step.src),
                                         buffers.Bytes(step.src));
        auto request = transport.Send(step.peer, tag, data);
        if (!request.ok()) return fail(request.status());
        pending[i] = *std::move(request);
        break;
      }
      case StepKind::kRecv: {
        absl::Status s = post_recv(i);
        if (!s.ok()) return fail(s);
        break;
      }
      case StepKind::kReduce: {
        if (buffers.timing_only()) break;
        auto cost = devices::Accumulate(accumulate_op, buffers.Read(step.src),
                                        buffers.Write(step.dst), step.dst.count,
                                        exec.dtype);
        if (!cost.ok()) return fail(cost.status());
        break;
      }
      case StepKind::kCopy: {
        if (buffers.timing_only()) break;
        void* dst = buffers.Write(step.dst);
        const void* src = buffers.Read(step.src);
        // In place (a broadcast root's tensor): no write, so that replicas
        // broadcasting one shared input do not race on it.
        if (dst != src) std::memmove(dst, src, buffers.Bytes(step.src));
        break;
      }
    }
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    absl::Status s = wait_for(static_cast<int32_t>(i));
    if (!s.ok()) return fail(s);
  }
  if (exec.op == devices::ReduceOp::kMean && !buffers.timing_only() &&
      HoldsFullReduction(schedule, rank) && program.output_count > 0) {
    ASSIGN_OR_RETURN(auto cost,
                     devices::FinalizeMean(output, program.output_count,
                                           exec.dtype, schedule.group_size()));
  }
  return absl::OkStatus();
}

}  // namespace collective
}  // namespace distribute
