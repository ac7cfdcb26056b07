// A devices::Communicator whose collectives are the schedules of builders.h
// run by the executor over any devices::Transport group: host threads,
// simulated devices, or processes. This is what "collectives written once"
// means: the same class serves every platform that can make a Transport.
//
// Example (N replica threads of one process):
//   auto endpoints = platform->CreateTransportGroup(device_names);
//   ScheduleCommunicator comm(*std::move(endpoints), options);
//   // in replica thread r:
//   absl::Status s = comm.AllReduce(r, in, out, {ReduceOp::kSum, timeout});
//
// Every rank must issue the same collectives in the same order (SPMD); the
// n-th collective of each rank forms one instance with its own wire tags.
// Algorithm and chunk size come from the cost model (AUTO) unless forced in
// the options; the last choice is visible through LastAllReduceSelection().
// Selections and schedules are computed once per shape and reused, so a
// repeated collective costs only its execution.
//
// Ranks that share one address space (every rank's endpoint is driven here
// and the transport offers direct_access(), as host threads do) all-reduce
// under AUTO through SharedMemoryAllReduce, reading each other's buffers
// directly; its result is bit-identical to the "direct" schedule's, and the
// selection reports "direct" (chunk 0). Forced algorithms and every other
// collective run their schedules over the transport.
#ifndef DISTRIBUTE_COLLECTIVE_SCHEDULE_COMMUNICATOR_H_
#define DISTRIBUTE_COLLECTIVE_SCHEDULE_COMMUNICATOR_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "devices/communicator.h"
#include "devices/platform.h"
#include "devices/tensor.h"
#include "devices/transport.h"
#include "distribute/collective/cost_model.h"
#include "distribute/collective/schedule.h"
#include "distribute/collective/shared_memory_all_reduce.h"

namespace distribute {
namespace collective {

struct ScheduleCommunicatorOptions {
  std::string name = "schedule";
  // The group's shape and link speeds, for AUTO selection.
  GroupCosts costs;
  // nullopt: AUTO (cost model); else this all-reduce algorithm.
  std::optional<Algorithm> all_reduce_algorithm;
  // > 0 forces the chunk size of every collective (bytes); the all-reduce
  // selection then reports it as its chunk_bytes.
  int64_t chunk_bytes = 0;
  // Channels of all-reduce, broadcast and reduce schedules
  // (ScheduleOptions::num_channels).
  int32_t num_channels = 1;
  // The hierarchical all-reduce's grid (ScheduleOptions::dims); empty:
  // costs.grid, else {ranks_per_node, nodes} of `costs`.
  std::vector<int32_t> hierarchy_dims;
  // Reduce-scatter and all-gather: nullopt AUTO (SelectShardedCollective:
  // hierarchical over costs.grid where the cost model predicts it
  // faster, else ring), or kRing or kHierarchical (over hierarchy_dims,
  // else costs.grid, else the nodes).
  std::optional<Algorithm> reduce_scatter_algorithm;
  std::optional<Algorithm> all_gather_algorithm;
  // Algorithms of the other collectives.
  Algorithm broadcast_algorithm = Algorithm::kBinaryTree;
  Algorithm reduce_algorithm = Algorithm::kBinaryTree;
  // Use SharedMemoryAllReduce for AUTO all-reduces where the transport
  // allows it (see above); false runs the cost model's schedule instead.
  bool shared_memory_all_reduce = true;
  SharedMemoryAllReduceOptions shared_memory;
  // Where the ranks' devices are found. The schedules reduce and copy with
  // host code, and the shared-memory all-reduce reads peers' buffers through
  // their pointers, so a tensor in a device's own memory (a GPU's, not
  // host_accessible()) is staged: copied to host memory before the
  // collective and its result copied back after. Without a platform such a
  // tensor is FAILED_PRECONDITION. Send and Recv hand the transport the
  // tensors' own buffers either way.
  devices::Platform* platform = nullptr;
};

// The GroupCosts of `ranks` ranks that are threads of one process
// exchanging through shared memory (devices::CreateHostTransportGroup) and
// running on at most `cpus` CPUs at once (cpus < 1 counts as 1): one node,
// about 1 us of latency a message, 10 GB/s copies, 5 GB/s reduction, 5 us a
// piece, or 100 us a piece when the ranks outnumber the CPUs (a message then
// often waits for its peer to be scheduled). AUTO on these costs picks
// direct or rhd for small messages and the ring for large ones. Where the
// figures come from: docs/benchmarks.md, "The host transport's costs".
GroupCosts SharedMemoryCosts(int32_t ranks, int32_t cpus);

// What a ScheduleCommunicator with `options` over `group_size` ranks runs
// for a call of `op` on `count` elements of `element_size` bytes (the count
// a rank's call passes: the buffer of an all-reduce, broadcast or reduce,
// an all-gather's output, a reduce-scatter's input, an all-to-all's whole
// buffer; 0 for a barrier), rooted at `root` for broadcast and reduce:
// the algorithm and the schedule's options (BuildSchedule makes the
// schedule), and for an all-reduce the cost model's selection. Its
// all-reduces in shared memory (host transports) are not covered. The
// errors of the cost model.
struct PlannedCall {
  Algorithm algorithm = Algorithm::kRing;
  ScheduleOptions schedule;
  std::optional<AllReduceSelection> selection;  // all-reduce only
};
absl::StatusOr<PlannedCall> PlanCall(const ScheduleCommunicatorOptions& options,
                                     int group_size, CollectiveOp op,
                                     int64_t count, size_t element_size,
                                     int root = 0);

class ScheduleCommunicator : public devices::Communicator {
 public:
  // `endpoints` holds the endpoints this process drives, indexed by their
  // rank() (all ranks of the group for an in-process group; one for a
  // process of a multi-process group). INVALID_ARGUMENT via Create.
  static absl::StatusOr<std::unique_ptr<ScheduleCommunicator>> Create(
      std::vector<std::unique_ptr<devices::Transport>> endpoints,
      ScheduleCommunicatorOptions options);

  ScheduleCommunicator(const ScheduleCommunicator&) = delete;
  ScheduleCommunicator& operator=(const ScheduleCommunicator&) = delete;

  const std::string& name() const override { return options_.name; }
  int size() const override { return size_; }
  const std::string& device(int rank) const override;
  // Host tensors always; device-memory ones through options.platform.
  bool accepts_host_memory() const override { return true; }

  absl::Status AllReduce(int rank, const devices::Tensor& input,
                         devices::Tensor& output,
                         const devices::CollectiveOptions& options) override;
  absl::Status AllGather(int rank, const devices::Tensor& input,
                         devices::Tensor& output,
                         const devices::CollectiveOptions& options) override;
  absl::Status ReduceScatter(
      int rank, const devices::Tensor& input, devices::Tensor& output,
      const devices::CollectiveOptions& options) override;
  absl::Status Broadcast(int rank, int root, devices::Tensor& tensor,
                         const devices::CollectiveOptions& options) override;
  absl::Status Reduce(int rank, int root, const devices::Tensor& input,
                      devices::Tensor& output,
                      const devices::CollectiveOptions& options) override;
  absl::Status AllToAll(int rank, const devices::Tensor& input,
                        devices::Tensor& output,
                        const devices::CollectiveOptions& options) override;
  absl::Status Send(int rank, int peer, const devices::Tensor& tensor,
                    const devices::CollectiveOptions& options) override;
  absl::Status Recv(int rank, int peer, devices::Tensor& tensor,
                    const devices::CollectiveOptions& options) override;
  // Aborts the transport group through this process's endpoints (the
  // group's abort reaches every rank, in this process or not).
  absl::Status Abort(absl::Status reason) override;
  // Blocks until every rank has arrived (dissemination barrier).
  absl::Status Barrier(int rank, absl::Duration timeout);

  // The selection made by the most recent AllReduce of `rank`.
  std::optional<AllReduceSelection> LastAllReduceSelection(int rank) const;

 private:
  ScheduleCommunicator(
      std::vector<std::unique_ptr<devices::Transport>> endpoints,
      ScheduleCommunicatorOptions options, int size);

  struct Call {
    CollectiveOp op;
    Algorithm algorithm;
    ScheduleOptions schedule;
    devices::DType dtype;
    devices::ReduceOp reduce_op;
    absl::Duration timeout;
  };
  // What an all-reduce of `count` elements of `element_size` bytes runs:
  // a pure function of those two and the options, so computed once.
  struct AllReducePlan {
    int64_t count = 0;
    int64_t element_size = 0;
    AllReduceSelection selection;
    std::shared_ptr<const Schedule> schedule;
  };
  // State of one rank, touched only by the thread driving it (and by
  // LastAllReduceSelection), each in its own allocation so that ranks do
  // not share cache lines.
  struct RankState {
    // Only the rank's own thread reads or writes these four.
    uint64_t next_instance = 0;
    const AllReducePlan* last_plan = nullptr;  // == last_all_reduce.get()
    // The copy of an in-place call's input.
    std::unique_ptr<std::byte[]> input_copy;
    size_t input_copy_bytes = 0;
    mutable absl::Mutex mu;
    // The plan of the rank's most recent AllReduce; written by the rank's
    // own thread (only when it changes), read by LastAllReduceSelection.
    std::shared_ptr<const AllReducePlan> last_all_reduce ABSL_GUARDED_BY(mu);
  };

  // Looks up the endpoint of `rank`, builds (or reuses) the schedule and
  // runs it with the rank's next instance tag.
  absl::Status Run(int rank, const Call& call, const devices::Tensor* input,
                   devices::Tensor* output);
  // Runs `run` on `input` and `output`, or, where either holds data in a
  // device's own memory, on host copies (see ScheduleCommunicatorOptions::
  // platform): the input copied out before, the output copied back after;
  // an in-place call's one buffer is staged once.
  absl::Status OnHost(
      const devices::Tensor* input, devices::Tensor* output,
      absl::FunctionRef<absl::Status(const devices::Tensor*, devices::Tensor*)>
          run);
  // Runs `schedule` on the rank's endpoint with its next instance tag.
  absl::Status Execute(int rank, devices::Transport& endpoint,
                       const Schedule& schedule, const Call& call,
                       const devices::Tensor* input, devices::Tensor* output);
  absl::StatusOr<devices::Transport*> Endpoint(int rank);
  absl::StatusOr<std::shared_ptr<const Schedule>> GetSchedule(
      CollectiveOp op, Algorithm algorithm, const ScheduleOptions& options);
  // The rank's last plan if it has the same shape, else the shared one
  // (selected and built on first use), which becomes the rank's last plan.
  // The plan stays valid until the rank's next AllReduce (only the rank's
  // own thread replaces it).
  absl::StatusOr<const AllReducePlan*> GetAllReducePlan(int rank, int64_t count,
                                                        int64_t element_size);
  // The call of a collective other than all-reduce (see PlanCall for
  // `count`).
  Call CallFor(CollectiveOp op, int64_t count, devices::DType dtype, int root,
               const devices::CollectiveOptions& options) const;

  const ScheduleCommunicatorOptions options_;
  const int size_;
  std::vector<std::unique_ptr<devices::Transport>> endpoints_;  // by rank
  std::vector<std::unique_ptr<RankState>> ranks_;               // by rank
  // Non-null when AUTO all-reduces read peers' buffers directly.
  std::unique_ptr<SharedMemoryAllReduce> shared_;

  // Held while a schedule is built, so that ranks calling together build
  // it once (the others wait and take it from the cache) instead of each
  // building its own copy: a ring over 256 ranks is 60 MB of steps.
  absl::Mutex build_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::map<std::tuple<int, int, int32_t, int64_t, int64_t, int64_t, int32_t,
                      int32_t>,
           std::shared_ptr<const Schedule>>
      schedules_ ABSL_GUARDED_BY(mu_);
  // By (count, element size).
  std::map<std::pair<int64_t, int64_t>, std::shared_ptr<const AllReducePlan>>
      all_reduce_plans_ ABSL_GUARDED_BY(mu_);
};

}  // namespace collective
}  // namespace distribute

#endif  // DISTRIBUTE_COLLECTIVE_SCHEDULE_COMMUNICATOR_H_
