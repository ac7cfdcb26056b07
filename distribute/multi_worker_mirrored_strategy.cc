#include "distribute/multi_worker_mirrored_strategy.h"

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "devices/device.h"
#include "devices/device_name.h"
#include "devices/status_macros.h"
#include "distribute/cluster/simple_cluster_resolver.h"
#include "distribute/cluster/tf_config_cluster_resolver.h"
#include "distribute/collective/cost_model.h"
#include "distribute/collective/routed_transport.h"
#include "distribute/collective/schedule_communicator.h"
#include "distribute/cross_device_ops.h"
#include "distribute/mirrored_strategy.h"
#include "distribute/server/blob_exchange.h"
#include "distribute/server/grpc_transport.h"
#include "distribute/strategy_devices.h"

namespace distribute {
namespace internal {

// Where in-process workers leave their settings: call k of worker w is
// calls_[k][w] once made.
class SettingsBoard {
 public:
  explicit SettingsBoard(int workers) : workers_(workers) {}

  // Leaves worker w's settings of call `call` and waits, until `deadline`,
  // for every worker's. Returns them in worker order, or
  // DEADLINE_EXCEEDED naming the workers that did not come.
  absl::StatusOr<std::vector<MultiWorkerMirroredStrategy::Settings>> Meet(
      int call, int w, MultiWorkerMirroredStrategy::Settings mine,
      absl::Time deadline) {
    absl::MutexLock lock(&mu_);
    Round& entry = calls_[call];
    auto& round = entry.given;
    round.resize(static_cast<size_t>(workers_));
    round[static_cast<size_t>(w)] = std::move(mine);

    auto all_here = [&round] {
      for (const auto& s : round) {
        if (!s.has_value()) return false;
      }
      return true;
    };
    mu_.AwaitWithDeadline(absl::Condition(&all_here), deadline);
    std::vector<MultiWorkerMirroredStrategy::Settings> out;
    std::vector<std::string> missing;
    for (size_t v = 0; v < round.size(); ++v) {
      if (!round[v].has_value()) {
        missing.push_back(absl::StrCat(v));
      } else {
        out.push_back(*round[v]);
      }
    }
    // The last worker to leave a call forgets it.
    if (++entry.left == workers_) calls_.erase(call);
    if (!missing.empty()) {
      return absl::DeadlineExceededError(absl::StrCat(
          "MultiWorkerMirroredStrategy: worker(s) ",
          absl::StrJoin(missing, ", "),
          " did not give their settings (AgreeOnSettings call ", call,
          ") in time; every worker must call AgreeOnSettings at the same "
          "point of its program"));
    }
    return out;
  }

 private:
  const int workers_;
  absl::Mutex mu_;
  struct Round {
    std::vector<std::optional<MultiWorkerMirroredStrategy::Settings>> given;
    int left = 0;  // workers that have returned from Meet
  };
  std::map<int, Round> calls_ ABSL_GUARDED_BY(mu_);
};

}  // namespace internal

namespace {

// "name\tvalue" lines, each part C-escaped (no tab or newline survives).
std::string SerializeSettings(const MultiWorkerMirroredStrategy::Settings& s) {
  std::vector<std::string> lines;
  for (const auto& [name, value] : s) {
    lines.push_back(
        absl::StrCat(absl::CEscape(name), "\t", absl::CEscape(value)));
  }
  return absl::StrJoin(lines, "\n");
}

std::optional<MultiWorkerMirroredStrategy::Settings> ParseSettings(
    const std::string& text) {
  MultiWorkerMirroredStrategy::Settings out;
  if (text.empty()) return out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, '\t');
    std::string name, value;
    if (parts.size() != 2 || !absl::CUnescape(parts[0], &name) ||
        !absl::CUnescape(parts[1], &value)) {
      return std::nullopt;
    }
    out.emplace_back(std::move(name), std::move(value));
  }
  return out;
}

// OK when `theirs` (worker `their_name`'s) equals `mine`; else
// FAILED_PRECONDITION naming the first setting that differs.
absl::Status CompareSettings(
    const MultiWorkerMirroredStrategy::Settings& mine,
    const std::string& my_name,
    const MultiWorkerMirroredStrategy::Settings& theirs,
    const std::string& their_name) {
  auto find = [](const MultiWorkerMirroredStrategy::Settings& s,
                 const std::string& name) -> std::optional<std::string> {
    for (const auto& [n, v] : s) {
      if (n == name) return v;
    }
    return std::nullopt;
  };
  auto differ = [&](const std::string& name,
                    const std::optional<std::string>& a,
                    const std::optional<std::string>& b) {
    auto show = [](const std::optional<std::string>& v) {
      return v.has_value() ? absl::StrCat("\"", *v, "\"")
                           : std::string("nothing");
    };
    return absl::FailedPreconditionError(absl::StrCat(
        "MultiWorkerMirroredStrategy: the workers train with different "
        "settings: ",
        name, " is ", show(a), " on ", my_name, " but ", show(b), " on ",
        their_name, "; start every worker with the same settings"));
  };
  for (const auto& [name, value] : mine) {
    std::optional<std::string> other = find(theirs, name);
    if (other != value) return differ(name, value, other);
  }
  for (const auto& [name, value] : theirs) {
    if (!find(mine, name).has_value()) {
      return differ(name, std::nullopt, value);
    }
  }
  return absl::OkStatus();
}

constexpr char kGroupKey[] = "MultiWorkerMirroredStrategy/all-replicas";
constexpr absl::Duration kConnectTimeout = absl::Seconds(60);
// What AUTO assumes of messages between two devices of one worker, which
// travel in memory: a copy at a few GB/s and a thread hand-off.
constexpr double kInMemoryBandwidth = 5e9;
constexpr double kInMemoryLatencyUs = 5;

// Where the workers are: the chief (if any), then the "worker" tasks in
// index order, as "host:port"; and this task's position among them.
struct Workers {
  std::vector<std::string> addresses;
  std::vector<std::string> names;  // "/job:worker/task:1", in worker order
  int index = 0;
};

absl::StatusOr<Workers> FindWorkers(const cluster::ClusterSpec& spec,
                                    const std::string& task_type,
                                    int64_t task_id) {
  Workers out;
  int found = -1;
  for (const char* job : {"chief", "worker"}) {
    if (!spec.has_job(job)) continue;
    ASSIGN_OR_RETURN(std::vector<int64_t> sorted, spec.task_indices(job));
    // The chief (and the checkpoint writer, WriterRole) is task 0: indices
    // with gaps would leave the group without one.
    if (!spec.is_dense(job)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "MultiWorkerMirroredStrategy: the \"", job, "\" job's task indices ",
          absl::StrJoin(sorted, ","), " are not 0..", sorted.size() - 1,
          "; number the tasks from 0 without gaps"));
    }
    if (std::string(job) == "chief" && sorted.size() > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "MultiWorkerMirroredStrategy: there must be at most one \"chief\" "
          "task, but the cluster has ",
          sorted.size()));
    }
    for (int64_t i : sorted) {
      ASSIGN_OR_RETURN(std::string address, spec.task_address(job, i));
      if (task_type == job && task_id == i) {
        found = static_cast<int>(out.addresses.size());
      }
      out.addresses.push_back(address);
      out.names.push_back(absl::StrCat("/job:", job, "/task:", i));
    }
  }
  if (found < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "MultiWorkerMirroredStrategy: this task (type '", task_type,
        "', index ", task_id,
        ") is not a \"chief\" or \"worker\" task of the "
        "cluster ",
        spec.ToJson(), "; set TF_CONFIG's \"task\" to one of them"));
  }
  out.index = found;
  return out;
}

// "2 local devices (GPU:0, GPU:1)".
std::string DescribeLocalDevices(const std::vector<std::string>& local) {
  std::vector<std::string> names;
  for (const std::string& name : local) {
    absl::StatusOr<devices::DeviceName> parsed =
        devices::DeviceName::Parse(name);
    names.push_back(parsed.ok() && parsed->type.has_value() &&
                            parsed->id.has_value()
                        ? absl::StrCat(*parsed->type, ":", *parsed->id)
                        : name);
  }
  return absl::StrCat(local.size(), " local device",
                      local.size() == 1 ? "" : "s", " (",
                      absl::StrJoin(names, ", "), ")");
}

// What a worker tells the others of its all-reduce before their
// collectives meet.
struct AllReduceProfile {
  // The CrossDeviceOps' name and, over gRPC, what shapes its collectives
  // (CommunicationOptions.implementation, the servers' protocol): every
  // worker must take the same.
  std::string all_reduce;
  // CommunicationOptions.bytes_per_pack, which sizes the packs: every
  // worker must take the same unless the group reduces in device memory,
  // which never packs.
  int64_t bytes_per_pack = 0;
  // Whether a local device has memory of its own (a GPU): if any worker's
  // does, every worker takes the device-memory paths
  // (CrossDeviceOps::RequireDeviceMemoryGroup), so that all issue the same
  // collectives.
  bool device_memory = false;
  std::string local_devices;  // DescribeLocalDevices

  std::string Serialize() const {
    return absl::StrCat(all_reduce, "\n", bytes_per_pack, "\n",
                        device_memory ? "1" : "0", "\n", local_devices);
  }
  static std::optional<AllReduceProfile> Parse(const std::string& value) {
    std::vector<std::string> parts =
        absl::StrSplit(value, absl::MaxSplits('\n', 3));
    AllReduceProfile out;
    if (parts.size() != 4 || !absl::SimpleAtoi(parts[1], &out.bytes_per_pack) ||
        (parts[2] != "0" && parts[2] != "1")) {
      return std::nullopt;
    }
    out.all_reduce = std::move(parts[0]);
    out.device_memory = parts[2] == "1";
    out.local_devices = std::move(parts[3]);
    return out;
  }
};

absl::Mutex wait_reporter_mu(absl::kConstInit);
WaitReporter& InstalledWaitReporter()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(wait_reporter_mu) {
  static auto* const reporter = new WaitReporter();
  return *reporter;
}

void ReportWaiting(const std::string& line) {
  WaitReporter reporter;
  {
    absl::MutexLock lock(&wait_reporter_mu);
    reporter = InstalledWaitReporter();
  }
  if (reporter) reporter(line);
}

// FetchBlob from worker `name` at `target` until `deadline`, saying every
// kWaitReportInterval that it is still waiting (SetWaitReporter).
absl::StatusOr<std::string> FetchFromWorker(
    const Server& server, const std::string& name, const std::string& target,
    const BlobKey& key, absl::Time deadline, absl::Duration timeout) {
  const absl::Time start = absl::Now();
  while (true) {
    const absl::Duration left = deadline - absl::Now();
    absl::StatusOr<std::string> value = FetchBlob(
        server.channel_options(), target, key,
        std::max(std::min(left, kWaitReportInterval), absl::Milliseconds(1)));
    if (value.ok() || !absl::IsDeadlineExceeded(value.status()) ||
        absl::Now() >= deadline) {
      return value;
    }
    ReportWaiting(
        absl::StrCat("MultiWorkerMirroredStrategy: still waiting for worker ",
                     name, " (", target, ") after ",
                     absl::FormatDuration(
                         absl::Trunc(absl::Now() - start, absl::Seconds(1))),
                     " of ", absl::FormatDuration(timeout),
                     "; start every worker of the cluster"));
  }
}

// Publishes `mine` under `key` on `server` and fetches every other
// worker's value (`names` and `targets` in worker order, `me` this one),
// saying while it waits (FetchFromWorker). Returns the values in worker
// order, `mine` included, once the others have fetched this worker's too
// (or the deadline passed): a worker that gives up, or fails later and
// stops its server, would otherwise leave a peer still fetching it waiting
// out the timeout, not knowing why. A peer that does not answer: its
// fetch's error, naming it and `what` it did not give.
absl::StatusOr<std::vector<std::string>> ExchangeWithWorkers(
    Server& server, const std::vector<std::string>& names,
    const std::vector<std::string>& targets, int me, const BlobKey& key,
    std::string mine, absl::Duration timeout, absl::string_view what) {
  RETURN_IF_ERROR(PublishBlob(server, key, mine));
  const absl::Time deadline = absl::Now() + timeout;
  std::vector<std::string> values(targets.size());
  values[static_cast<size_t>(me)] = std::move(mine);
  for (size_t w = 0; w < targets.size(); ++w) {
    if (static_cast<int>(w) == me) continue;
    absl::StatusOr<std::string> value =
        FetchFromWorker(server, names[w], targets[w], key, deadline, timeout);
    if (!value.ok()) {
      return absl::Status(
          value.status().code(),
          absl::StrCat("MultiWorkerMirroredStrategy: worker ", names[w],
                       " did not give ", what, ": ", value.status().message()));
    }
    values[w] = *std::move(value);
  }
  server
      .AwaitBlobFetches(key.ToString(),
                        static_cast<int64_t>(targets.size()) - 1,
                        std::max(deadline - absl::Now(), absl::ZeroDuration()))
      .IgnoreError();
  return values;
}

// Every worker publishes its AllReduceProfile on its server and fetches the
// others' (from `targets`, within `timeout`). Workers that take different
// all-reduces (say NCCL on a worker of GPUs beside gRPC's on a worker of
// CPUs, or different CommunicationOptions) would otherwise wait for each
// other until a bootstrap or rendezvous timeout, without saying why: they
// all fail at once with FAILED_PRECONDITION listing every worker. A worker
// that does not answer: FetchBlob's error, naming it. Returns whether any
// worker has device memory. Every worker returns only once the others have
// its profile.
absl::StatusOr<bool> AgreeOnTheAllReduce(
    Server& server, const Workers& workers,
    const std::vector<std::string>& targets, const AllReduceProfile& mine,
    absl::Duration timeout) {
  const BlobKey key{"multi-worker-mirrored/all-reduce", 0};
  ASSIGN_OR_RETURN(
      std::vector<std::string> values,
      ExchangeWithWorkers(server, workers.names, targets, workers.index, key,
                          mine.Serialize(), timeout, "its all-reduce"));
  const size_t n = targets.size();
  std::vector<AllReduceProfile> profiles(n);
  bool agree = true;
  bool device_memory = false;
  for (size_t w = 0; w < n; ++w) {
    std::optional<AllReduceProfile> theirs = AllReduceProfile::Parse(values[w]);
    if (!theirs.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "MultiWorkerMirroredStrategy: worker ", workers.names[w],
          " described its all-reduce as \"", absl::CEscape(values[w]),
          "\"; is it a build of another version?"));
    }
    agree = agree && theirs->all_reduce == mine.all_reduce;
    device_memory = device_memory || theirs->device_memory;
    profiles[w] = *std::move(theirs);
  }
  for (size_t w = 0; w < n && !device_memory; ++w) {
    agree = agree && profiles[w].bytes_per_pack == mine.bytes_per_pack;
  }
  if (agree) return device_memory;
  std::vector<std::string> lines;
  for (size_t w = 0; w < n; ++w) {
    lines.push_back(
        absl::StrCat(workers.names[w], " takes ", profiles[w].all_reduce,
                     " with bytes_per_pack ", profiles[w].bytes_per_pack,
                     " on ", profiles[w].local_devices));
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "MultiWorkerMirroredStrategy: the workers take different all-reduces, "
      "so their collectives would never meet: ",
      absl::StrJoin(lines, "; "),
      ". Give every worker the same CommunicationOptions and rpc_layer; "
      "under AUTO a worker whose devices are all GPUs takes NCCL, so a "
      "cluster that mixes GPU and CPU workers needs RING"));
}

// The installed factory. Made on first use (it may be installed from
// another file's static initializer) and never destroyed.
absl::Mutex native_ops_mu(absl::kConstInit);
CrossWorkerNativeOpsFactory& InstalledNativeOps()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(native_ops_mu) {
  static auto* const factory = new CrossWorkerNativeOpsFactory();
  return *factory;
}

CrossWorkerNativeOpsFactory NativeOpsFactory() {
  absl::MutexLock lock(&native_ops_mu);
  return InstalledNativeOps();
}

// CrossDeviceOps whose group spans every worker's local devices: local
// replica r is rank first_rank + r; `endpoints` makes this worker's
// endpoints (gRPC between processes, or the platform's transports for an
// in-process cluster), in local replica order.
class MultiWorkerAllReduce : public CrossDeviceOps {
 public:
  using EndpointFactory = std::function<
      absl::StatusOr<std::vector<std::unique_ptr<devices::Transport>>>()>;

  // `costs` describes the endpoints' links for AUTO selection; nullopt:
  // the cost model's defaults with ranks_per_worker ranks per node.
  MultiWorkerAllReduce(
      EndpointFactory endpoints, int first_rank, int ranks_per_worker,
      bool hierarchical, CommunicationOptions options,
      std::optional<collective::GroupCosts> costs = std::nullopt)
      : endpoints_(std::move(endpoints)),
        costs_(std::move(costs)),
        ranks_per_worker_(ranks_per_worker),
        hierarchical_(hierarchical) {
    set_rank_offset(first_rank);
    set_default_options(options);
  }
  std::string name() const override { return "MultiWorkerAllReduce"; }
  // Before Bind, on a worker of CPUs whose peers have GPUs.
  using CrossDeviceOps::RequireDeviceMemoryGroup;

 protected:
  absl::StatusOr<std::unique_ptr<devices::Communicator>> MakeCommunicator(
      devices::Platform& platform,
      const std::vector<std::string>& devices) override {
    if (static_cast<int>(devices.size()) != ranks_per_worker_) {
      return absl::InternalError(
          absl::StrCat("MultiWorkerAllReduce was made for ", ranks_per_worker_,
                       " local devices but bound to ", devices.size()));
    }
    ASSIGN_OR_RETURN(std::vector<std::unique_ptr<devices::Transport>> endpoints,
                     endpoints_());
    if (static_cast<int>(endpoints.size()) != ranks_per_worker_) {
      return absl::InternalError(absl::StrCat(
          "MultiWorkerAllReduce got ", endpoints.size(),
          " transport endpoints for ", ranks_per_worker_, " local devices"));
    }
    collective::ScheduleCommunicatorOptions options;
    options.name = "MultiWorkerAllReduce";
    options.platform = &platform;  // stages device-memory (GPU) tensors
    if (costs_.has_value()) {
      options.costs = *costs_;
    } else {
      // Each worker holds ranks_per_worker consecutive ranks.
      options.costs.ranks_per_node = ranks_per_worker_;
    }
    if (default_options().implementation ==
        CommunicationImplementation::kRing) {
      options.all_reduce_algorithm = collective::Algorithm::kRing;
    } else if (hierarchical_) {
      options.all_reduce_algorithm = collective::Algorithm::kHierarchical;
    }
    ASSIGN_OR_RETURN(auto comm, collective::ScheduleCommunicator::Create(
                                    std::move(endpoints), std::move(options)));
    return std::unique_ptr<devices::Communicator>(std::move(comm));
  }

 private:
  const EndpointFactory endpoints_;
  const std::optional<collective::GroupCosts> costs_;
  const int ranks_per_worker_;
  const bool hierarchical_;
};

// One worker's ranks of a communicator that spans every worker of an
// in-process cluster: the worker's CrossDeviceOps owns this view, the
// workers share the group.
class GroupRanks : public devices::Communicator {
 public:
  explicit GroupRanks(std::shared_ptr<devices::Communicator> group)
      : group_(std::move(group)) {}

  const std::string& name() const override { return group_->name(); }
  int size() const override { return group_->size(); }
  const std::string& device(int rank) const override {
    return group_->device(rank);
  }
  bool accepts_host_memory() const override {
    return group_->accepts_host_memory();
  }
  absl::Status AllReduce(int rank, const devices::Tensor& input,
                         devices::Tensor& output,
                         const devices::CollectiveOptions& options) override {
    return group_->AllReduce(rank, input, output, options);
  }
  absl::Status AllGather(int rank, const devices::Tensor& input,
                         devices::Tensor& output,
                         const devices::CollectiveOptions& options) override {
    return group_->AllGather(rank, input, output, options);
  }
  absl::Status ReduceScatter(
      int rank, const devices::Tensor& input, devices::Tensor& output,
      const devices::CollectiveOptions& options) override {
    return group_->ReduceScatter(rank, input, output, options);
  }
  absl::Status Broadcast(int rank, int root, devices::Tensor& tensor,
                         const devices::CollectiveOptions& options) override {
    return group_->Broadcast(rank, root, tensor, options);
  }
  absl::Status Reduce(int rank, int root, const devices::Tensor& input,
                      devices::Tensor& output,
                      const devices::CollectiveOptions& options) override {
    return group_->Reduce(rank, root, input, output, options);
  }
  absl::Status AllToAll(int rank, const devices::Tensor& input,
                        devices::Tensor& output,
                        const devices::CollectiveOptions& options) override {
    return group_->AllToAll(rank, input, output, options);
  }
  absl::Status Send(int rank, int peer, const devices::Tensor& tensor,
                    const devices::CollectiveOptions& options) override {
    return group_->Send(rank, peer, tensor, options);
  }
  absl::Status Recv(int rank, int peer, devices::Tensor& tensor,
                    const devices::CollectiveOptions& options) override {
    return group_->Recv(rank, peer, tensor, options);
  }
  absl::Status Abort(absl::Status reason) override {
    return group_->Abort(std::move(reason));
  }

 private:
  const std::shared_ptr<devices::Communicator> group_;
};

// The platform's native collective library (NCCL; on the simulator its
// model) over every worker of an in-process cluster: what separate worker
// processes of GPUs use under AUTO and NCCL.
class InProcessNativeAllReduce : public CrossDeviceOps {
 public:
  InProcessNativeAllReduce(std::shared_ptr<devices::Communicator> group,
                           int first_rank, CommunicationOptions options)
      : group_(std::move(group)) {
    set_rank_offset(first_rank);
    set_default_options(options);
  }
  std::string name() const override { return "InProcessNativeAllReduce"; }

 protected:
  absl::StatusOr<std::unique_ptr<devices::Communicator>> MakeCommunicator(
      devices::Platform&, const std::vector<std::string>& devices) override {
    for (size_t i = 0; i < devices.size(); ++i) {
      if (group_->device(rank_offset() + static_cast<int>(i)) != devices[i]) {
        return absl::InternalError(absl::StrCat(
            "the native group's rank ", rank_offset() + static_cast<int>(i),
            " is ", group_->device(rank_offset() + static_cast<int>(i)),
            ", but local replica ", i, " is bound to ", devices[i]));
      }
    }
    return std::unique_ptr<devices::Communicator>(
        std::make_unique<GroupRanks>(group_));
  }

 private:
  const std::shared_ptr<devices::Communicator> group_;
};

// The gRPC transport's chunk size for CommunicationOptions::bytes_per_pack:
// the transport's default for 0 ("let the library decide"), else the pack
// size, capped where a chunk would outgrow the server's message bound.
int64_t TransportChunkBytes(const Server& server, int64_t bytes_per_pack) {
  const int64_t wanted = bytes_per_pack > 0
                             ? bytes_per_pack
                             : GrpcTransportOptions().bytes_per_pack;
  const int64_t largest =
      server.channel_options().max_message_bytes - kGrpcChunkOverheadBytes;
  return std::max<int64_t>(1, std::min(wanted, largest));
}

// The endpoints of this worker's local ranks (its devices `local`, in
// order): over gRPC to other workers, Deliver streams chunked by
// bytes_per_pack (CommunicationOptions); between two of its own devices in
// memory, through the platform's transport group (RoutedTransport).
MultiWorkerAllReduce::EndpointFactory GrpcEndpoints(
    Server& server, devices::Platform& platform, std::vector<std::string> local,
    std::vector<std::string> rank_targets, int first_rank,
    int64_t bytes_per_pack) {
  const int64_t chunk_bytes = TransportChunkBytes(server, bytes_per_pack);
  const int ranks_per_worker = static_cast<int>(local.size());
  return
      [&server, &platform, local = std::move(local),
       rank_targets = std::move(rank_targets), first_rank, ranks_per_worker,
       chunk_bytes]()
          -> absl::StatusOr<std::vector<std::unique_ptr<devices::Transport>>> {
        std::vector<std::unique_ptr<devices::Transport>> in_memory;
        if (ranks_per_worker > 1) {
          ASSIGN_OR_RETURN(
              std::vector<std::unique_ptr<devices::Transport>> group,
              platform.CreateTransportGroup(local));
          in_memory = std::move(group);
        }
        std::vector<std::unique_ptr<devices::Transport>> endpoints;
        for (int r = 0; r < ranks_per_worker; ++r) {
          GrpcTransportOptions transport;
          transport.group_key = kGroupKey;
          transport.rank_targets = rank_targets;
          transport.rank = first_rank + r;
          transport.bytes_per_pack = chunk_bytes;
          // The rendezvous waits for every worker to start, which takes longer
          // than a collective may.
          transport.connect_timeout = kConnectTimeout;
          ASSIGN_OR_RETURN(std::unique_ptr<devices::Transport> endpoint,
                           GrpcTransport::Create(server, std::move(transport)));
          if (!in_memory.empty()) {
            ASSIGN_OR_RETURN(endpoint,
                             collective::RoutedTransport::Create(
                                 std::move(in_memory[static_cast<size_t>(r)]),
                                 first_rank, std::move(endpoint)));
          }
          endpoints.push_back(std::move(endpoint));
        }
        return endpoints;
      };
}

// The in-process cluster's transport group, whose endpoints each worker
// takes once (in Bind), ranks worker * per_worker .. + per_worker - 1.
class SharedEndpoints {
 public:
  SharedEndpoints(std::vector<std::unique_ptr<devices::Transport>> endpoints,
                  int per_worker)
      : per_worker_(per_worker), endpoints_(std::move(endpoints)) {}
  SharedEndpoints(const SharedEndpoints&) = delete;
  SharedEndpoints& operator=(const SharedEndpoints&) = delete;

  absl::StatusOr<std::vector<std::unique_ptr<devices::Transport>>> Take(
      int worker) {
    absl::MutexLock lock(&mu_);
    std::vector<std::unique_ptr<devices::Transport>> out;
    for (int r = 0; r < per_worker_; ++r) {
      const size_t rank = static_cast<size_t>(worker * per_worker_ + r);
      if (rank >= endpoints_.size() || endpoints_[rank] == nullptr) {
        return absl::FailedPreconditionError(
            absl::StrCat("the transport endpoint of rank ", rank, " (worker ",
                         worker, ") was already taken or does not exist"));
      }
      out.push_back(std::move(endpoints_[rank]));
    }
    taken_[worker] = out[0].get();
    return out;
  }

  // Aborts the whole group through worker's own first endpoint (which its
  // communicator owns). FAILED_PRECONDITION before the worker took them.
  absl::Status Abort(int worker, absl::Status reason) {
    devices::Transport* endpoint = nullptr;
    {
      absl::MutexLock lock(&mu_);
      auto it = taken_.find(worker);
      if (it != taken_.end()) endpoint = it->second;
    }
    if (endpoint == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "worker ", worker, " has no collective group to abort yet"));
    }
    return endpoint->Abort(std::move(reason));
  }

 private:
  const int per_worker_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<devices::Transport>> endpoints_
      ABSL_GUARDED_BY(mu_);
  std::map<int, devices::Transport*> taken_ ABSL_GUARDED_BY(mu_);
};

// The platform's devices grouped by task (in task index order): each task's
// GPUs, else its first CPU.
absl::StatusOr<std::vector<std::vector<std::string>>> TaskDevices(
    devices::Platform& platform) {
  ASSIGN_OR_RETURN(std::vector<TaskDeviceGroup> tasks, DevicesByTask(platform));
  std::vector<std::vector<std::string>> out;
  for (const TaskDeviceGroup& t : tasks) {
    if (!t.gpus.empty()) {
      out.push_back(t.gpus);
    } else if (!t.cpus.empty()) {
      out.push_back({t.cpus[0]});
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("platform ", platform.name(), ": task ", t.task,
                       " has no GPU or CPU device to run replicas on"));
    }
  }
  return out;
}

// The first `count` devices of `kind` on the platform, in its order.
absl::StatusOr<std::vector<std::string>> FirstDevices(
    devices::Platform& platform, devices::DeviceKind kind, int64_t count) {
  std::vector<std::string> found = DevicesOfKind(platform, kind);
  if (static_cast<int64_t>(found.size()) < count) {
    const absl::string_view type = devices::DeviceKindName(kind);
    return absl::FailedPreconditionError(absl::StrCat(
        "MultiWorkerMirroredStrategy: the cluster resolver's num_accelerators "
        "gives each worker ",
        count, " ", type, " but platform '", platform.name(), "' has ",
        found.size(),
        "; give the resolver this worker's count (Slurm: "
        "gpus_per_node) or pass local_devices"));
  }
  found.resize(static_cast<size_t>(count));
  return found;
}

// TF's choice of a worker's replicas (CollectiveAllReduceExtended's
// _initialize_local_devices): a TFConfigClusterResolver's worker takes the
// process's GPUs, else its first CPU; with any other resolver its
// num_accelerators() says how many: that many GPUs, else TPUs, else the
// first CPU.
absl::StatusOr<std::vector<std::string>> WorkerDevices(
    devices::Platform& platform, const cluster::ClusterResolver& resolver) {
  if (dynamic_cast<const cluster::TFConfigClusterResolver*>(&resolver) !=
      nullptr) {
    return ResolveDevices(platform, DefaultDevices(platform));
  }
  ASSIGN_OR_RETURN(cluster::AcceleratorCounts counts,
                   resolver.num_accelerators());
  for (devices::DeviceKind kind :
       {devices::DeviceKind::kGPU, devices::DeviceKind::kTPU}) {
    auto it = counts.find(std::string(devices::DeviceKindName(kind)));
    if (it != counts.end() && it->second > 0) {
      return FirstDevices(platform, kind, it->second);
    }
  }
  // No accelerators: the first CPU (else the first device, as
  // DefaultDevices).
  std::vector<std::string> cpus =
      DevicesOfKind(platform, devices::DeviceKind::kCPU);
  return ResolveDevices(
      platform, {cpus.empty() ? platform.DeviceNames().at(0) : cpus[0]});
}

}  // namespace

void SetWaitReporter(WaitReporter reporter) {
  WaitReporter old;  // Destroyed after the lock is released.
  absl::MutexLock lock(&wait_reporter_mu);
  old = std::exchange(InstalledWaitReporter(), std::move(reporter));
}

void SetCrossWorkerNativeOps(CrossWorkerNativeOpsFactory factory) {
  CrossWorkerNativeOpsFactory old;  // Destroyed after the lock is released.
  absl::MutexLock lock(&native_ops_mu);
  old = std::exchange(InstalledNativeOps(), std::move(factory));
}

MultiWorkerMirroredStrategy::~MultiWorkerMirroredStrategy() = default;

absl::StatusOr<std::unique_ptr<MultiWorkerMirroredStrategy>>
MultiWorkerMirroredStrategy::Create(devices::Platform& platform,
                                    Options given) {
  std::unique_ptr<cluster::ClusterResolver> resolver =
      std::move(given.cluster_resolver);
  const CommunicationOptions options = given.communication;
  ServerOptions server_options = std::move(given.server);
  std::vector<std::string> local_devices = std::move(given.local_devices);
  RETURN_IF_ERROR(options.Validate());
  if (resolver == nullptr) {
    ASSIGN_OR_RETURN(auto from_env,
                     cluster::TFConfigClusterResolver::FromEnvironment());
    resolver = std::move(from_env);
  }
  ASSIGN_OR_RETURN(cluster::ClusterSpec spec, resolver->cluster_spec());

  ASSIGN_OR_RETURN(std::vector<std::string> local,
                   local_devices.empty()
                       ? WorkerDevices(platform, *resolver)
                       : ResolveDevices(platform, local_devices));
  const int per_worker = static_cast<int>(local.size());

  std::string task_type;
  int64_t task_id = 0;
  Workers workers;
  if (!spec.empty()) {
    if (!resolver->task_type().has_value() ||
        !resolver->task_id().has_value()) {
      return absl::InvalidArgumentError(
          "MultiWorkerMirroredStrategy: the cluster is set but the task is "
          "not; give TF_CONFIG a \"task\" with \"type\" and \"index\"");
    }
    task_type = *resolver->task_type();
    task_id = *resolver->task_id();
    // As TF: an evaluator is a cluster of its own (its chief); it evaluates
    // beside the training and joins none of its collectives.
    if (task_type != "evaluator") {
      ASSIGN_OR_RETURN(Workers found, FindWorkers(spec, task_type, task_id));
      workers = std::move(found);
    }
  }
  const int num_workers =
      std::max<int>(1, static_cast<int>(workers.addresses.size()));

  const bool nccl =
      options.implementation == CommunicationImplementation::kNccl;
  CrossWorkerNativeOpsFactory native = NativeOpsFactory();
  if (num_workers > 1 && nccl && native == nullptr) {
    return absl::FailedPreconditionError(
        "MultiWorkerMirroredStrategy: CommunicationImplementation.NCCL "
        "across workers needs NCCL, which this binary lacks: link "
        "//distribute:multi_worker_nccl (a CUDA build) and call "
        "RegisterMultiWorkerNccl() at start, or use AUTO or RING "
        "(collectives over gRPC)");
  }

  std::unique_ptr<Server> server;
  std::shared_ptr<CrossDeviceOps> ops;
  bool native_ops = false;  // Made by the native (NCCL) factory.
  std::shared_ptr<MultiWorkerAllReduce> grpc_ops;  // ops, when over gRPC
  std::vector<std::string> worker_targets;         // Across workers: theirs.
  if (num_workers == 1) {
    ops = std::make_shared<CollectiveAllReduce>(options);
  } else {
    // As TF: the server speaks the resolver's rpc_layer, "grpc" by default
    // ("grpc+tcp" moves the collectives' bytes over the TCP data plane).
    server_options.start = true;
    std::optional<std::string> rpc_layer = resolver->rpc_layer();
    if (rpc_layer.has_value() && !rpc_layer->empty()) {
      if (*rpc_layer != kGrpcProtocol && *rpc_layer != kGrpcTcpProtocol) {
        return absl::InvalidArgumentError(absl::StrCat(
            "MultiWorkerMirroredStrategy: the cluster resolver's rpc_layer "
            "(TF_CONFIG's \"rpc_layer\") is \"",
            *rpc_layer, "\"; the workers speak \"", kGrpcProtocol,
            "\" (the default) or \"", kGrpcTcpProtocol,
            "\" (tensors over a TCP data plane)"));
      }
      server_options.protocol = *rpc_layer;
    }
    ASSIGN_OR_RETURN(std::unique_ptr<Server> started,
                     Server::Create(spec, task_type, static_cast<int>(task_id),
                                    server_options));
    server = std::move(started);
    // The server may report its address in another spelling than the
    // spec: use its own for this worker.
    worker_targets = workers.addresses;
    worker_targets[workers.index] = server->address();
    const bool auto_on_gpus =
        options.implementation == CommunicationImplementation::kAuto &&
        AllGpus(platform, local);
    if (native != nullptr && (nccl || auto_on_gpus)) {
      CrossWorkerContext context;
      context.platform = &platform;
      context.server = server.get();
      context.worker_addresses = worker_targets;
      context.worker_index = workers.index;
      context.local_devices = local;
      context.options = options;
      context.required = nccl;
      ASSIGN_OR_RETURN(std::shared_ptr<CrossDeviceOps> made, native(context));
      if (made == nullptr && nccl) {
        return absl::InternalError(
            "the cross-worker NCCL factory returned nothing for "
            "CommunicationImplementation.NCCL");
      }
      ops = std::move(made);
      native_ops = ops != nullptr;
    }
    if (ops == nullptr) {
      std::vector<std::string> rank_targets;
      for (const std::string& target : worker_targets) {
        rank_targets.insert(rank_targets.end(), per_worker, target);
      }
      // Several local devices: hierarchical by default, as the local
      // CollectiveAllReduce is (reduce on each worker, all-reduce across the
      // workers' leaders, broadcast back), so each worker sends its data
      // across once instead of once per device; RING forces one ring.
      collective::GroupCosts costs = GrpcGroupCosts(server->protocol());
      if (per_worker > 1) {
        // A worker's own devices exchange in memory (RoutedTransport).
        costs.ranks_per_node = per_worker;
        costs.intra_bw_Bps = kInMemoryBandwidth;
        costs.intra_latency_us = kInMemoryLatencyUs;
      }
      grpc_ops = std::make_shared<MultiWorkerAllReduce>(
          GrpcEndpoints(*server, platform, local, std::move(rank_targets),
                        workers.index * per_worker, options.bytes_per_pack),
          workers.index * per_worker, per_worker,
          /*hierarchical=*/per_worker > 1, options, costs);
      ops = grpc_ops;
    }
  }
  if (server != nullptr) {
    AllReduceProfile mine;
    // A native (NCCL) group reduces alike under AUTO and NCCL.
    mine.all_reduce =
        native_ops
            ? ops->name()
            : absl::StrCat(
                  ops->name(), " (",
                  CommunicationImplementationName(options.implementation),
                  " over ", server->protocol(), ")");
    mine.bytes_per_pack = options.bytes_per_pack;
    mine.device_memory = AnyDeviceMemory(platform, local);
    mine.local_devices = DescribeLocalDevices(local);
    ASSIGN_OR_RETURN(bool device_memory,
                     AgreeOnTheAllReduce(*server, workers, worker_targets, mine,
                                         kConnectTimeout));
    // A native group's devices are all GPUs already.
    if (device_memory && grpc_ops != nullptr) {
      grpc_ops->RequireDeviceMemoryGroup();
    }
  }
  RETURN_IF_ERROR(ops->Bind(platform, local));

  auto extended =
      std::make_unique<StrategyExtended>(&platform, local, std::nullopt, ops);
  RETURN_IF_ERROR(extended->SetWorkers(num_workers, workers.index));
  auto strategy = std::unique_ptr<MultiWorkerMirroredStrategy>(
      new MultiWorkerMirroredStrategy(std::move(extended)));
  strategy->resolver_ = std::move(resolver);
  strategy->task_type_ = std::move(task_type);
  strategy->task_id_ = task_id;
  strategy->options_ = options;
  strategy->worker_targets_ = worker_targets;
  strategy->worker_names_ = workers.names;
  if (server != nullptr) {
    // Every worker answered during Bind (the transports' rendezvous): from
    // now on a silent worker is a dead one.
    PeerMonitorOptions monitor;
    for (int w = 0; w < num_workers; ++w) {
      if (w != workers.index) monitor.peers.push_back(workers.addresses[w]);
    }
    if (native_ops) {
      // The monitor aborts the groups of the server's gRPC transports
      // itself; a native group (NCCL's) hears of a dead worker only through
      // its ops, which abort its pending and later collectives with the
      // monitor's reason (UNAVAILABLE naming the task). A frozen peer would
      // otherwise hold them until their timeout, a killed one until NCCL
      // notices its sockets closing, if it does.
      std::weak_ptr<CrossDeviceOps> weak_ops = ops;
      monitor.on_peer_dead = [weak_ops](const std::string&,
                                        const absl::Status& why) {
        if (std::shared_ptr<CrossDeviceOps> live = weak_ops.lock()) {
          // Fails only for an OK reason, and a death is never OK.
          live->AbortCollectives(why).IgnoreError();
        }
      };
    }
    ASSIGN_OR_RETURN(std::unique_ptr<PeerMonitor> watching,
                     PeerMonitor::Create(*server, std::move(monitor)));
    strategy->server_ = std::move(server);
    strategy->monitor_ = std::move(watching);
  }
  return strategy;
}

absl::Status MultiWorkerMirroredStrategy::AgreeOnSettings(
    const Settings& settings, absl::Duration timeout) {
  const int call = settings_calls_++;
  const int me = WorkerIndex();
  std::vector<Settings> all;
  if (settings_board_ != nullptr) {
    ASSIGN_OR_RETURN(
        std::vector<Settings> met,
        settings_board_->Meet(call, me, settings, absl::Now() + timeout));
    all = std::move(met);
  } else if (server_ != nullptr && worker_targets_.size() > 1) {
    ASSIGN_OR_RETURN(std::vector<std::string> values,
                     ExchangeWithWorkers(
                         *server_, worker_names_, worker_targets_, me,
                         BlobKey{"multi-worker-mirrored/settings", call},
                         SerializeSettings(settings), timeout, "its settings"));
    for (size_t w = 0; w < values.size(); ++w) {
      std::optional<Settings> theirs = ParseSettings(values[w]);
      if (!theirs.has_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "MultiWorkerMirroredStrategy: worker ", worker_names_[w],
            " sent settings this build cannot read: \"",
            absl::CEscape(values[w]), "\""));
      }
      all.push_back(*std::move(theirs));
    }
  }
  for (size_t w = 0; w < all.size(); ++w) {
    if (static_cast<int>(w) == me) continue;
    RETURN_IF_ERROR(CompareSettings(settings,
                                    worker_names_[static_cast<size_t>(me)],
                                    all[w], worker_names_[w]));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::unique_ptr<MultiWorkerMirroredStrategy>>>
MultiWorkerMirroredStrategy::CreateInProcessWorkers(
    devices::Platform& platform, CommunicationOptions options) {
  RETURN_IF_ERROR(options.Validate());
  ASSIGN_OR_RETURN(std::vector<std::vector<std::string>> tasks,
                   TaskDevices(platform));
  const int num_workers = static_cast<int>(tasks.size());
  if (num_workers < 2) {
    return absl::FailedPreconditionError(absl::StrCat(
        "MultiWorkerMirroredStrategy: the devices of platform '",
        platform.name(),
        "' belong to one task (host), so there is no cluster to run in one "
        "process; use a multi-host topology such as "
        "sim:dgx_h100_cluster:2, MirroredStrategy for one host, or one "
        "process per worker with TF_CONFIG"));
  }
  const int per_worker = static_cast<int>(tasks[0].size());
  std::vector<std::string> all_devices;
  for (int w = 0; w < num_workers; ++w) {
    const std::vector<std::string>& local = tasks[static_cast<size_t>(w)];
    if (static_cast<int>(local.size()) != per_worker) {
      return absl::InvalidArgumentError(absl::StrCat(
          "MultiWorkerMirroredStrategy: every worker needs the same number "
          "of replica devices, but task 0 has ",
          per_worker, " and task ", w, " has ", local.size(), " (", local[0],
          ", ...); use a topology whose hosts are alike"));
    }
    all_devices.insert(all_devices.end(), local.begin(), local.end());
  }
  // NCCL, and AUTO when every replica is a GPU: the platform's native
  // library over every worker's devices, as separate processes use it.
  std::shared_ptr<devices::Communicator> native;
  if (options.implementation == CommunicationImplementation::kNccl ||
      (options.implementation == CommunicationImplementation::kAuto &&
       AllGpus(platform, all_devices))) {
    absl::StatusOr<std::unique_ptr<devices::Communicator>> comm =
        platform.CreateCommunicator(all_devices);
    if (comm.ok()) {
      native = *std::move(comm);
    } else if (options.implementation == CommunicationImplementation::kNccl) {
      return absl::FailedPreconditionError(absl::StrCat(
          "MultiWorkerMirroredStrategy: CommunicationImplementation.NCCL "
          "needs a native collective library over every worker's devices, "
          "and platform '",
          platform.name(), "' has none for them (", comm.status().message(),
          "); use AUTO or RING"));
    }
  }
  std::shared_ptr<SharedEndpoints> shared;
  if (native == nullptr) {
    ASSIGN_OR_RETURN(std::vector<std::unique_ptr<devices::Transport>> group,
                     platform.CreateTransportGroup(all_devices));
    shared = std::make_shared<SharedEndpoints>(std::move(group), per_worker);
  }
  // One task with a GPU makes every task take the device-memory paths.
  const bool device_memory = AnyDeviceMemory(platform, all_devices);

  // The cluster as TF_CONFIG would give it: one "worker" task per host.
  // The addresses only name the tasks; nothing connects to them.
  std::vector<std::string> addresses;
  for (int w = 0; w < num_workers; ++w) {
    addresses.push_back(absl::StrCat("task", w, ".in-process:2222"));
  }
  ASSIGN_OR_RETURN(cluster::ClusterSpec spec,
                   cluster::ClusterSpec::Create({{"worker", addresses}}));

  auto board = std::make_shared<internal::SettingsBoard>(num_workers);
  std::vector<std::unique_ptr<MultiWorkerMirroredStrategy>> out;
  for (int w = 0; w < num_workers; ++w) {
    cluster::SimpleClusterResolverOptions ro;
    ro.task_type = "worker";
    ro.task_id = w;
    ro.environment = "in-process";
    ASSIGN_OR_RETURN(
        std::unique_ptr<cluster::SimpleClusterResolver> resolver,
        cluster::SimpleClusterResolver::Create(spec, std::move(ro)));
    ASSIGN_OR_RETURN(Workers workers, FindWorkers(spec, "worker", w));
    const int first_rank = workers.index * per_worker;
    std::shared_ptr<CrossDeviceOps> ops;
    if (native != nullptr) {
      ops = std::make_shared<InProcessNativeAllReduce>(native, first_rank,
                                                       options);
    } else {
      auto schedule = std::make_shared<MultiWorkerAllReduce>(
          [shared, w] { return shared->Take(w); }, first_rank, per_worker,
          /*hierarchical=*/per_worker > 1, options);
      if (device_memory) schedule->RequireDeviceMemoryGroup();
      ops = std::move(schedule);
    }
    const std::vector<std::string>& local = tasks[static_cast<size_t>(w)];
    RETURN_IF_ERROR(ops->Bind(platform, local));
    auto extended =
        std::make_unique<StrategyExtended>(&platform, local, std::nullopt, ops);
    RETURN_IF_ERROR(extended->SetWorkers(num_workers, workers.index));
    auto strategy = std::unique_ptr<MultiWorkerMirroredStrategy>(
        new MultiWorkerMirroredStrategy(std::move(extended)));
    strategy->resolver_ = std::move(resolver);
    strategy->task_type_ = "worker";
    strategy->task_id_ = w;
    strategy->options_ = options;
    strategy->settings_board_ = board;
    strategy->worker_names_ = workers.names;
    if (native != nullptr) {
      strategy->abort_group_ = [native](absl::Status reason) {
        return native->Abort(std::move(reason));
      };
    } else {
      strategy->abort_group_ = [shared, w](absl::Status reason) {
        return shared->Abort(w, std::move(reason));
      };
    }
    out.push_back(std::move(strategy));
  }
  return out;
}

}  // namespace distribute
