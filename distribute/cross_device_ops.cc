#include "distribute/cross_device_ops.h"

#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "devices/device.h"
#include "devices/device_name.h"
#include "devices/platform.h"
#include "devices/status_macros.h"
#include "devices/thread_binding.h"
#include "distribute/collective/schedule_communicator.h"
#include "distribute/thread_group.h"

namespace distribute {
namespace {

// Nodes of a group: devices of one task share a node.
int RanksPerNode(const std::vector<std::string>& devices) {
  std::vector<std::string> tasks;
  for (const std::string& d : devices) {
    absl::StatusOr<devices::DeviceName> name = devices::DeviceName::Parse(d);
    std::string key = name.ok() ? absl::StrCat(name->job.value_or(""), "/",
                                               name->task.value_or(0))
                                : "";
    tasks.push_back(key);
  }
  // ranks_per_node only helps when every node holds the same number of
  // consecutive ranks.
  int per_node = 1;
  while (per_node < static_cast<int>(tasks.size()) &&
         tasks[per_node] == tasks[0]) {
    ++per_node;
  }
  if (tasks.size() % per_node != 0) return 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (tasks[i] != tasks[(i / per_node) * per_node]) return 0;
  }
  return per_node == static_cast<int>(tasks.size()) ? 0 : per_node;
}

absl::StatusOr<std::unique_ptr<devices::Communicator>> MakeScheduleCommunicator(
    devices::Platform& platform, const std::vector<std::string>& devices,
    collective::ScheduleCommunicatorOptions options) {
  ASSIGN_OR_RETURN(auto endpoints, platform.CreateTransportGroup(devices));
  // A group of host CPU devices talks through shared memory: use the
  // measured shared-memory figures for AUTO selection, not the defaults
  // (which describe accelerator links).
  bool all_host_cpus = platform.name() == "host";
  for (const std::string& d : devices) {
    absl::StatusOr<devices::Device*> device = platform.FindDevice(d);
    if (!device.ok() || (*device)->kind() != devices::DeviceKind::kCPU) {
      all_host_cpus = false;
    }
  }
  if (all_host_cpus) {
    const unsigned cpus = std::thread::hardware_concurrency();
    const int32_t ranks_per_node = options.costs.ranks_per_node;
    options.costs = collective::SharedMemoryCosts(
        static_cast<int32_t>(devices.size()),
        static_cast<int32_t>(cpus == 0 ? 1 : cpus));
    options.costs.ranks_per_node = ranks_per_node;  // e.g. hierarchical
  }
  if (options.costs.ranks_per_node == 0) {
    options.costs.ranks_per_node = RanksPerNode(devices);
  }
  options.platform = &platform;  // stages device-memory (GPU) tensors
  ASSIGN_OR_RETURN(auto comm, collective::ScheduleCommunicator::Create(
                                  std::move(endpoints), std::move(options)));
  return std::unique_ptr<devices::Communicator>(std::move(comm));
}

absl::StatusOr<std::unique_ptr<devices::Communicator>> NativeCommunicator(
    devices::Platform& platform, const std::vector<std::string>& devices,
    absl::string_view who) {
  auto comm = platform.CreateCommunicator(devices);
  if (absl::IsUnimplemented(comm.status())) {
    return absl::FailedPreconditionError(absl::StrCat(
        who,
        " needs a platform with a native collective library (NCCL on "
        "'cuda'); platform '",
        platform.name(),
        "' has none. Use CollectiveAllReduce or ReductionToOneDevice."));
  }
  return comm;
}

}  // namespace

devices::Tensor TimedAs(const devices::Device& device,
                        const devices::Tensor& value) {
  if (device.functional() || !value.has_data()) return value;
  return devices::Tensor::ShapeOnly(value.dtype(), value.shape(),
                                    device.name());
}

absl::Status CrossDeviceOps::Bind(devices::Platform& platform,
                                  std::vector<std::string> replica_devices) {
  if (communicator_ != nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(name(),
                     " is already bound to a strategy's devices; create one "
                     "CrossDeviceOps per strategy"));
  }
  if (replica_devices.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), " needs at least one device"));
  }
  for (const std::string& name : replica_devices) {
    RETURN_IF_ERROR(platform.FindDevice(name).status());
  }
  ASSIGN_OR_RETURN(auto comm, MakeCommunicator(platform, replica_devices));
  // Already set where RequireDeviceMemoryGroup was called.
  device_memory_group_ =
      device_memory_group_ || AnyDeviceMemory(platform, replica_devices);
  platform_ = &platform;
  devices_ = std::move(replica_devices);
  communicator_ = std::move(comm);
  return absl::OkStatus();
}

absl::Status CrossDeviceOps::AbortCollectives(absl::Status reason) {
  if (reason.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name(), ": AbortCollectives needs a non-OK reason"));
  }
  if (communicator_ == nullptr) return absl::OkStatus();
  aborted_.store(true);
  absl::Status s = communicator_->Abort(std::move(reason));
  // A backend that cannot abort leaves its waiters to their timeouts.
  return absl::IsUnimplemented(s) ? absl::OkStatus() : s;
}

absl::Status CrossDeviceOps::RecoverFromAbort() {
  if (!aborted_.load()) return absl::OkStatus();
  if (rank_offset_ != 0 || group_size() != num_replicas()) {
    return absl::FailedPreconditionError(
        absl::StrCat(name(),
                     ": the collective group spans several workers and was "
                     "aborted; restart every worker (from a checkpoint)"));
  }
  ASSIGN_OR_RETURN(auto comm, MakeCommunicator(*platform_, devices_));
  communicator_ = std::move(comm);
  aborted_.store(false);
  return absl::OkStatus();
}

int CrossDeviceOps::group_size() const {
  return communicator_ != nullptr ? communicator_->size() : num_replicas();
}

absl::Status CrossDeviceOps::RunOnReplicaThreads(
    const std::function<absl::Status(int)>& fn) {
  const int n = num_replicas();
  std::vector<absl::Status> status(n);
  std::vector<devices::Device*> devices(n);
  for (int r = 0; r < n; ++r) {
    ASSIGN_OR_RETURN(devices::Device * d, platform_->FindDevice(devices_[r]));
    devices[r] = d;
  }
  internal::RunBoundThreads(devices, [&](int r) { status[r] = fn(r); });
  for (int r = 0; r < n; ++r) {
    if (!status[r].ok()) return status[r];
  }
  return absl::OkStatus();
}

absl::StatusOr<devices::Tensor> CrossDeviceOps::CopyTo(
    const devices::Tensor& t, const std::string& device_name) {
  ASSIGN_OR_RETURN(devices::Device * device,
                   platform_->FindDevice(device_name));
  if (t.device() == device->name()) return t;
  return devices::CopyTensorTo(*platform_, t, *device);
}

absl::StatusOr<collective::PackPlan> CrossDeviceOps::Plan(
    const std::vector<devices::Tensor>& values,
    const CommunicationOptions& options) const {
  return collective::PlanByBytes(values, options.bytes_per_pack);
}

absl::Status CrossDeviceOps::AllReducePack(int replica, ReduceOp op,
                                           const devices::Tensor& in,
                                           devices::Tensor& out,
                                           absl::Duration timeout) {
  return communicator_->AllReduce(rank_offset_ + replica, in, out,
                                  {ToDevicesReduceOp(op), timeout});
}

bool CrossDeviceOps::PackAcceptsHostMemory() const {
  return communicator_->accepts_host_memory();
}

absl::StatusOr<std::vector<devices::Tensor>> CrossDeviceOps::ReplicaAllReduce(
    int replica, ReduceOp op, const std::vector<devices::Tensor>& values,
    const CommunicationOptions& call_options) {
  const CommunicationOptions options = default_options_.Merge(call_options);
  if (communicator_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(name(), " is not bound to a strategy's devices"));
  }
  RETURN_IF_ERROR(options.Validate());
  if (replica < 0 || replica >= num_replicas()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "replica ", replica, " is outside 0..", num_replicas() - 1));
  }
  ASSIGN_OR_RETURN(devices::Device * device,
                   platform_->FindDevice(devices_[replica]));
  if (device_memory_group_) {
    return AllReduceInDeviceMemory(replica, op, values, *device,
                                   options.Timeout());
  }
  ASSIGN_OR_RETURN(collective::PackPlan plan, Plan(values, options));
  ASSIGN_OR_RETURN(std::vector<devices::Tensor> packed,
                   collective::PackTensors(plan, values));
  std::vector<devices::Tensor> reduced;
  reduced.reserve(packed.size());
  for (const devices::Tensor& p : packed) {
    ASSIGN_OR_RETURN(devices::Tensor out,
                     device->Allocate(p.dtype(), p.shape()));
    RETURN_IF_ERROR(AllReducePack(replica, op, TimedAs(*device, p), out,
                                  options.Timeout()));
    reduced.push_back(std::move(out));
  }
  std::vector<devices::Tensor> outputs;
  outputs.reserve(values.size());
  for (const devices::Tensor& v : values) {
    ASSIGN_OR_RETURN(devices::Tensor out,
                     device->Allocate(v.dtype(), v.shape()));
    outputs.push_back(std::move(out));
  }
  RETURN_IF_ERROR(collective::UnpackTensors(plan, reduced, outputs));
  return outputs;
}

absl::StatusOr<devices::Tensor> CrossDeviceOps::ReplicaAllGather(
    int replica, const devices::Tensor& value,
    const CommunicationOptions& call_options) {
  const CommunicationOptions options = default_options_.Merge(call_options);
  if (communicator_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(name(), " is not bound to a strategy's devices"));
  }
  if (replica < 0 || replica >= num_replicas()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "replica ", replica, " is outside 0..", num_replicas() - 1));
  }
  // Ranks of the whole group (every worker's replicas).
  const int n = communicator_->size();
  const int rank = rank_offset_ + replica;
  ASSIGN_OR_RETURN(devices::Device * device,
                   platform_->FindDevice(devices_[replica]));
  // First agree on every replica's dim 0 (replicas may differ there), then
  // gather each replica's rows: replica i's block is broadcast from i.
  const int64_t rows = value.shape().rank() == 0 ? 1 : value.shape().dim(0);
  // A row's elements from the shape, not num_elements / rows: a replica
  // without rows still places the others' rows.
  int64_t row_elems = 1;
  for (int d = 1; d < value.shape().rank(); ++d) {
    row_elems *= value.shape().dim(d);
  }
  ASSIGN_OR_RETURN(
      devices::Tensor counts,
      devices::Tensor::Host(devices::DType::kInt64, devices::Shape({n})));
  for (int i = 0; i < n; ++i) counts.data<int64_t>()[i] = i == rank ? rows : 0;
  ASSIGN_OR_RETURN(
      devices::Tensor all_counts,
      devices::Tensor::Host(devices::DType::kInt64, devices::Shape({n})));
  const bool own_memory =
      device->allocator().memory_space() == devices::MemorySpace::kDevice;
  // Whether this rank gives its collectives host tensors: yes on a device
  // without memory of its own, or where the collectives run in host code.
  const bool host_collectives =
      !own_memory || communicator_->accepts_host_memory();
  absl::Status s;
  if (!host_collectives) {
    // A device with its own memory (a GPU) reduces the counts there.
    ASSIGN_OR_RETURN(
        devices::Tensor in,
        device->Allocate(devices::DType::kInt64, devices::Shape({n})));
    ASSIGN_OR_RETURN(
        devices::Tensor sum,
        device->Allocate(devices::DType::kInt64, devices::Shape({n})));
    s = device->CopyFromHost(counts.raw_data(), in);
    if (s.ok()) {
      s = communicator_->AllReduce(
          rank, in, sum, {devices::ReduceOp::kSum, options.Timeout()});
    }
    if (s.ok()) s = device->CopyToHost(sum, all_counts.raw_data());
  } else {
    s = communicator_->AllReduce(rank, counts, all_counts,
                                 {devices::ReduceOp::kSum, options.Timeout()});
  }
  RETURN_IF_ERROR(s);
  int64_t total_rows = 0;
  for (int i = 0; i < n; ++i) total_rows += all_counts.data<int64_t>()[i];
  std::vector<int64_t> dims(value.shape().dims().begin(),
                            value.shape().dims().end());
  if (dims.empty()) dims.push_back(1);
  dims[0] = total_rows;
  ASSIGN_OR_RETURN(
      devices::Tensor out,
      device->Allocate(value.dtype(), *devices::Shape::Make(dims)));
  const size_t row_bytes = row_elems * devices::DTypeSize(value.dtype());
  // Device memory (a GPU's) is assembled in host memory and copied in once.
  devices::Tensor assembled = out;
  if (out.has_data() && !out.host_accessible()) {
    ASSIGN_OR_RETURN(devices::Tensor staged,
                     devices::Tensor::Host(out.dtype(), out.shape()));
    assembled = std::move(staged);
  }
  int64_t row_offset = 0;
  for (int i = 0; i < n; ++i) {
    const int64_t r = all_counts.data<int64_t>()[i];
    std::vector<int64_t> block_dims = dims;
    block_dims[0] = r;
    absl::StatusOr<devices::Tensor> block;
    if (i == rank) {
      // This rank's value goes out from the memory its collectives take:
      // a GPU's value is copied out once for the collectives' host code
      // (not staged out and in by them), a host value into a GPU for NCCL.
      if (host_collectives) {
        block = devices::ToHostTensor(*platform_, value);
      } else if (value.has_data() && value.host_accessible()) {
        block = devices::CopyTensorTo(*platform_, value, *device);
      } else {
        block = value;
      }
    } else if (own_memory && host_collectives) {
      block = devices::Tensor::Host(value.dtype(),
                                    *devices::Shape::Make(block_dims));
    } else {
      block =
          device->Allocate(value.dtype(), *devices::Shape::Make(block_dims));
    }
    RETURN_IF_ERROR(block.status());
    s = communicator_->Broadcast(rank, i, *block,
                                 {devices::ReduceOp::kSum, options.Timeout()});
    RETURN_IF_ERROR(s);
    if (out.has_data() && r > 0) {
      std::byte* dst = static_cast<std::byte*>(assembled.raw_data()) +
                       row_offset * row_bytes;
      if (block->host_accessible()) {
        std::memcpy(dst, block->raw_data(), r * row_bytes);
      } else {
        s = device->CopyToHost(*block, dst);
        RETURN_IF_ERROR(s);
      }
    }
    row_offset += r;
  }
  if (out.has_data() && !out.host_accessible()) {
    s = device->CopyFromHost(assembled.raw_data(), out);
    RETURN_IF_ERROR(s);
  }
  return out;
}

absl::Status CrossDeviceOps::ReplicaBroadcast(
    int replica, int root, std::vector<devices::Tensor>& values,
    const CommunicationOptions& call_options) {
  const CommunicationOptions options = default_options_.Merge(call_options);
  if (communicator_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(name(), " is not bound to a strategy's devices"));
  }
  if (replica < 0 || replica >= num_replicas()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "replica ", replica, " is outside 0..", num_replicas() - 1));
  }
  for (devices::Tensor& v : values) {
    RETURN_IF_ERROR(
        communicator_->Broadcast(rank_offset_ + replica, root, v,
                                 {devices::ReduceOp::kSum, options.Timeout()}));
  }
  return absl::OkStatus();
}

absl::Status CrossDeviceOps::BroadcastFromRank(
    int root, std::vector<devices::Tensor>& per_replica,
    const CommunicationOptions& options) {
  if (communicator_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(name(), " is not bound to a strategy's devices"));
  }
  if (static_cast<int>(per_replica.size()) != num_replicas()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "BroadcastFromRank got ", per_replica.size(), " tensors for ",
        num_replicas(), " replicas; pass one per replica"));
  }
  if (root < 0 || root >= group_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("broadcast root ", root,
                     " is outside the group's ranks 0..", group_size() - 1));
  }
  return RunOnReplicaThreads([&](int r) -> absl::Status {
    std::vector<devices::Tensor> mine = {per_replica[r]};
    RETURN_IF_ERROR(ReplicaBroadcast(r, root, mine, options));
    per_replica[r] = mine[0];
    return absl::OkStatus();
  });
}

absl::StatusOr<std::vector<Mirrored>> CrossDeviceOps::BatchReduce(
    ReduceOp op, const std::vector<std::pair<PerReplica, Destinations>>& values,
    const CommunicationOptions& options) {
  if (communicator_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(name(), " is not bound to a strategy's devices"));
  }
  const int n = num_replicas();
  for (size_t k = 0; k < values.size(); ++k) {
    if (values[k].first.num_replicas() != n) {
      return absl::InvalidArgumentError(
          absl::StrCat("value ", k, " has ", values[k].first.num_replicas(),
                       " components but the strategy has ", n, " replicas"));
    }
    RETURN_IF_ERROR(values[k].first.CheckSameShapeAndType(
        absl::StrCat("reducing value ", k)));
  }
  std::vector<std::vector<devices::Tensor>> per_replica_out(n);
  RETURN_IF_ERROR(RunOnReplicaThreads([&](int r) -> absl::Status {
    std::vector<devices::Tensor> mine;
    for (const auto& v : values) mine.push_back(v.first.value(r));
    ASSIGN_OR_RETURN(auto out, ReplicaAllReduce(r, op, mine, options));
    per_replica_out[r] = std::move(out);
    return absl::OkStatus();
  }));
  std::vector<Mirrored> results;
  for (size_t k = 0; k < values.size(); ++k) {
    const Destinations& dest = values[k].second;
    std::vector<devices::Tensor> placed;
    for (const std::string& d : dest) {
      // Take the reduced copy already on that device if a replica has it.
      const devices::Tensor* local = nullptr;
      for (int r = 0; r < n; ++r) {
        if (per_replica_out[r][k].device() == d) local = &per_replica_out[r][k];
      }
      if (local != nullptr) {
        placed.push_back(*local);
        continue;
      }
      ASSIGN_OR_RETURN(devices::Tensor copy, CopyTo(per_replica_out[0][k], d));
      placed.push_back(std::move(copy));
    }
    results.emplace_back(std::move(placed));
  }
  return results;
}

absl::StatusOr<Mirrored> CrossDeviceOps::Reduce(
    ReduceOp op, const PerReplica& value, const Destinations& destinations,
    const CommunicationOptions& options) {
  ASSIGN_OR_RETURN(auto r, BatchReduce(op, {{value, destinations}}, options));
  return std::move(r[0]);
}

absl::StatusOr<Mirrored> CrossDeviceOps::Broadcast(
    const devices::Tensor& tensor, const Destinations& destinations) {
  if (platform_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat(name(), " is not bound to a strategy's devices"));
  }
  std::vector<devices::Tensor> out;
  for (const std::string& d : destinations) {
    ASSIGN_OR_RETURN(devices::Tensor copy, CopyTo(tensor, d));
    out.push_back(std::move(copy));
  }
  return Mirrored(std::move(out));
}

// ReductionToOneDevice --------------------------------------------------

absl::StatusOr<std::unique_ptr<devices::Communicator>>
ReductionToOneDevice::MakeCommunicator(
    devices::Platform& platform, const std::vector<std::string>& devices) {
  root_ = 0;
  outside_ = nullptr;
  if (!reduce_to_device_.empty()) {
    ASSIGN_OR_RETURN(devices::Device * target,
                     platform.FindDevice(reduce_to_device_));
    root_ = -1;
    for (size_t i = 0; i < devices.size(); ++i) {
      absl::StatusOr<devices::Device*> d = platform.FindDevice(devices[i]);
      if (d.ok() && *d == target) root_ = static_cast<int>(i);
    }
    if (root_ < 0) {
      // A device that runs no replica: replica 0 drives its reductions.
      root_ = 0;
      outside_ = target;
    }
  }
  collective::ScheduleCommunicatorOptions options;
  options.name = "ReductionToOneDevice";
  // Values travel straight to the reducing device and back.
  options.reduce_algorithm = collective::Algorithm::kChain;
  options.broadcast_algorithm = collective::Algorithm::kBinaryTree;
  return MakeScheduleCommunicator(platform, devices, std::move(options));
}

absl::Status ReductionToOneDevice::AllReducePack(int replica, ReduceOp op,
                                                 const devices::Tensor& in,
                                                 devices::Tensor& out,
                                                 absl::Duration timeout) {
  if (device_memory_group()) {
    return ReduceOnDevice(replica, op, in, out, timeout);
  }
  if (outside_ != nullptr) return ReduceOutside(replica, op, in, out, timeout);
  RETURN_IF_ERROR(communicator().Reduce(replica, root_, in, out,
                                        {ToDevicesReduceOp(op), timeout}));
  return communicator().Broadcast(replica, root_, out,
                                  {devices::ReduceOp::kSum, timeout});
}

// HierarchicalCopyAllReduce -----------------------------------------------

absl::StatusOr<std::unique_ptr<devices::Communicator>>
HierarchicalCopyAllReduce::MakeCommunicator(
    devices::Platform& platform, const std::vector<std::string>& devices) {
  if (num_packs_ < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("HierarchicalCopy requires num_packs >= 0, but ",
                     num_packs_, " is specified"));
  }
  collective::ScheduleCommunicatorOptions options;
  options.name = "HierarchicalCopyAllReduce";
  const int n = static_cast<int>(devices.size());
  // TF's hierarchical copy splits the GPUs into two groups (DGX-1 style).
  if (n >= 4 && n % 2 == 0) {
    options.all_reduce_algorithm = collective::Algorithm::kHierarchical;
    options.costs.ranks_per_node = n / 2;
  } else {
    options.all_reduce_algorithm = collective::Algorithm::kRing;
  }
  return MakeScheduleCommunicator(platform, devices, std::move(options));
}

absl::StatusOr<collective::PackPlan> HierarchicalCopyAllReduce::Plan(
    const std::vector<devices::Tensor>& values,
    const CommunicationOptions&) const {
  return collective::PlanByCount(values, num_packs_);
}

// NcclAllReduce -----------------------------------------------------------

absl::StatusOr<std::unique_ptr<devices::Communicator>>
NcclAllReduce::MakeCommunicator(devices::Platform& platform,
                                const std::vector<std::string>& devices) {
  if (num_packs_ < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("NCCL all-reduce requires num_packs >= 0, but ",
                     num_packs_, " is specified"));
  }
  return NativeCommunicator(platform, devices, "NcclAllReduce");
}

absl::StatusOr<collective::PackPlan> NcclAllReduce::Plan(
    const std::vector<devices::Tensor>& values,
    const CommunicationOptions&) const {
  return collective::PlanByCount(values, num_packs_);
}

// CollectiveAllReduce -----------------------------------------------------

absl::StatusOr<std::unique_ptr<devices::Communicator>>
CollectiveAllReduce::MakeCommunicator(devices::Platform& platform,
                                      const std::vector<std::string>& devices) {
  const CommunicationOptions& defaults = default_options();
  RETURN_IF_ERROR(defaults.Validate());
  if (defaults.implementation == CommunicationImplementation::kNccl) {
    return NativeCommunicator(platform, devices,
                              "CommunicationImplementation.NCCL");
  }
  collective::ScheduleCommunicatorOptions options;
  options.name = "CollectiveAllReduce";
  if (defaults.implementation == CommunicationImplementation::kRing) {
    options.all_reduce_algorithm = collective::Algorithm::kRing;
  }
  return MakeScheduleCommunicator(platform, devices, std::move(options));
}

// select_cross_device_ops -------------------------------------------------

bool AllGpus(devices::Platform& platform,
             const std::vector<std::string>& devices) {
  for (const std::string& d : devices) {
    absl::StatusOr<devices::Device*> device = platform.FindDevice(d);
    if (!device.ok() || (*device)->kind() != devices::DeviceKind::kGPU) {
      return false;
    }
  }
  return !devices.empty();
}

bool AnyDeviceMemory(devices::Platform& platform,
                     const std::vector<std::string>& devices) {
  for (const std::string& d : devices) {
    absl::StatusOr<devices::Device*> device = platform.FindDevice(d);
    if (device.ok() && (*device)->allocator().memory_space() ==
                           devices::MemorySpace::kDevice) {
      return true;
    }
  }
  return false;
}

CrossDeviceOpsChoice SelectCrossDeviceOps(
    devices::Platform& platform, const std::vector<std::string>& devices) {
  if (devices.empty()) {
    return {std::make_shared<ReductionToOneDevice>(),
            "No devices were given, not using nccl allreduce."};
  }
  if (!AllGpus(platform, devices)) {
    return {std::make_shared<ReductionToOneDevice>(),
            "There are non-GPU devices in `tf.distribute.Strategy`, not "
            "using nccl allreduce."};
  }
  auto probe = platform.CreateCommunicator(devices);
  if (!probe.ok()) {
    return {std::make_shared<ReductionToOneDevice>(),
            absl::StrCat("Nccl kernel is not found on platform '",
                         platform.name(), "', not using nccl allreduce.")};
  }
  return {std::make_shared<NcclAllReduce>(1), "all devices are GPUs"};
}

}  // namespace distribute
