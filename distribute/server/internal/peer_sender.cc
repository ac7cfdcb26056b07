#include "distribute/server/internal/peer_sender.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/server/internal/grpc_status.h"

namespace distribute {
namespace server_internal {

PeerSender::PeerSender(std::shared_ptr<grpc::Channel> channel,
                       ChannelOptions options, server::MessageHeader header,
                       int64_t bytes_per_pack, std::string peer)
    : channel_(std::move(channel)),
      deliver_method_(kDeliverRawMethod,
                      grpc::internal::RpcMethod::CLIENT_STREAMING, channel_),
      options_(std::move(options)),
      header_(std::move(header)),
      bytes_per_pack_(bytes_per_pack),
      peer_(std::move(peer)) {}

PeerSender::~PeerSender() {
  Fail(absl::UnavailableError(
      absl::StrCat("the transport endpoint was destroyed before its send to ",
                   peer_, " was delivered")));
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

absl::Status PeerSender::Post(std::shared_ptr<SendOp> op) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(failed_);
  queue_.push_back(std::move(op));
  if (!thread_.joinable()) thread_ = std::thread([this] { Run(); });
  return absl::OkStatus();
}

void PeerSender::Cancel(const std::shared_ptr<SendOp>& op) {
  bool withdrawn = false;
  {
    absl::MutexLock lock(&mu_);
    if (op->completion.done()) return;
    auto it = std::find(queue_.begin(), queue_.end(), op);
    if (it != queue_.end()) {
      queue_.erase(it);
      withdrawn = true;
    } else if (in_flight_ == op) {
      cancel_in_flight_ = true;
      // Null once the call has ended (its payload is still being released).
      if (context_ != nullptr) context_->TryCancel();
    }
    // Otherwise the sender thread is completing it right now.
  }
  if (withdrawn) {
    op->completion.Complete(
        absl::CancelledError("request destroyed before it completed"));
    return;
  }
  op->completion.WaitFor(absl::InfiniteDuration());
}

void PeerSender::Fail(const absl::Status& status) {
  std::deque<std::shared_ptr<SendOp>> failed;
  {
    absl::MutexLock lock(&mu_);
    if (failed_.ok()) failed_ = status;
    failed.swap(queue_);
    if (context_ != nullptr) context_->TryCancel();
  }
  for (auto& op : failed) op->completion.Complete(status);
}

void PeerSender::Run() {
  while (true) {
    std::shared_ptr<SendOp> op;
    // Declared before the context: the call (which the context holds) must
    // be gone before the pins are waited for.
    PayloadPins pins;
    auto context = std::make_unique<grpc::ClientContext>();
    PrepareClientContext(options_, absl::InfiniteDuration(), *context);
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](PeerSender* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
            return self->stopping_ || !self->queue_.empty();
          },
          this));
      if (queue_.empty()) return;  // Stopping.
      op = std::move(queue_.front());
      queue_.pop_front();
      if (!failed_.ok()) {
        // Fail() empties the queue; an op here was posted before it ran.
        op->completion.Complete(failed_);
        continue;
      }
      in_flight_ = op;
      context_ = context.get();
      cancel_in_flight_ = false;
    }
    absl::Status status = Deliver(*op, *context, pins);
    {
      absl::MutexLock lock(&mu_);
      context_ = nullptr;
    }
    // gRPC drops the payload's slices when the call is destroyed, if not
    // before (a failed call may leave them queued); only then is the
    // caller's buffer free again.
    context.reset();
    pins.WaitUntilReleased();
    {
      absl::MutexLock lock(&mu_);
      in_flight_.reset();
      if (!status.ok()) {
        if (!failed_.ok()) {
          status = failed_;
        } else if (cancel_in_flight_) {
          status =
              absl::CancelledError("request destroyed before it completed");
        }
      }
    }
    op->completion.Complete(status);
  }
}

absl::Status PeerSender::Deliver(const SendOp& op, grpc::ClientContext& context,
                                 PayloadPins& pins) {
  server::DeliverResponse response;
  // The call's metadata goes out with its first chunk rather than in a
  // round of its own.
  context.set_initial_metadata_corked(true);
  std::unique_ptr<grpc::ClientWriter<OutboundChunk>> writer(
      grpc::internal::ClientWriterFactory<OutboundChunk>::Create(
          channel_.get(), deliver_method_, &context, &response));
  server::DeliverChunk meta;
  *meta.mutable_header() = header_;
  meta.mutable_header()->set_tag(op.tag);
  meta.mutable_header()->set_total_bytes(static_cast<int64_t>(op.size));
  OutboundChunk chunk;
  chunk.pins = &pins;
  size_t offset = 0;
  bool closed = false;
  do {
    const size_t n =
        std::min(op.size - offset, static_cast<size_t>(bytes_per_pack_));
    meta.set_offset(static_cast<int64_t>(offset));
    chunk.Set(meta, op.data + offset, n);
    // The last chunk also half-closes the stream, in the same batch.
    grpc::WriteOptions write_options;
    const bool last = offset + n == op.size;
    if (last) write_options.set_last_message();
    // Even a failed last write has closed the stream (a second close is an
    // API misuse); a failed write means the call is over and Finish says
    // why.
    closed = last;
    if (!writer->Write(chunk, write_options)) break;
    meta.clear_header();
    offset += n;
  } while (offset < op.size);
  if (!closed) writer->WritesDone();
  grpc::Status status = writer->Finish();
  if (status.ok()) return absl::OkStatus();
  return absl::Status(
      static_cast<absl::StatusCode>(status.error_code()),
      absl::StrCat("Send to ", peer_, " tag ", op.tag, " (", op.size,
                   " bytes) failed: ", status.error_message()));
}

}  // namespace server_internal
}  // namespace distribute
