// ReplicaContext: MergeCall, AllReduce, AllGather, Execute.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "devices/device.h"
#include "devices/status_macros.h"
#include "distribute/cross_device_ops.h"
#include "distribute/run_state.h"
#include "distribute/strategy.h"

namespace distribute {

void RunState::ReplicaFinished(int replica) {
  absl::MutexLock lock(&mu);
  ++finished;
  if (arrived > 0 && failure.ok()) {
    failure = absl::FailedPreconditionError(absl::StrCat(
        "replica ", replica,
        " returned from the function without calling merge_call, which ",
        arrived,
        " other replica(s) wait in; every replica must make the "
        "same merge_call calls"));
    // The waiters wake, see the failure and resume their own bindings.
    cv.SignalAll();
  }
}

int ReplicaContext::ReplicaIdInSyncGroup() const {
  return strategy_->extended().ReplicaIdOffset() + replica_id_;
}

int ReplicaContext::NumReplicasInSync() const {
  return strategy_->NumReplicasInSync();
}

const std::string& ReplicaContext::device_name() const {
  return strategy_->extended().WorkerDevices()[replica_id_];
}

devices::Device& ReplicaContext::device() const {
  // Worker devices were resolved when the strategy was made.
  return **strategy_->extended().platform().FindDevice(device_name());
}

absl::StatusOr<std::vector<devices::Tensor>> ReplicaContext::MergeCall(
    const MergeFn& fn, const std::vector<devices::Tensor>& args) {
  if (run_ == nullptr) {
    // The default replica context: one replica, run it right here.
    internal::ModeSwitch cross({strategy_, nullptr, 0, false});
    std::vector<PerReplica> gathered;
    for (const devices::Tensor& a : args) gathered.emplace_back(std::vector{a});
    ASSIGN_OR_RETURN(std::vector<RunArg> out, fn(*strategy_, gathered));
    std::vector<devices::Tensor> mine;
    for (const RunArg& v : out) {
      if (const auto* t = std::get_if<devices::Tensor>(&v)) {
        mine.push_back(*t);
      } else {
        mine.push_back(std::get<DistributedValues>(v).value(0));
      }
    }
    return mine;
  }
  RunState& run = *run_;
  const absl::Duration timeout = kDefaultCollectiveTimeout;
  absl::MutexLock lock(&run.mu);
  RETURN_IF_ERROR(run.failure);
  if (run.finished > 0) {
    run.failure = absl::FailedPreconditionError(absl::StrCat(
        "replica ", replica_id_,
        " called merge_call after another replica returned from the "
        "function; every replica must make the same merge_call calls"));
    run.cv.SignalAll();
    return run.failure;
  }
  run.merge_args[replica_id_] = args;
  ++run.arrived;
  const uint64_t generation = run.generation;
  if (run.arrived == run.num_replicas) {
    // The last replica to arrive runs fn in the cross-replica context.
    std::vector<PerReplica> gathered;
    absl::Status shape_error;
    for (size_t k = 0; k < args.size(); ++k) {
      std::vector<devices::Tensor> comps;
      for (int r = 0; r < run.num_replicas; ++r) {
        if (run.merge_args[r].size() != args.size()) {
          shape_error = absl::InvalidArgumentError(absl::StrCat(
              "merge_call: replica ", r, " passed ", run.merge_args[r].size(),
              " arguments but replica ", replica_id_, " passed ", args.size()));
          break;
        }
        comps.push_back(run.merge_args[r][k]);
      }
      gathered.emplace_back(std::move(comps));
    }
    absl::StatusOr<std::vector<RunArg>> result =
        absl::UnknownError("merge function did not run");
    if (!shape_error.ok()) {
      result = shape_error;
    } else {
      run.mu.Unlock();
      {
        internal::ModeSwitch cross({strategy_, nullptr, 0, false});
        result = fn(*strategy_, gathered);
      }
      run.mu.Lock();
    }
    run.merge_result = std::move(result);
    run.arrived = 0;
    ++run.generation;
    // Resume the waiting replicas before they are released, so that a
    // simulator counts them as running again before this thread can block.
    for (int r = 0; r < run.num_replicas; ++r) {
      if (r != replica_id_ && run.bindings[r] != nullptr) {
        run.bindings[r]->Resume();
        run.resumed[r] = true;
      }
    }
    run.cv.SignalAll();
  } else {
    devices::BlockingRegion outside;
    const absl::Time deadline = absl::Now() + timeout;
    while (run.generation == generation && run.failure.ok()) {
      if (run.cv.WaitWithDeadline(&run.mu, deadline)) {
        if (run.generation == generation && run.failure.ok()) {
          run.failure = absl::DeadlineExceededError(
              absl::StrCat("merge_call: replica ", replica_id_, " waited ",
                           absl::FormatDuration(timeout),
                           " for the other replicas to make the same call"));
          run.cv.SignalAll();
        }
      }
    }
    if (run.resumed[replica_id_]) {
      run.resumed[replica_id_] = false;
      outside.MarkResumed();
    }
    if (run.generation == generation) return run.failure;
  }
  RETURN_IF_ERROR(run.merge_result.status());
  std::vector<devices::Tensor> mine;
  for (const RunArg& v : *run.merge_result) {
    if (const auto* t = std::get_if<devices::Tensor>(&v)) {
      mine.push_back(*t);
    } else {
      const DistributedValues& d = std::get<DistributedValues>(v);
      if (d.num_replicas() != run.num_replicas) {
        return absl::InvalidArgumentError(absl::StrCat(
            "merge_call's function returned a distributed value of ",
            d.num_replicas(), " components for ", run.num_replicas,
            " replicas"));
      }
      mine.push_back(d.value(replica_id_));
    }
  }
  return mine;
}

absl::StatusOr<std::vector<devices::Tensor>> ReplicaContext::AllReduce(
    ReduceOp op, const std::vector<devices::Tensor>& values,
    const CommunicationOptions& options) {
  if (run_ == nullptr || NumReplicasInSync() == 1) {
    return values;  // One replica: the reduction of one value is itself.
  }
  return strategy_->extended().cross_device_ops().ReplicaAllReduce(
      replica_id_, op, values, options);
}

namespace {

// dst[j][i][k] = src[i][j][k] for a [d0, d1, inner] view of `elem`-byte
// elements: moves a middle axis to the front, or the front axis back.
void SwapLeadingAxes(const std::byte* src, std::byte* dst, int64_t d0,
                     int64_t d1, int64_t inner, size_t elem) {
  const size_t row = static_cast<size_t>(inner) * elem;
  for (int64_t i = 0; i < d0; ++i) {
    for (int64_t j = 0; j < d1; ++j) {
      std::memcpy(dst + (j * d0 + i) * row, src + (i * d1 + j) * row, row);
    }
  }
}

// A tensor of `shape` on `device` holding `src` (a [d0, d1, inner] view)
// with its two leading axes swapped. Device memory is staged through the
// host; shape-only inputs give a shape-only output.
absl::StatusOr<devices::Tensor> SwapOnDevice(devices::Device& device,
                                             const devices::Tensor& src,
                                             const devices::Shape& shape,
                                             int64_t d0, int64_t d1,
                                             int64_t inner) {
  absl::StatusOr<devices::Tensor> out = device.Allocate(src.dtype(), shape);
  if (!out.ok() || !src.has_data() || !out->has_data()) return out;
  devices::Tensor in = src;
  if (!in.host_accessible()) {
    ASSIGN_OR_RETURN(devices::Tensor staged,
                     devices::Tensor::Host(src.dtype(), src.shape()));
    RETURN_IF_ERROR(device.CopyToHost(src, staged.raw_data()));
    in = std::move(staged);
  }
  devices::Tensor result = *out;
  if (!result.host_accessible()) {
    ASSIGN_OR_RETURN(devices::Tensor staged,
                     devices::Tensor::Host(src.dtype(), shape));
    result = std::move(staged);
  }
  SwapLeadingAxes(static_cast<const std::byte*>(in.raw_data()),
                  static_cast<std::byte*>(result.raw_data()), d0, d1, inner,
                  devices::DTypeSize(src.dtype()));
  if (!out->host_accessible()) {
    RETURN_IF_ERROR(device.CopyFromHost(result.raw_data(), *out));
  }
  return out;
}

// The gathered values of an int64 [1, k] tensor from every replica, on the
// host ([n, k]); shape-only (no data) on timing-only devices.
absl::StatusOr<devices::Tensor> GatherInts(
    CrossDeviceOps& ops, devices::Device& device, int replica,
    const std::vector<int64_t>& values, const CommunicationOptions& options) {
  const devices::Shape shape({1, static_cast<int64_t>(values.size())});
  // On a device with memory of its own (a GPU), from host memory: the
  // all-gather moves host values without copying them in first.
  ASSIGN_OR_RETURN(
      devices::Tensor mine,
      device.allocator().memory_space() == devices::MemorySpace::kDevice
          ? devices::Tensor::Host(devices::DType::kInt64, shape)
          : device.Allocate(devices::DType::kInt64, shape));
  if (mine.host_accessible()) {
    std::memcpy(mine.raw_data(), values.data(), mine.bytes());
  } else if (mine.has_data()) {
    RETURN_IF_ERROR(device.CopyFromHost(values.data(), mine));
  }
  absl::StatusOr<devices::Tensor> all =
      ops.ReplicaAllGather(replica, mine, options);
  if (!all.ok() || all->host_accessible() || !all->has_data()) return all;
  ASSIGN_OR_RETURN(devices::Tensor host,
                   devices::Tensor::Host(all->dtype(), all->shape()));
  RETURN_IF_ERROR(device.CopyToHost(*all, host.raw_data()));
  return host;
}

}  // namespace

absl::StatusOr<devices::Tensor> ReplicaContext::AllGather(
    const devices::Tensor& value, int axis,
    const CommunicationOptions& options) {
  const int rank = value.shape().rank();
  // A scalar counts as [1]: gathered along axis 0 like a vector.
  const bool vector_like = rank <= 1;
  if (!(vector_like && axis == 0) && (axis < -rank || axis >= rank)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "AllGather: axis ", axis, " is out of range for a value of shape ",
        value.shape().DebugString(), "; use an axis in [", -rank, ", ", rank,
        ") (negative axes count from the end)"));
  }
  const int a = axis < 0 ? axis + rank : axis;
  if (run_ == nullptr || NumReplicasInSync() == 1) return value;
  auto effective_rank = [](int64_t r) { return std::max<int64_t>(r, 1); };
  CrossDeviceOps& ops = strategy_->extended().cross_device_ops();
  devices::Device& dev = device();
  // Every replica's shape must match this one except along the axis
  // (checked where the values are known, i.e. not on timing-only devices).
  std::vector<int64_t> my_shape = {rank};
  for (int i = 0; i < rank; ++i) my_shape.push_back(value.shape().dim(i));
  ASSIGN_OR_RETURN(devices::Tensor ranks,
                   GatherInts(ops, dev, replica_id_, {rank}, options));
  if (ranks.has_data()) {
    for (int r = 0; r < ranks.num_elements(); ++r) {
      if (effective_rank(ranks.data<int64_t>()[r]) != effective_rank(rank)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "AllGather: replica ", r, "'s value has rank ",
            ranks.data<int64_t>()[r], " but replica ", ReplicaIdInSyncGroup(),
            "'s has rank ", rank, " (shape ", value.shape().DebugString(),
            "); every replica must gather values of one rank"));
      }
    }
  }
  // Vectors (and scalars) have no dimension but the axis to compare.
  if (ranks.has_data() && !vector_like) {
    ASSIGN_OR_RETURN(devices::Tensor shapes,
                     GatherInts(ops, dev, replica_id_, my_shape, options));
    for (int r = 0; r < shapes.shape().dim(0); ++r) {
      const int64_t* dims = shapes.data<int64_t>() + r * (rank + 1) + 1;
      for (int i = 0; i < rank; ++i) {
        if (i != a && dims[i] != value.shape().dim(i)) {
          return absl::InvalidArgumentError(absl::StrCat(
              "AllGather along axis ", axis, ": replica ", r, " has dimension ",
              i, " = ", dims[i], " but replica ", ReplicaIdInSyncGroup(),
              " has ", value.shape().dim(i), " (shape ",
              value.shape().DebugString(),
              "); shapes must match in every dimension but the axis"));
        }
      }
    }
  }
  if (a == 0) {
    return ops.ReplicaAllGather(replica_id_, value, options);
  }
  // Move the axis to the front, gather along axis 0, move it back.
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < a; ++i) outer *= value.shape().dim(i);
  for (int i = a + 1; i < rank; ++i) inner *= value.shape().dim(i);
  const int64_t len = value.shape().dim(a);
  ASSIGN_OR_RETURN(devices::Tensor front,
                   SwapOnDevice(dev, value, devices::Shape({len, outer, inner}),
                                outer, len, inner));
  ASSIGN_OR_RETURN(devices::Tensor gathered,
                   ops.ReplicaAllGather(replica_id_, front, options));
  const int64_t total = gathered.shape().dim(0);
  std::vector<int64_t> dims(value.shape().dims().begin(),
                            value.shape().dims().end());
  dims[a] = total;
  ASSIGN_OR_RETURN(devices::Shape shape, devices::Shape::Make(dims));
  return SwapOnDevice(dev, gathered, shape, total, outer, inner);
}

absl::Status ReplicaContext::Execute(const devices::KernelCost& cost,
                                     absl::AnyInvocable<absl::Status()> fn) {
  std::shared_ptr<devices::Event> event = device().Enqueue(cost, std::move(fn));
  return event->Wait(kDefaultCollectiveTimeout);
}

}  // namespace distribute
