// Transport: one rank's endpoint in a group of ranks that exchange bytes,
// point to point. It is the only interface collective algorithms use (as
// Gloo's pairs and TensorFlow's CollectiveRemoteAccess), so one ring or tree
// schedule runs on host shared memory, on gRPC between processes and on
// simulated links.
//
// Example (rank 0 sends 4 KiB to rank 1, which receives it):
//   // rank 0:
//   absl::StatusOr<std::unique_ptr<devices::Request>> send =
//       transport->Send(1, /*tag=*/7, absl::MakeConstSpan(buffer));
//   absl::Status sent = (*send)->Wait(absl::Seconds(30));
//   // rank 1:
//   auto recv = transport->Recv(0, /*tag=*/7, absl::MakeSpan(buffer));
//   absl::Status received = (*recv)->Wait(absl::Seconds(30));
#ifndef DEVICES_TRANSPORT_H_
#define DEVICES_TRANSPORT_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "devices/abort_code.h"

namespace devices {

class DirectAccessGroup;  // devices/direct_access.h

// One posted Send or Recv.
class Request {
 public:
  // Destroying a request that has not completed cancels it: if it was not
  // yet matched it is withdrawn (its buffer is never touched again);
  // otherwise the destructor waits for the transfer in progress to finish.
  virtual ~Request() = default;

  // Blocks until the transfer completes or `timeout` passes. Returns:
  //  OK                 the data has been delivered (Send: the receiver has
  //                     it, or the transport has copied it out of the
  //                     sender's buffer; Recv: the buffer holds it).
  //  DEADLINE_EXCEEDED  not complete after `timeout`, e.g. "Recv from rank 1
  //                     tag 7 (4096 bytes) did not arrive within 5s ...";
  //                     the request stays posted and Wait may be called
  //                     again.
  //  UNAVAILABLE        the group was aborted or the peer is gone.
  //  INVALID_ARGUMENT   the matching Send and Recv have different sizes
  //                     (both requests fail; the pair is consumed).
  // Thread-safe; after completion every call returns the same status.
  virtual absl::Status Wait(absl::Duration timeout) = 0;

  // True once the request has completed (in any way). Never blocks.
  virtual bool IsComplete() const = 0;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // This endpoint's rank, in [0, size()).
  virtual int rank() const = 0;
  // The number of ranks in the group.
  virtual int size() const = 0;
  // The full name of the device of `rank`. Precondition: 0 <= rank < size()
  // (an empty string otherwise).
  virtual const std::string& device(int rank) const = 0;

  // Posts a send of `data` to `peer` with `tag` and returns at once. The
  // caller keeps `data` alive and unchanged until the request completes (or
  // is destroyed). Messages with the same (sender, receiver, tag) are
  // matched to receives in the order posted; different tags are independent.
  // A rank may send to itself. Errors known when posting are returned
  // directly: INVALID_ARGUMENT for a peer outside [0, size()), UNAVAILABLE
  // if the group is aborted or the peer is gone. Thread-safe.
  virtual absl::StatusOr<std::unique_ptr<Request>> Send(
      int peer, uint64_t tag, absl::Span<const std::byte> data) = 0;

  // Posts a receive into `data` of the message from `peer` with `tag`, which
  // must have exactly data.size() bytes; returns at once. The caller keeps
  // `data` alive and does not touch it until the request completes (or is
  // destroyed). Same errors as Send. Thread-safe.
  virtual absl::StatusOr<std::unique_ptr<Request>> Recv(
      int peer, uint64_t tag, absl::Span<std::byte> data) = 0;

  // Aborts the whole group: every pending request of every rank fails with
  // UNAVAILABLE carrying `reason` (DEADLINE_EXCEEDED when `reason` is: see
  // GroupAbortCode), and so do later Send/Recv calls. The first reason an
  // endpoint learns of wins there: a later Abort on an endpoint that knows
  // of one changes nothing and returns OK. (Ranks in different processes
  // that abort before either hears of the other may each keep their own.)
  // INVALID_ARGUMENT if `reason` is OK (an abort needs a cause).
  virtual absl::Status Abort(absl::Status reason) = 0;

  // Optional capability: non-null when the ranks of this group are threads
  // of one process, so that a rank may read its peers' buffers directly,
  // synchronised by the returned group (which shares this group's abort).
  // Owned by the transport group; valid while this endpoint lives. Null
  // (the default) for transports that must move bytes as messages:
  // processes, simulated links.
  virtual DirectAccessGroup* direct_access() { return nullptr; }

  // Performance hint: true when a message that arrives before its receive
  // is posted costs extra (staged, then copied again), as between
  // processes. The collective executor then posts every receive that waits
  // for nothing ahead of the schedule's other steps. False (the default)
  // where early receives buy nothing or cost something: on simulated links
  // every posted receive starts a flow at once, and flows between one pair
  // share the link instead of queueing.
  virtual bool prefers_early_receives() const { return false; }
};

}  // namespace devices

#endif  // DEVICES_TRANSPORT_H_
