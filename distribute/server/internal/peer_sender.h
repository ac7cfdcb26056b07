// The sending half of the gRPC transport: one PeerSender per (endpoint,
// peer) owns a thread that delivers the endpoint's sends to that peer one
// after another, each as a client-streaming call of kDeliverRawMethod
// chunked into packs whose payload gRPC reads from the caller's buffer
// (raw_chunk.h: no protobuf copies). Send() only queues, so any number of sends
// may be outstanding; the one-at-a-time delivery keeps messages in posting
// order, which is what the receiver's matching relies on.
//
// Example:
//   server_internal::PeerSender sender(channel, options, header, 4 << 20,
//                                      "rank 1 (127.0.0.1:2223)");
//   auto op = std::make_shared<server_internal::SendOp>(...);
//   absl::Status queued = sender.Post(op);
//   op->completion.WaitFor(absl::Seconds(10));
#ifndef DISTRIBUTE_SERVER_INTERNAL_PEER_SENDER_H_
#define DISTRIBUTE_SERVER_INTERNAL_PEER_SENDER_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "devices/completion.h"
#include "distribute/server/channel.h"
#include "distribute/server/internal/raw_chunk.h"
#include "distribute/server/worker_service.grpc.pb.h"
#include "grpcpp/impl/rpc_method.h"

namespace distribute {
namespace server_internal {

// One posted send.
struct SendOp {
  uint64_t tag = 0;
  const std::byte* data = nullptr;
  size_t size = 0;
  devices::Completion completion;
};

// What a transport endpoint hands its sends to one peer: PeerSender
// (over gRPC calls) or TcpPeerSender (tcp_data_plane.h).
class MessageSender {
 public:
  virtual ~MessageSender() = default;
  // Queues `op`. The error of Fail() once it was called.
  virtual absl::Status Post(std::shared_ptr<SendOp> op) = 0;
  // Withdraws a queued op (CANCELLED), or ends the transfer in progress;
  // afterwards op's buffer is not touched again.
  virtual void Cancel(const std::shared_ptr<SendOp>& op) = 0;
  // Fails every queued and in-flight op, and later Posts, with `status`.
  // The first status wins.
  virtual void Fail(const absl::Status& status) = 0;
};

class PeerSender : public MessageSender {
 public:
  // `header` carries the group key, ranks and sending task; each message
  // fills in its tag and size.
  PeerSender(std::shared_ptr<grpc::Channel> channel, ChannelOptions options,
             server::MessageHeader header, int64_t bytes_per_pack,
             std::string peer);
  PeerSender(const PeerSender&) = delete;
  PeerSender& operator=(const PeerSender&) = delete;
  // Fails what is left (UNAVAILABLE) and joins the thread.
  ~PeerSender() override;

  absl::Status Post(std::shared_ptr<SendOp> op) override;
  // Cancels the call delivering an in-flight op and waits for it to end.
  void Cancel(const std::shared_ptr<SendOp>& op) override;
  void Fail(const absl::Status& status) override;

 private:
  void Run();
  // Delivers `op` (in flight_); returns the call's outcome. The payload's
  // slices are pinned to `pins`.
  absl::Status Deliver(const SendOp& op, grpc::ClientContext& context,
                       PayloadPins& pins);

  const std::shared_ptr<grpc::Channel> channel_;
  const grpc::internal::RpcMethod deliver_method_;
  const ChannelOptions options_;
  const server::MessageHeader header_;
  const int64_t bytes_per_pack_;
  const std::string peer_;

  absl::Mutex mu_;
  std::deque<std::shared_ptr<SendOp>> queue_ ABSL_GUARDED_BY(mu_);
  std::shared_ptr<SendOp> in_flight_ ABSL_GUARDED_BY(mu_);
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool cancel_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status failed_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // Started by the first Post.
};

}  // namespace server_internal
}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_INTERNAL_PEER_SENDER_H_
