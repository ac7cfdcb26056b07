// Communicator: a group collective interface for backends that implement
// whole collectives themselves (NCCL, a simulated NCCL), as opposed to
// collective algorithms built from Transport sends and receives. A
// Communicator covers the devices it was created for, rank i being the i-th
// device; each rank calls every collective from its own thread with its own
// tensors, and the call returns when that rank's part is done.
//
// Example (each of the N ranks, in its own thread):
//   devices::CollectiveOptions options;
//   options.op = devices::ReduceOp::kMean;
//   options.timeout = absl::Seconds(30);
//   absl::Status s = communicator->AllReduce(rank, grads[rank], grads[rank],
//                                            options);
#ifndef DEVICES_COMMUNICATOR_H_
#define DEVICES_COMMUNICATOR_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "devices/reduce_op.h"
#include "devices/tensor.h"

namespace devices {

struct CollectiveOptions {
  ReduceOp op = ReduceOp::kSum;  // For the reducing collectives.
  // How long a rank waits for the others before DEADLINE_EXCEEDED.
  absl::Duration timeout = absl::Seconds(60);
};

// Common contract of the collectives: `rank` is the caller's rank in
// [0, size()); every rank must make the same sequence of calls with the same
// dtype, matching shapes and the same options; tensors are on the rank's
// device. Errors: INVALID_ARGUMENT for a bad rank, root or tensor,
// DEADLINE_EXCEEDED when the other ranks do not join within
// options.timeout, UNAVAILABLE when a rank is gone, UNIMPLEMENTED (naming
// the backend) for collectives the backend does not provide. Input and
// output may be the same tensor unless stated otherwise.
class Communicator {
 public:
  virtual ~Communicator() = default;

  // The backend, e.g. "nccl", "sim-nccl"; used in error messages.
  virtual const std::string& name() const = 0;
  virtual int size() const = 0;
  // Full device name of `rank` (empty outside [0, size())).
  virtual const std::string& device(int rank) const = 0;
  // Whether every rank may give tensors in host memory, also where its
  // device has memory of its own (the collectives run in host code, which
  // stages a device's tensors through host memory itself). False, the
  // default: a rank's tensors must be in its device's memory, as NCCL's.
  virtual bool accepts_host_memory() const { return false; }

  // output = op over all ranks' inputs (same shape on every rank).
  virtual absl::Status AllReduce(int rank, const Tensor& input, Tensor& output,
                                 const CollectiveOptions& options) = 0;

  // The collectives below are optional: the default implementations return
  // UNIMPLEMENTED naming the backend.

  // output = the ranks' inputs concatenated in rank order;
  // output.num_elements() == size() * input.num_elements(). No aliasing.
  virtual absl::Status AllGather(int rank, const Tensor& input, Tensor& output,
                                 const CollectiveOptions& options);
  // output = block `rank` of (op over all inputs), where input holds size()
  // equal blocks: input.num_elements() == size() * output.num_elements().
  // No aliasing.
  virtual absl::Status ReduceScatter(int rank, const Tensor& input,
                                     Tensor& output,
                                     const CollectiveOptions& options);
  // Every rank's `tensor` becomes root's `tensor`.
  virtual absl::Status Broadcast(int rank, int root, Tensor& tensor,
                                 const CollectiveOptions& options);
  // root's output = op over all inputs; other ranks' outputs are untouched.
  virtual absl::Status Reduce(int rank, int root, const Tensor& input,
                              Tensor& output, const CollectiveOptions& options);
  // input and output hold size() equal blocks; block j of the input goes to
  // rank j, block i of the output comes from rank i. No aliasing.
  virtual absl::Status AllToAll(int rank, const Tensor& input, Tensor& output,
                                const CollectiveOptions& options);
  // Point to point: rank `rank` sends `tensor` to `peer`, which posts a
  // matching Recv (same shape and dtype) naming `rank` as its peer.
  virtual absl::Status Send(int rank, int peer, const Tensor& tensor,
                            const CollectiveOptions& options);
  virtual absl::Status Recv(int rank, int peer, Tensor& tensor,
                            const CollectiveOptions& options);

  // Aborts the group, as ncclCommAbort does: every rank's pending and later
  // collectives fail with UNAVAILABLE carrying `reason` (the first reason
  // wins; later calls change nothing and return OK). A strategy calls it
  // when one replica fails, so that its peers stop waiting for it at once
  // instead of at their timeout. The communicator cannot be used again.
  // INVALID_ARGUMENT if `reason` is OK; UNIMPLEMENTED (the default) for a
  // backend that cannot abort.
  virtual absl::Status Abort(absl::Status reason);

 protected:
  // UNIMPLEMENTED: "<name()> does not implement <collective>".
  absl::Status Unimplemented(absl::string_view collective) const;
};

}  // namespace devices

#endif  // DEVICES_COMMUNICATOR_H_
