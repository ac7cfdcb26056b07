#include "distribute/collective/schedule_communicator.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/collective/builders.h"
#include "distribute/collective/executor.h"

namespace distribute {
namespace collective {
namespace {

// Point-to-point messages use tags above every collective instance's range.
constexpr uint64_t kPointToPointTagBase = uint64_t{1} << 63;

// In-place calls copy their input into a buffer of the rank's, kept for the
// next in-place call up to this size (larger ones are freed after the call).
constexpr size_t kMaxRetainedCopyBytes = size_t{64} << 20;

absl::Status CheckSameDtype(const devices::Tensor& a, const devices::Tensor& b,
                            absl::string_view what) {
  if (a.dtype() != b.dtype()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": input is ", devices::DTypeName(a.dtype()),
                     " but output is ", devices::DTypeName(b.dtype())));
  }
  if (a.has_data() != b.has_data()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what,
        ": input and output must both hold data or both be shape-only, "
        "but the input is ",
        a.DebugString(), " and the output ", b.DebugString()));
  }
  return absl::OkStatus();
}

absl::Status CheckElements(const devices::Tensor& t, int64_t expected,
                           absl::string_view what, absl::string_view role) {
  if (t.num_elements() != expected) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": the ", role, " has ", t.num_elements(),
                     " elements but this collective needs ", expected,
                     " (shape ", t.shape().DebugString(), ")"));
  }
  return absl::OkStatus();
}

}  // namespace

GroupCosts SharedMemoryCosts(int32_t ranks, int32_t cpus) {
  GroupCosts costs;
  costs.n = ranks;
  costs.ranks_per_node = 0;  // One node.
  costs.intra_bw_Bps = 10e9;
  costs.intra_latency_us = 1.0;
  costs.step_overhead_us = ranks > std::max(cpus, 1) ? 100.0 : 5.0;
  costs.reduce_bw_Bps = 5e9;
  costs.bisection_fraction = 0.5;
  return costs;
}

absl::StatusOr<std::unique_ptr<ScheduleCommunicator>>
ScheduleCommunicator::Create(
    std::vector<std::unique_ptr<devices::Transport>> endpoints,
    ScheduleCommunicatorOptions options) {
  if (endpoints.empty()) {
    return absl::InvalidArgumentError(
        "ScheduleCommunicator needs at least one transport endpoint");
  }
  const int size = endpoints.front()->size();
  std::vector<std::unique_ptr<devices::Transport>> by_rank(size);
  for (auto& e : endpoints) {
    if (e == nullptr || e->size() != size) {
      return absl::InvalidArgumentError(
          "all transport endpoints must belong to one group of the same size");
    }
    const int r = e->rank();
    if (r < 0 || r >= size || by_rank[r] != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "transport endpoint rank ", r, " is out of range or given twice"));
    }
    by_rank[r] = std::move(e);
  }
  options.costs.n = size;
  RETURN_IF_ERROR(ValidateGroupCosts(options.costs));
  return absl::WrapUnique(
      new ScheduleCommunicator(std::move(by_rank), std::move(options), size));
}

ScheduleCommunicator::ScheduleCommunicator(
    std::vector<std::unique_ptr<devices::Transport>> endpoints,
    ScheduleCommunicatorOptions options, int size)
    : options_(std::move(options)),
      size_(size),
      endpoints_(std::move(endpoints)) {
  ranks_.reserve(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r)
    ranks_.push_back(std::make_unique<RankState>());
  // Host threads: every rank is here and may read its peers' buffers.
  bool all_here = true;
  for (const auto& e : endpoints_) all_here &= e != nullptr;
  if (all_here && options_.shared_memory_all_reduce &&
      !options_.all_reduce_algorithm.has_value()) {
    devices::DirectAccessGroup* direct = endpoints_[0]->direct_access();
    if (direct != nullptr && direct->size() == size_) {
      shared_ = std::make_unique<SharedMemoryAllReduce>(*direct,
                                                        options_.shared_memory);
    }
  }
}

const std::string& ScheduleCommunicator::device(int rank) const {
  for (const auto& e : endpoints_) {
    if (e != nullptr) return e->device(rank);
  }
  static const std::string* const kNone = new std::string();
  return *kNone;
}

absl::StatusOr<devices::Transport*> ScheduleCommunicator::Endpoint(int rank) {
  if (rank < 0 || rank >= size_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank ", rank, " is outside the group of ", size_, " ranks"));
  }
  if (endpoints_[rank] == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "rank ", rank, " is not driven by this process's communicator"));
  }
  return endpoints_[rank].get();
}

absl::StatusOr<std::shared_ptr<const Schedule>>
ScheduleCommunicator::GetSchedule(CollectiveOp op, Algorithm algorithm,
                                  const ScheduleOptions& o) {
  const auto key = std::make_tuple(
      static_cast<int>(op), static_cast<int>(algorithm), o.group_size, o.count,
      o.num_chunks, o.chunk_elements, o.root, o.ranks_per_node);
  auto cached = [&]() -> std::shared_ptr<const Schedule> {
    absl::ReaderMutexLock lock(&mu_);
    auto it = schedules_.find(key);
    return it == schedules_.end() ? nullptr : it->second;
  };
  if (std::shared_ptr<const Schedule> schedule = cached()) return schedule;
  absl::MutexLock build_lock(&build_mu_);
  if (std::shared_ptr<const Schedule> schedule = cached()) return schedule;
  ASSIGN_OR_RETURN(Schedule built, BuildSchedule(op, algorithm, o));
  auto shared = std::make_shared<const Schedule>(std::move(built));
  absl::MutexLock lock(&mu_);
  // Schedules of one shape are few; keep the cache bounded all the same.
  if (schedules_.size() > 256) schedules_.clear();
  return schedules_.emplace(key, std::move(shared)).first->second;
}

absl::StatusOr<const ScheduleCommunicator::AllReducePlan*>
ScheduleCommunicator::GetAllReducePlan(int rank, int64_t count,
                                       int64_t element_size) {
  RankState& state = *ranks_[rank];
  // The common case, a rank repeating its last shape, takes no lock and
  // touches nothing that other ranks write.
  const AllReducePlan* last = state.last_plan;
  if (last != nullptr && last->count == count &&
      last->element_size == element_size) {
    return last;
  }
  const std::pair<int64_t, int64_t> key(count, element_size);
  std::shared_ptr<const AllReducePlan> plan;
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = all_reduce_plans_.find(key);
    if (it != all_reduce_plans_.end()) plan = it->second;
  }
  if (plan == nullptr && shared_ != nullptr) {
    // The direct schedule's result, computed in shared memory.
    GroupCosts costs = options_.costs;
    costs.n = size_;
    ASSIGN_OR_RETURN(
        AllReduceSelection selection,
        SelectAllReduce(count * element_size, costs, Algorithm::kDirect));
    auto built = std::make_shared<AllReducePlan>();
    built->count = count;
    built->element_size = element_size;
    built->selection = std::move(selection);
    built->selection.forced = false;
    built->selection.chunk_bytes = 0;
    absl::MutexLock lock(&mu_);
    if (all_reduce_plans_.size() > 256) all_reduce_plans_.clear();
    plan = all_reduce_plans_.emplace(key, std::move(built)).first->second;
  }
  if (plan == nullptr) {
    ASSIGN_OR_RETURN(PlannedCall planned,
                     PlanCall(options_, size_, CollectiveOp::kAllReduce, count,
                              static_cast<size_t>(element_size)));
    ASSIGN_OR_RETURN(std::shared_ptr<const Schedule> schedule,
                     GetSchedule(CollectiveOp::kAllReduce, planned.algorithm,
                                 planned.schedule));
    auto built = std::make_shared<AllReducePlan>();
    built->count = count;
    built->element_size = element_size;
    built->selection = *std::move(planned.selection);
    built->schedule = std::move(schedule);
    absl::MutexLock lock(&mu_);
    if (all_reduce_plans_.size() > 256) all_reduce_plans_.clear();
    // Another rank may have got there first; every rank then uses its plan.
    plan = all_reduce_plans_.emplace(key, std::move(built)).first->second;
  }
  absl::MutexLock lock(&state.mu);
  state.last_all_reduce = plan;
  state.last_plan = plan.get();
  return state.last_plan;
}

absl::Status ScheduleCommunicator::Run(int rank, const Call& call,
                                       const devices::Tensor* input,
                                       devices::Tensor* output) {
  ASSIGN_OR_RETURN(devices::Transport * endpoint, Endpoint(rank));
  ASSIGN_OR_RETURN(std::shared_ptr<const Schedule> schedule,
                   GetSchedule(call.op, call.algorithm, call.schedule));
  return OnHost(input, output,
                [&](const devices::Tensor* in, devices::Tensor* out) {
                  return Execute(rank, *endpoint, *schedule, call, in, out);
                });
}

absl::Status ScheduleCommunicator::OnHost(
    const devices::Tensor* input, devices::Tensor* output,
    absl::FunctionRef<absl::Status(const devices::Tensor*, devices::Tensor*)>
        run) {
  auto in_device_memory = [](const devices::Tensor* t) {
    return t != nullptr && t->has_data() && !t->host_accessible();
  };
  const bool stage_input = in_device_memory(input);
  const bool stage_output = in_device_memory(output);
  if (!stage_input && !stage_output) return run(input, output);
  if (options_.platform == nullptr) {
    const devices::Tensor& t = stage_input ? *input : *output;
    return absl::FailedPreconditionError(absl::StrCat(
        options_.name, " was given ", t.DebugString(),
        ", which is in that device's own memory, where its collectives' host "
        "code cannot read it; give the "
        "communicator its platform (ScheduleCommunicatorOptions::platform) to "
        "stage such tensors through host memory"));
  }
  const bool in_place = input != nullptr && output != nullptr &&
                        input->raw_data() == output->raw_data();
  std::optional<devices::Tensor> host_input, host_output;
  const devices::Tensor* in = input;
  devices::Tensor* out = output;
  if (stage_input) {
    ASSIGN_OR_RETURN(devices::Tensor host,
                     devices::ToHostTensor(*options_.platform, *input));
    host_input = std::move(host);
    in = &*host_input;
  }
  if (stage_output) {
    if (in_place && stage_input) {
      out = &*host_input;
    } else {
      ASSIGN_OR_RETURN(devices::Tensor host,
                       devices::Tensor::Host(output->dtype(), output->shape()));
      host_output = std::move(host);
      out = &*host_output;
    }
  }
  absl::Status status = run(in, out);
  if (!status.ok() || !stage_output) return status;
  // The bytes as they are: `output` may be shaped unlike the staged input
  // it aliases (the collectives check element counts only).
  ASSIGN_OR_RETURN(devices::Device * device,
                   options_.platform->FindDevice(output->device()));
  return device->CopyFromHost(out->raw_data(), *output);
}

absl::Status ScheduleCommunicator::Execute(
    int rank, devices::Transport& endpoint, const Schedule& schedule,
    const Call& call, const devices::Tensor* input, devices::Tensor* output) {
  ExecuteOptions exec;
  exec.dtype = call.dtype;
  exec.op = call.reduce_op;
  exec.timeout = call.timeout;
  exec.tag_base = ranks_[rank]->next_instance++ * kTagStride;
  const void* in = input != nullptr ? input->raw_data() : nullptr;
  void* out = output != nullptr ? output->raw_data() : nullptr;
  // Ranks without an input or output of their own (a broadcast's
  // non-roots) still hold data when the other buffer does.
  static char kEmpty;
  if (in == nullptr && out != nullptr) in = &kEmpty;
  if (out == nullptr && in != nullptr) out = &kEmpty;
  // Schedules read their input while writing their output, so the two must
  // not overlap; an in-place call (input == output, allowed by the
  // Communicator interface) runs from a copy of the input, in a buffer the
  // rank keeps for the next in-place call.
  RankState& state = *ranks_[rank];
  if (input != nullptr && output != nullptr && input->has_data() &&
      output->has_data()) {
    const auto* ib = static_cast<const std::byte*>(in);
    const auto* ob = static_cast<const std::byte*>(out);
    const size_t bytes = static_cast<size_t>(input->bytes());
    if (ib < ob + output->bytes() && ob < ib + input->bytes()) {
      if (state.input_copy_bytes < bytes) {
        state.input_copy.reset();
        state.input_copy.reset(new std::byte[bytes]);
        state.input_copy_bytes = bytes;
      }
      std::memcpy(state.input_copy.get(), in, bytes);
      in = state.input_copy.get();
    }
  }
  absl::Status status = ExecuteSchedule(schedule, endpoint, in, out, exec);
  if (state.input_copy_bytes > kMaxRetainedCopyBytes) {
    state.input_copy.reset();
    state.input_copy_bytes = 0;
  }
  return status;
}

absl::Status ScheduleCommunicator::AllReduce(
    int rank, const devices::Tensor& input, devices::Tensor& output,
    const devices::CollectiveOptions& options) {
  RETURN_IF_ERROR(CheckSameDtype(input, output, "AllReduce"));
  RETURN_IF_ERROR(
      CheckElements(output, input.num_elements(), "AllReduce", "output"));
  ASSIGN_OR_RETURN(devices::Transport * endpoint, Endpoint(rank));
  ASSIGN_OR_RETURN(const AllReducePlan* plan,
                   GetAllReducePlan(rank, input.num_elements(),
                                    devices::DTypeSize(input.dtype())));
  return OnHost(
      &input, &output, [&](const devices::Tensor* in, devices::Tensor* out) {
        if (shared_ != nullptr) {
          return shared_->Run(rank, in->raw_data(), out->raw_data(),
                              in->num_elements(), in->dtype(), options.op,
                              options.timeout);
        }
        const Call call{CollectiveOp::kAllReduce,
                        plan->selection.algorithm,
                        plan->schedule->options,
                        input.dtype(),
                        options.op,
                        options.timeout};
        return Execute(rank, *endpoint, *plan->schedule, call, in, out);
      });
}

absl::Status ScheduleCommunicator::ReduceScatter(
    int rank, const devices::Tensor& input, devices::Tensor& output,
    const devices::CollectiveOptions& options) {
  RETURN_IF_ERROR(CheckSameDtype(input, output, "ReduceScatter"));
  const Call call = CallFor(CollectiveOp::kReduceScatter, input.num_elements(),
                            input.dtype(), 0, options);
  RETURN_IF_ERROR(
      CheckElements(output, ShardOf(input.num_elements(), size_, rank).count,
                    "ReduceScatter", "output"));
  return Run(rank, call, &input, &output);
}

absl::Status ScheduleCommunicator::AllGather(
    int rank, const devices::Tensor& input, devices::Tensor& output,
    const devices::CollectiveOptions& options) {
  RETURN_IF_ERROR(CheckSameDtype(input, output, "AllGather"));
  const int64_t total = output.num_elements();
  RETURN_IF_ERROR(CheckElements(input, ShardOf(total, size_, rank).count,
                                "AllGather", "input"));
  const Call call =
      CallFor(CollectiveOp::kAllGather, total, input.dtype(), 0, options);
  return Run(rank, call, &input, &output);
}

absl::Status ScheduleCommunicator::Broadcast(
    int rank, int root, devices::Tensor& tensor,
    const devices::CollectiveOptions& options) {
  if (root < 0 || root >= size_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Broadcast root ", root, " is outside the group of ", size_));
  }
  const Call call = CallFor(CollectiveOp::kBroadcast, tensor.num_elements(),
                            tensor.dtype(), root, options);
  // The root reads its tensor as input; every rank writes the result to
  // its tensor as output (the root's copy is in place).
  if (rank == root) return Run(rank, call, &tensor, &tensor);
  return Run(rank, call, nullptr, &tensor);
}

absl::Status ScheduleCommunicator::Reduce(
    int rank, int root, const devices::Tensor& input, devices::Tensor& output,
    const devices::CollectiveOptions& options) {
  if (root < 0 || root >= size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("Reduce root ", root, " is outside the group of ", size_));
  }
  RETURN_IF_ERROR(CheckSameDtype(input, output, "Reduce"));
  if (rank == root) {
    RETURN_IF_ERROR(
        CheckElements(output, input.num_elements(), "Reduce", "output"));
  }
  const Call call = CallFor(CollectiveOp::kReduce, input.num_elements(),
                            input.dtype(), root, options);
  return Run(rank, call, &input, rank == root ? &output : nullptr);
}

absl::Status ScheduleCommunicator::AllToAll(
    int rank, const devices::Tensor& input, devices::Tensor& output,
    const devices::CollectiveOptions& options) {
  RETURN_IF_ERROR(CheckSameDtype(input, output, "AllToAll"));
  if (input.num_elements() % size_ != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("AllToAll: the input's ", input.num_elements(),
                     " elements do not split into ", size_, " equal blocks"));
  }
  RETURN_IF_ERROR(
      CheckElements(output, input.num_elements(), "AllToAll", "output"));
  const Call call = CallFor(CollectiveOp::kAllToAll, input.num_elements(),
                            input.dtype(), 0, options);
  return Run(rank, call, &input, &output);
}

absl::Status ScheduleCommunicator::Abort(absl::Status reason) {
  if (reason.ok()) {
    return absl::InvalidArgumentError(
        "ScheduleCommunicator::Abort needs a non-OK reason");
  }
  // Every endpoint, not only the first: a transport's abort covers its
  // group, but each endpoint may hold requests of its own to fail.
  absl::Status first;
  for (const std::unique_ptr<devices::Transport>& endpoint : endpoints_) {
    if (endpoint == nullptr) continue;
    absl::Status s = endpoint->Abort(reason);
    if (first.ok()) first = s;
  }
  return first;
}

absl::Status ScheduleCommunicator::Barrier(int rank, absl::Duration timeout) {
  devices::CollectiveOptions options;
  options.timeout = timeout;
  const Call call =
      CallFor(CollectiveOp::kBarrier, 0, devices::DType::kUInt8, 0, options);
  return Run(rank, call, nullptr, nullptr);
}

ScheduleCommunicator::Call ScheduleCommunicator::CallFor(
    CollectiveOp op, int64_t count, devices::DType dtype, int root,
    const devices::CollectiveOptions& options) const {
  // Not for all-reduces: they alone consult the cost model, whose errors
  // PlanCall returns (GetAllReducePlan handles them).
  absl::StatusOr<PlannedCall> planned =
      PlanCall(options_, size_, op, count, devices::DTypeSize(dtype), root);
  Call call{op, Algorithm::kRing, {}, dtype, options.op, options.timeout};
  if (planned.ok()) {
    call.algorithm = planned->algorithm;
    call.schedule = planned->schedule;
  }
  return call;
}

namespace {

// The hierarchical algorithms' grid: hierarchy_dims, else costs.grid
// (empty: the nodes of ranks_per_node).
std::vector<int32_t> GridDims(const ScheduleCommunicatorOptions& options) {
  return options.hierarchy_dims.empty() ? options.costs.grid
                                        : options.hierarchy_dims;
}

}  // namespace

absl::StatusOr<PlannedCall> PlanCall(const ScheduleCommunicatorOptions& options,
                                     int group_size, CollectiveOp op,
                                     int64_t count, size_t element_size,
                                     int root) {
  PlannedCall call;
  // Pieces of options.chunk_bytes (0: whole ranges).
  auto chunked = [&](int64_t elements, size_t size) {
    ScheduleOptions o;
    o.group_size = group_size;
    o.count = elements;
    if (options.chunk_bytes > 0) {
      o.chunk_elements = std::max<int64_t>(
          1, options.chunk_bytes / static_cast<int64_t>(size));
    }
    return o;
  };
  call.schedule = chunked(count, element_size);
  switch (op) {
    case CollectiveOp::kAllReduce: {
      GroupCosts costs = options.costs;
      costs.n = group_size;
      ASSIGN_OR_RETURN(
          AllReduceSelection selection,
          SelectAllReduce(count * static_cast<int64_t>(element_size), costs,
                          options.all_reduce_algorithm));
      call.algorithm = selection.algorithm;
      call.schedule = ScheduleOptionsFor(selection, costs, count, element_size);
      if (options.chunk_bytes > 0) {
        call.schedule.chunk_elements = std::max<int64_t>(
            1, options.chunk_bytes / static_cast<int64_t>(element_size));
        // Report the chunking that runs, not the cost model's.
        selection.chunk_bytes =
            call.schedule.chunk_elements * static_cast<int64_t>(element_size);
      }
      call.selection = std::move(selection);
      call.schedule.num_channels = options.num_channels;
      if (call.algorithm == Algorithm::kHierarchical) {
        call.schedule.dims = GridDims(options);
      }
      break;
    }
    case CollectiveOp::kReduceScatter:
    case CollectiveOp::kAllGather: {
      const std::optional<Algorithm>& forced =
          op == CollectiveOp::kReduceScatter ? options.reduce_scatter_algorithm
                                             : options.all_gather_algorithm;
      if (forced.has_value()) {
        call.algorithm = *forced;
      } else {
        GroupCosts costs = options.costs;
        costs.n = group_size;
        ASSIGN_OR_RETURN(
            Algorithm chosen,
            SelectShardedCollective(
                op, count * static_cast<int64_t>(element_size), costs));
        call.algorithm = chosen;
      }
      if (call.algorithm == Algorithm::kHierarchical) {
        call.schedule.dims = GridDims(options);
        call.schedule.ranks_per_node = options.costs.ranks_per_node;
      }
      break;
    }
    case CollectiveOp::kBroadcast:
      call.algorithm = options.broadcast_algorithm;
      call.schedule.root = root;
      call.schedule.num_channels = options.num_channels;
      break;
    case CollectiveOp::kReduce:
      call.algorithm = options.reduce_algorithm;
      call.schedule.root = root;
      call.schedule.num_channels = options.num_channels;
      break;
    case CollectiveOp::kAllToAll:
      // Blocks of count / group_size elements.
      call.algorithm = Algorithm::kPairwise;
      call.schedule = chunked(count / group_size, element_size);
      break;
    case CollectiveOp::kBarrier:
      call.algorithm = Algorithm::kDissemination;
      call.schedule = chunked(0, 1);
      break;
  }
  return call;
}

absl::Status ScheduleCommunicator::Send(
    int rank, int peer, const devices::Tensor& tensor,
    const devices::CollectiveOptions& options) {
  ASSIGN_OR_RETURN(devices::Transport * endpoint, Endpoint(rank));
  absl::Span<const std::byte> data(
      static_cast<const std::byte*>(tensor.raw_data()), tensor.bytes());
  ASSIGN_OR_RETURN(auto request,
                   endpoint->Send(peer, kPointToPointTagBase, data));
  return request->Wait(options.timeout);
}

absl::Status ScheduleCommunicator::Recv(
    int rank, int peer, devices::Tensor& tensor,
    const devices::CollectiveOptions& options) {
  ASSIGN_OR_RETURN(devices::Transport * endpoint, Endpoint(rank));
  absl::Span<std::byte> data(static_cast<std::byte*>(tensor.raw_data()),
                             tensor.bytes());
  ASSIGN_OR_RETURN(auto request,
                   endpoint->Recv(peer, kPointToPointTagBase, data));
  return request->Wait(options.timeout);
}

std::optional<AllReduceSelection> ScheduleCommunicator::LastAllReduceSelection(
    int rank) const {
  if (rank < 0 || rank >= size_) return std::nullopt;
  const RankState& state = *ranks_[rank];
  absl::MutexLock lock(&state.mu);
  if (state.last_all_reduce == nullptr) return std::nullopt;
  return state.last_all_reduce->selection;
}

}  // namespace collective
}  // namespace distribute
