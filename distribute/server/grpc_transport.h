// GrpcTransport: a devices::Transport whose ranks are tasks (processes)
// that exchange bytes through their Servers over gRPC, so the collective
// schedules that run on host threads run unchanged between machines.
//
// A Send queues the message for the peer's sender thread, which delivers it
// as one client-streaming Deliver call chunked into bytes_per_pack pieces,
// over a channel to the peer kept open for the endpoint's life; any number
// of sends may be outstanding. A Send completes once the peer's server holds
// the whole message. The receiving server matches messages to receives by
// (group, sender, tag) in order: bytes of a message whose receive is already
// posted are copied straight into the receive buffer; a message that comes
// first waits in the mailbox and is copied once when the receive is posted.
//
// Between two servers created with protocol "grpc+tcp", the messages'
// bytes take the TCP data plane instead (internal/tcp_data_plane.h): one
// connection per endpoint and peer, the message written straight from the
// send buffer and read straight into the posted receive buffer, with the
// same matching, completion and error semantics. Between servers with TLS
// options those connections are TLS sessions with the servers'
// certificates (internal/data_plane_tls.h).
//
// Example (rank 0 of two tasks; rank 1 runs the same with rank = 1):
//   distribute::GrpcTransportOptions options;
//   options.group_key = "allreduce-step-7";
//   options.rank_targets = {"10.0.0.1:2222", "10.0.0.2:2222"};
//   options.rank = 0;
//   absl::StatusOr<std::unique_ptr<devices::Transport>> transport =
//       distribute::GrpcTransport::Create(*server, options);
//   auto send = (*transport)->Send(1, /*tag=*/7, bytes);
//   absl::Status s = (*send)->Wait(absl::Seconds(30));
//
// Errors: Request::Wait gives DEADLINE_EXCEEDED naming the peer and tag;
// a size mismatch fails the receive (and, while the message is still
// arriving, its send) with INVALID_ARGUMENT; Abort() fails every pending
// request of the endpoint with UNAVAILABLE and tells the peers (best
// effort), whose pending requests then fail with UNAVAILABLE naming the
// aborting task; when the reason is DEADLINE_EXCEEDED (a collective that
// timed out on one rank) they fail with DEADLINE_EXCEEDED instead. A
// PeerMonitor aborts endpoints whose peers die. Destroying an endpoint fails
// its own pending requests but does not abort its peers (messages it already
// delivered stay receivable).
#ifndef DISTRIBUTE_SERVER_GRPC_TRANSPORT_H_
#define DISTRIBUTE_SERVER_GRPC_TRANSPORT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "devices/transport.h"
#include "distribute/collective/cost_model.h"
#include "distribute/server/channel.h"
#include "distribute/server/server.h"

namespace grpc {
class Channel;
}  // namespace grpc

namespace distribute {

namespace server_internal {
class DataPlaneTls;
class GroupMailbox;
class MailboxRegistry;
class MessageSender;
}  // namespace server_internal

// What a Deliver chunk's framing may add to its bytes: a chunk holds at
// most max_message_bytes less this.
inline constexpr int64_t kGrpcChunkOverheadBytes = int64_t{64} << 10;

struct GrpcTransportOptions {
  // Names the group on every server; unique per group instance (a group
  // that is created again after a failure needs a new key).
  std::string group_key;
  // The "host:port" of each rank's Server, by rank. Several ranks may share
  // one server.
  std::vector<std::string> rank_targets;
  // This endpoint's rank; rank_targets[rank] must be the local server.
  int rank = 0;
  // Messages travel in chunks of at most this many bytes; in
  // [1, max_message_bytes - 64 KiB].
  int64_t bytes_per_pack = int64_t{4} << 20;
  // How long Create waits for every rank's server to answer.
  absl::Duration connect_timeout = absl::Seconds(30);
};

// What AUTO algorithm selection (collective/cost_model.h) should assume of
// a group whose messages all travel over GrpcTransport (the communicator
// fills in the group size). A message between two ranks of one worker
// costs what one between workers does, so the group is one "node" whose
// non-neighbour traffic keeps bisection_fraction of a stream's rate.
// Fitted to tools/bench/grpc_allreduce_worker between processes on one
// host: it picks direct up to 256 KiB (2 processes), rhd at 256 KiB-1 MiB
// (4), and ring with 1-4 MiB chunks above. A message costs about 150 us of
// latency plus 200 us of calls and thread hand-offs, a stream moves about
// 1 GB/s, all-to-all traffic keeps 70% of that, and reduction runs at
// about 2 GB/s.
//
// With protocol "grpc+tcp" (the servers' ServerOptions::protocol) messages
// cost far less: about 30 us of latency plus 60 us of thread hand-offs per
// message, 2.5 GB/s per stream, reduction at about 12 GB/s, and pieces of
// at most 2 MiB (max_chunk_bytes); AUTO then picks direct up to 64 KiB
// (256 KiB with 2 processes), rhd at 256 KiB with 4, and ring from 1 MiB
// up, in 2 MiB pieces from 4 MiB up. Unknown protocols get gRPC's figures.
collective::GroupCosts GrpcGroupCosts(
    absl::string_view protocol = kGrpcProtocol);

class GrpcTransport : public devices::Transport {
 public:
  // An endpoint of rank options.rank on `local` (which must be running).
  // Waits, for at most connect_timeout, until every rank's server answers a
  // Ping: DEADLINE_EXCEEDED naming the ranks and tasks that did not. Then
  // registers this rank and shows every server the group's layout (the
  // task of each rank): FAILED_PRECONDITION naming both layouts when a
  // server's endpoints of the group see another. Both sides of a refusal
  // tell their peers (the refused endpoint as it fails, the server's
  // endpoints as they are aborted), so no rank waits for messages that
  // cannot come. The whole wait is bounded by connect_timeout, and ends
  // early with the abort status when the group is aborted on `local`;
  // UNAVAILABLE when a server that answered the rendezvous is unreachable
  // for 2 s after it (its task has exited: a rank that sends its messages
  // and exits before a peer's endpoint exists makes that peer's Create
  // fail, where endpoints that do not need each other could have formed).
  //
  // The check compares the tasks each endpoint lists; tasks a layout does
  // not list are not asked. MultiWorkerMirroredStrategy's workers list every
  // worker of one cluster spec (servers of another spec refuse each other),
  // so their layouts differ, if at all, in the ranks per task.
  // INVALID_ARGUMENT for an empty group key or target list, a rank outside
  // it, a bad bytes_per_pack or connect_timeout, or when
  // rank_targets[rank] is not `local`; ALREADY_EXISTS if this rank of the
  // group already has an endpoint on `local`; FAILED_PRECONDITION if `local`
  // is stopped; UNAUTHENTICATED / PERMISSION_DENIED when a peer refuses us.
  static absl::StatusOr<std::unique_ptr<devices::Transport>> Create(
      Server& local, GrpcTransportOptions options);

  GrpcTransport(const GrpcTransport&) = delete;
  GrpcTransport& operator=(const GrpcTransport&) = delete;
  ~GrpcTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(devices_.size()); }
  // "/job:worker/replica:0/task:1/device:CPU:0" for the task serving `rank`.
  const std::string& device(int rank) const override;

  absl::StatusOr<std::unique_ptr<devices::Request>> Send(
      int peer, uint64_t tag, absl::Span<const std::byte> data) override;
  absl::StatusOr<std::unique_ptr<devices::Request>> Recv(
      int peer, uint64_t tag, absl::Span<std::byte> data) override;
  absl::Status Abort(absl::Status reason) override;
  // Messages that beat their receive wait in a staging buffer.
  bool prefers_early_receives() const override { return true; }

 private:
  GrpcTransport(GrpcTransportOptions options, std::string task,
                std::vector<std::string> devices,
                ChannelOptions channel_options,
                std::vector<std::shared_ptr<grpc::Channel>> channels,
                std::vector<int> data_ports,
                std::shared_ptr<const server_internal::DataPlaneTls> tls,
                std::shared_ptr<server_internal::MailboxRegistry> registry,
                std::shared_ptr<server_internal::GroupMailbox> mailbox);

  absl::Status CheckPeer(int peer, const char* what) const;
  // The peer's sender, started on first use: over the grpc+tcp data plane
  // when both servers have one, else over gRPC calls.
  std::shared_ptr<server_internal::MessageSender> Sender(int peer);
  // Fails pending sends; the mailbox's abort listener.
  void OnAbort(const absl::Status& status);
  // Tells every peer's server, from a thread of its own, that this group is
  // aborted with `code` (UNAVAILABLE or DEADLINE_EXCEEDED for an abort;
  // FAILED_PRECONDITION passes on a layout refusal) because of `reason`
  // (best effort, once).
  void NotifyPeers(std::string reason, absl::StatusCode code);
  // The body of that thread.
  void SendAbortNotices(std::string reason, absl::StatusCode code);
  std::string Describe(int rank) const;

  const GrpcTransportOptions options_;
  const int rank_;
  const std::string task_;  // "/job:worker/task:0"
  const std::vector<std::string> devices_;
  const ChannelOptions channel_options_;
  const std::vector<std::shared_ptr<grpc::Channel>> channels_;
  // Each peer's grpc+tcp data port, 0 where messages go over gRPC (all of
  // them unless the local server has a data plane too).
  const std::vector<int> data_ports_;
  // The local server's data-plane TLS credentials (null: plaintext).
  const std::shared_ptr<const server_internal::DataPlaneTls> data_plane_tls_;
  const std::shared_ptr<server_internal::MailboxRegistry> registry_;
  const std::shared_ptr<server_internal::GroupMailbox> mailbox_;

  absl::Mutex mu_;
  std::vector<std::shared_ptr<server_internal::MessageSender>> senders_
      ABSL_GUARDED_BY(mu_);
  // The abort status once the mailbox was aborted; new senders fail with it.
  absl::Status failed_ ABSL_GUARDED_BY(mu_);
  bool notified_ ABSL_GUARDED_BY(mu_) = false;
  std::thread notifier_;  // Started by the first NotifyPeers.
};

}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_GRPC_TRANSPORT_H_
