// tf.distribute.CrossDeviceOps: how a strategy reduces and broadcasts values
// among its replicas' devices.
//
//   std::shared_ptr<CrossDeviceOps> ops =
//   std::make_shared<ReductionToOneDevice>(); auto strategy =
//   MirroredStrategy::Create(platform, devices, ops);
//
// Implementations (TF's names and defaults):
//   ReductionToOneDevice(reduce_to_device = "", accumulation = SUM)
//       copies every value to one device (the first destination when empty),
//       reduces there, copies the result to each destination.
//   HierarchicalCopyAllReduce(num_packs = 1)
//       the hierarchical 2D algorithm (reduce-scatter inside halves of the
//       group, all-reduce across, all-gather), tensors packed in num_packs.
//   NcclAllReduce(num_packs = 1)
//       the platform's native collective library (NCCL on CUDA);
//       FAILED_PRECONDITION on platforms that have none.
//   CollectiveAllReduce(options)
//       the collective algorithms of distribute/collective, chosen by the
//       cost model (AUTO) or forced (RING), packed by bytes_per_pack.
// Every implementation is bound to a platform and an ordered list of devices
// (the replicas') by the strategy that uses it (Bind). A multi-worker
// implementation's communicator spans the devices of every worker: the bound
// (local) replica r is then rank rank_offset() + r of a group of
// group_size() ranks. Reductions run on
// per-replica threads bound to their devices, so on the simulator they are
// charged to the links they cross.
#ifndef DISTRIBUTE_CROSS_DEVICE_OPS_H_
#define DISTRIBUTE_CROSS_DEVICE_OPS_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "devices/communicator.h"
#include "devices/platform.h"
#include "devices/tensor.h"
#include "distribute/collective/communication_options.h"
#include "distribute/collective/packing.h"
#include "distribute/reduce_op.h"
#include "distribute/values.h"

namespace distribute {

// Device names a reduction's result should be placed on.
using Destinations = std::vector<std::string>;

// What a collective on `device` reduces of `value`: `value` itself, except
// on a timing-only device (Device::functional() false), where collectives
// carry no values and a host tensor's data is neither read nor written: a
// shape-only tensor of its dtype and shape on `device` stands for it.
devices::Tensor TimedAs(const devices::Device& device,
                        const devices::Tensor& value);

class CrossDeviceOps {
 public:
  virtual ~CrossDeviceOps() = default;
  CrossDeviceOps(const CrossDeviceOps&) = delete;
  CrossDeviceOps& operator=(const CrossDeviceOps&) = delete;

  virtual std::string name() const = 0;

  // Binds to the replicas' devices (in replica order) on `platform`, which
  // must outlive this object. Called once by the strategy.
  absl::Status Bind(devices::Platform& platform,
                    std::vector<std::string> replica_devices);

  // Cross-replica context. `value` has one component per bound device;
  // the result has one component per destination (copies of one value).
  absl::StatusOr<Mirrored> Reduce(ReduceOp op, const PerReplica& value,
                                  const Destinations& destinations,
                                  const CommunicationOptions& options = {});
  absl::StatusOr<std::vector<Mirrored>> BatchReduce(
      ReduceOp op,
      const std::vector<std::pair<PerReplica, Destinations>>& values,
      const CommunicationOptions& options = {});
  absl::StatusOr<Mirrored> Broadcast(const devices::Tensor& tensor,
                                     const Destinations& destinations);

  // Replica context: every replica calls it from its own thread, with the
  // same number of tensors of the same dtypes and shapes; each gets the
  // reduction of all replicas' tensors. Packs per the options' bytes_per_pack
  // (or the implementation's num_packs).
  absl::StatusOr<std::vector<devices::Tensor>> ReplicaAllReduce(
      int replica, ReduceOp op, const std::vector<devices::Tensor>& values,
      const CommunicationOptions& options = {});
  // Replica context: concatenation along dim 0 of every replica's tensor,
  // in replica order (replicas may differ in dim 0).
  absl::StatusOr<devices::Tensor> ReplicaAllGather(
      int replica, const devices::Tensor& value,
      const CommunicationOptions& options = {});
  // Replica context: replica `root`'s tensors on every replica.
  absl::Status ReplicaBroadcast(int replica, int root,
                                std::vector<devices::Tensor>& values,
                                const CommunicationOptions& options = {});

  // Cross-replica context: every bound replica's tensors (per_replica[r]
  // for replica r, each on its device) become those of group rank `root`,
  // in place; the other workers of a multi-worker group make the same call.
  absl::Status BroadcastFromRank(int root,
                                 std::vector<devices::Tensor>& per_replica,
                                 const CommunicationOptions& options = {});

  // Aborts the bound group's collectives (devices::Communicator::Abort):
  // every replica's pending and later collectives fail with UNAVAILABLE
  // carrying `reason`, in this process and, for a group that spans
  // workers, in the others. Strategy::Run calls it when a replica fails, so
  // that the replicas waiting for it fail at once instead of at their
  // timeout. Thread-safe; the first reason wins.
  virtual absl::Status AbortCollectives(absl::Status reason);
  // After AbortCollectives, when this process drives the whole group (a
  // single-worker strategy): a new communicator replaces the aborted one,
  // so the strategy can run again. FAILED_PRECONDITION for a group that
  // spans workers (every worker must restart, as in TF). OK, doing
  // nothing, when not aborted. Call it only while no replica runs.
  absl::Status RecoverFromAbort();
  bool aborted() const { return aborted_.load(); }

  int num_replicas() const { return static_cast<int>(devices_.size()); }
  const std::vector<std::string>& replica_devices() const { return devices_; }
  // The bound replicas' first rank in the communicator's group (0 unless the
  // group spans several workers) and the group's size.
  int rank_offset() const { return rank_offset_; }
  int group_size() const;

 protected:
  CrossDeviceOps() = default;
  // Makes the communicator for the bound devices.
  virtual absl::StatusOr<std::unique_ptr<devices::Communicator>>
  MakeCommunicator(devices::Platform& platform,
                   const std::vector<std::string>& devices) = 0;
  // The reduce step itself on a pack (one tensor per replica call).
  virtual absl::Status AllReducePack(int replica, ReduceOp op,
                                     const devices::Tensor& in,
                                     devices::Tensor& out,
                                     absl::Duration timeout);
  // Whether AllReducePack takes tensors in host memory on a device with
  // memory of its own (else they are staged through the device, and their
  // results brought back): the communicator's accepts_host_memory().
  virtual bool PackAcceptsHostMemory() const;
  // How a list of tensors is cut into packs.
  virtual absl::StatusOr<collective::PackPlan> Plan(
      const std::vector<devices::Tensor>& values,
      const CommunicationOptions& options) const;

  devices::Communicator& communicator() { return *communicator_; }
  devices::Platform& platform() { return *platform_; }
  // Whether any bound device has memory of its own (a GPU). Such a group
  // takes the device-memory paths on every replica, its CPUs' too, so that
  // all replicas issue the same collectives (a CPU replica packing its
  // tensors while a GPU replica reduced them one by one would wait for
  // collectives the others never call).
  bool device_memory_group() const { return device_memory_group_; }
  // Before Bind: make the group a device_memory_group() although no bound
  // device may have memory of its own, because another worker's ranks of
  // the group do (a worker of CPUs beside a worker of GPUs).
  void RequireDeviceMemoryGroup() { device_memory_group_ = true; }
  // For multi-worker implementations, before Bind: the group rank of the
  // first bound replica, and options every call's options are merged into
  // (CommunicationOptions::Merge: the call's own fields win).
  void set_rank_offset(int offset) { rank_offset_ = offset; }
  void set_default_options(CommunicationOptions options) {
    default_options_ = options;
  }
  const CommunicationOptions& default_options() const {
    return default_options_;
  }

 private:
  // Runs fn(replica) on one thread per replica, each bound to its device.
  absl::Status RunOnReplicaThreads(const std::function<absl::Status(int)>& fn);
  absl::StatusOr<devices::Tensor> CopyTo(const devices::Tensor& t,
                                         const std::string& device);
  // ReplicaAllReduce in a device_memory_group(): no packing, one
  // AllReducePack per tensor. Host tensors on a device with its own memory
  // give host results: where AllReducePack takes host memory
  // (PackAcceptsHostMemory) they go to it as they are, else they are staged
  // through the device and their results brought back.
  absl::StatusOr<std::vector<devices::Tensor>> AllReduceInDeviceMemory(
      int replica, ReduceOp op, const std::vector<devices::Tensor>& values,
      devices::Device& device, absl::Duration timeout);

  devices::Platform* platform_ = nullptr;
  std::vector<std::string> devices_;
  bool device_memory_group_ = false;
  std::unique_ptr<devices::Communicator> communicator_;
  std::atomic<bool> aborted_{false};
  int rank_offset_ = 0;
  CommunicationOptions default_options_;
};

class ReductionToOneDevice : public CrossDeviceOps {
 public:
  // reduce_to_device "" = the first replica's device; it may also be a
  // device of the platform that runs no replica (TF's common "/cpu:0").
  // Values in device memory (GPUs), and every value when the reduce device
  // runs no replica, are copied to the reduce device, reduced there by its
  // kernels (Device::kernels()) and copied back to each replica; otherwise
  // they travel along the group's schedule (a chain to the reduce device and
  // a tree back). A reduce device outside the replicas serves one process's
  // replicas only (UNIMPLEMENTED across workers).
  explicit ReductionToOneDevice(std::string reduce_to_device = "")
      : reduce_to_device_(std::move(reduce_to_device)) {}
  std::string name() const override { return "ReductionToOneDevice"; }

 protected:
  absl::StatusOr<std::unique_ptr<devices::Communicator>> MakeCommunicator(
      devices::Platform& platform,
      const std::vector<std::string>& devices) override;
  absl::Status AllReducePack(int replica, ReduceOp op,
                             const devices::Tensor& in, devices::Tensor& out,
                             absl::Duration timeout) override;
  // The reduce device reads and writes any memory (devices::ReadableOn,
  // devices::CopyTensor).
  bool PackAcceptsHostMemory() const override { return true; }

 public:
  // Also fails the device-memory reduction under way, if any.
  absl::Status AbortCollectives(absl::Status reason) override;

 private:
  // One device-memory reduction: every replica's input, then the result.
  struct Round {
    explicit Round(int n) : inputs(n) {}
    Round(const Round&) = delete;
    Round& operator=(const Round&) = delete;
    absl::Mutex mu;
    std::vector<devices::Tensor> inputs ABSL_GUARDED_BY(mu);
    int arrived ABSL_GUARDED_BY(mu) = 0;
    bool done ABSL_GUARDED_BY(mu) = false;
    absl::Status status ABSL_GUARDED_BY(mu);
    devices::Tensor result ABSL_GUARDED_BY(mu);
  };
  // AllReducePack for tensors that host pointers cannot touch: the root
  // replica waits for every input, copies them to its device and reduces
  // them with that device's kernels; each replica copies the result out.
  // UNIMPLEMENTED for groups that span processes; DEADLINE_EXCEEDED when a
  // replica does not arrive within `timeout`.
  absl::Status ReduceOnDevice(int replica, ReduceOp op,
                              const devices::Tensor& in, devices::Tensor& out,
                              absl::Duration timeout);
  // Waits for `round` (the root: for every input, then reduces) until
  // `deadline`; the round's status.
  absl::Status WaitForRound(Round& round, int replica, ReduceOp op,
                            absl::Time deadline, absl::Duration timeout);
  // The root's part of ReduceOnDevice, with every input present: reduces
  // them on the reduce device.
  absl::StatusOr<devices::Tensor> ReduceAtRoot(
      ReduceOp op, const std::vector<devices::Tensor>& inputs);
  // AllReducePack of host-memory values with a reduce device that runs no
  // replica: each replica copies its value there, the group meets (a
  // one-element all-reduce over the communicator, which simulated waits
  // see), replica 0 reduces them there, the group meets again, and each
  // replica copies the result back.
  absl::Status ReduceOutside(int replica, ReduceOp op,
                             const devices::Tensor& in, devices::Tensor& out,
                             absl::Duration timeout);
  // The group meets: returns once every replica has called it.
  absl::Status Meet(int replica, absl::Duration timeout);

  std::string reduce_to_device_;
  int root_ = 0;
  // The reduce device when it runs no replica; null otherwise.
  devices::Device* outside_ = nullptr;
  // ReduceOutside's values on the reduce device, one per replica, and the
  // result (written by replica 0 between the two meetings).
  absl::Mutex outside_mu_;
  std::vector<devices::Tensor> staged_ ABSL_GUARDED_BY(outside_mu_);
  devices::Tensor staged_result_ ABSL_GUARDED_BY(outside_mu_);
  bool staged_failed_ ABSL_GUARDED_BY(outside_mu_) = false;
  absl::Mutex round_mu_;
  std::shared_ptr<Round> round_ ABSL_GUARDED_BY(round_mu_);
  // The last AbortCollectives' reason: device-memory reductions that start
  // while aborted() fail with it.
  absl::Status abort_reason_ ABSL_GUARDED_BY(round_mu_);
};

class HierarchicalCopyAllReduce : public CrossDeviceOps {
 public:
  // num_packs < 0 is rejected by Bind with INVALID_ARGUMENT.
  explicit HierarchicalCopyAllReduce(int num_packs = 1)
      : num_packs_(num_packs) {}
  std::string name() const override { return "HierarchicalCopyAllReduce"; }
  int num_packs() const { return num_packs_; }

 protected:
  absl::StatusOr<std::unique_ptr<devices::Communicator>> MakeCommunicator(
      devices::Platform& platform,
      const std::vector<std::string>& devices) override;
  absl::StatusOr<collective::PackPlan> Plan(
      const std::vector<devices::Tensor>& values,
      const CommunicationOptions& options) const override;

 private:
  int num_packs_;
};

class NcclAllReduce : public CrossDeviceOps {
 public:
  explicit NcclAllReduce(int num_packs = 1) : num_packs_(num_packs) {}
  std::string name() const override { return "NcclAllReduce"; }
  int num_packs() const { return num_packs_; }

 protected:
  absl::StatusOr<std::unique_ptr<devices::Communicator>> MakeCommunicator(
      devices::Platform& platform,
      const std::vector<std::string>& devices) override;
  absl::StatusOr<collective::PackPlan> Plan(
      const std::vector<devices::Tensor>& values,
      const CommunicationOptions& options) const override;

 private:
  int num_packs_;
};

class CollectiveAllReduce : public CrossDeviceOps {
 public:
  // `options` are every collective's defaults (TF merges them into each
  // call's options): bytes_per_pack, timeout_seconds, and implementation
  // (RING forces the ring; NCCL asks for the platform's native library).
  explicit CollectiveAllReduce(CommunicationOptions options = {}) {
    set_default_options(options);
  }
  std::string name() const override { return "CollectiveAllReduce"; }
  const CommunicationOptions& options() const { return default_options(); }

 protected:
  absl::StatusOr<std::unique_ptr<devices::Communicator>> MakeCommunicator(
      devices::Platform& platform,
      const std::vector<std::string>& devices) override;
};

// Whether `devices` is non-empty and every one of them is a GPU of
// `platform` (names it does not know count as not GPUs).
bool AllGpus(devices::Platform& platform,
             const std::vector<std::string>& devices);
// Whether any of `devices` has memory of its own (MemorySpace::kDevice, as
// a GPU); names `platform` does not know count as host memory.
bool AnyDeviceMemory(devices::Platform& platform,
                     const std::vector<std::string>& devices);

// tf.distribute's select_cross_device_ops: NcclAllReduce when every device
// is a GPU and the platform has a native collective library, else
// ReductionToOneDevice. Also returns why (TF logs it as a warning).
struct CrossDeviceOpsChoice {
  std::shared_ptr<CrossDeviceOps> ops;
  std::string reason;
};
CrossDeviceOpsChoice SelectCrossDeviceOps(
    devices::Platform& platform, const std::vector<std::string>& devices);

}  // namespace distribute

#endif  // DISTRIBUTE_CROSS_DEVICE_OPS_H_
