#include "devices/cuda/cuda_transport.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "devices/cuda/cuda_status.h"
#include "devices/status_macros.h"

namespace devices {
namespace cuda {
namespace {

// One posted Send or Recv.
struct Op {
  bool is_send = false;
  int src = 0;  // Sending rank.
  int dst = 0;  // Receiving rank.
  uint64_t tag = 0;
  const std::byte* send_data = nullptr;
  std::byte* recv_data = nullptr;
  size_t size = 0;
  // Set under the mailbox mutex when the op is taken to be paired; from
  // then on only the thread moving the data touches the buffers.
  bool matched = false;
  Completion completion;
};

// Unmatched sends and receives from one rank to another, in posting order.
struct Mailbox {
  absl::Mutex mu;
  std::deque<std::shared_ptr<Op>> sends ABSL_GUARDED_BY(mu);
  std::deque<std::shared_ptr<Op>> recvs ABSL_GUARDED_BY(mu);
};

std::shared_ptr<Op> TakeFirst(std::deque<std::shared_ptr<Op>>& queue,
                              uint64_t tag) {
  for (auto it = queue.begin(); it != queue.end(); ++it) {
    if ((*it)->tag == tag) {
      std::shared_ptr<Op> op = std::move(*it);
      queue.erase(it);
      return op;
    }
  }
  return nullptr;
}

// Moves bytes between any two buffers of the process, on one stream per
// GPU (created when first needed).
class Mover {
 public:
  Mover() = default;
  Mover(const Mover&) = delete;
  Mover& operator=(const Mover&) = delete;
  ~Mover() {
    absl::MutexLock lock(&mu_);
    for (auto& [ordinal, stream] : streams_) {
      ScopedCudaDevice on_device(ordinal);
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
    }
  }

  absl::Status Copy(std::byte* dst, const std::byte* src, size_t size) {
    ASSIGN_OR_RETURN(int dst_gpu, GpuOf(dst));
    ASSIGN_OR_RETURN(int src_gpu, GpuOf(src));
    if (dst_gpu < 0 && src_gpu < 0) {
      std::memcpy(dst, src, size);
      return absl::OkStatus();
    }
    const int ordinal = dst_gpu >= 0 ? dst_gpu : src_gpu;
    ScopedCudaDevice on_device(ordinal);
    RETURN_IF_ERROR(on_device.status());
    ASSIGN_OR_RETURN(cudaStream_t stream, StreamFor(ordinal));
    absl::Status s;
    if (dst_gpu >= 0 && src_gpu >= 0 && dst_gpu != src_gpu) {
      s = CudaStatus(
          cudaMemcpyPeerAsync(dst, dst_gpu, src, src_gpu, size, stream),
          absl::StrCat("cudaMemcpyPeerAsync from GPU ", src_gpu, " to GPU ",
                       dst_gpu));
    } else {
      s = CudaStatus(cudaMemcpyAsync(dst, src, size, cudaMemcpyDefault, stream),
                     absl::StrCat("cudaMemcpyAsync on GPU ", ordinal));
    }
    RETURN_IF_ERROR(s);
    return CudaStatus(cudaStreamSynchronize(stream),
                      absl::StrCat("cudaStreamSynchronize of a transfer on "
                                   "GPU ",
                                   ordinal));
  }

 private:
  // The GPU that holds `ptr`, or -1 for host memory.
  static absl::StatusOr<int> GpuOf(const void* ptr) {
    cudaPointerAttributes attributes;
    RETURN_IF_ERROR(CudaStatus(cudaPointerGetAttributes(&attributes, ptr),
                               "cudaPointerGetAttributes"));
    if (attributes.type == cudaMemoryTypeDevice ||
        attributes.type == cudaMemoryTypeManaged) {
      return attributes.device;
    }
    return -1;
  }

  absl::StatusOr<cudaStream_t> StreamFor(int ordinal) {
    absl::MutexLock lock(&mu_);
    auto it = streams_.find(ordinal);
    if (it != streams_.end()) return it->second;
    cudaStream_t stream = nullptr;
    RETURN_IF_ERROR(
        CudaStatus(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                   "cudaStreamCreateWithFlags for the transport"));
    streams_[ordinal] = stream;
    return stream;
  }

  absl::Mutex mu_;
  absl::flat_hash_map<int, cudaStream_t> streams_ ABSL_GUARDED_BY(mu_);
};

class Group {
 public:
  Group(std::vector<std::string> devices, CudaTransportOptions options)
      : devices_(std::move(devices)),
        options_(options),
        size_(static_cast<int>(devices_.size())),
        gone_(new std::atomic<bool>[devices_.size()]) {
    for (size_t i = 0; i < devices_.size() * devices_.size(); ++i) {
      boxes_.push_back(std::make_unique<Mailbox>());
    }
    for (int r = 0; r < size_; ++r) gone_[r].store(false);
  }

  int size() const { return size_; }
  const CudaTransportOptions& options() const { return options_; }
  const std::string& device(int rank) const {
    static const std::string* const kNone = new std::string();
    return rank >= 0 && rank < size_ ? devices_[rank] : *kNone;
  }

  // Matches `op` with a posted counterpart (and moves the data) or queues it.
  absl::Status Post(const std::shared_ptr<Op>& op) {
    Mailbox& mailbox = box(op->src, op->dst);
    std::shared_ptr<Op> peer;
    {
      absl::MutexLock lock(&mailbox.mu);
      RETURN_IF_ERROR(CheckOpen(op->src, op->dst));
      auto& others = op->is_send ? mailbox.recvs : mailbox.sends;
      peer = TakeFirst(others, op->tag);
      if (peer == nullptr) {
        (op->is_send ? mailbox.sends : mailbox.recvs).push_back(op);
        return absl::OkStatus();
      }
      peer->matched = true;
      op->matched = true;
    }
    if (op->is_send) {
      Transfer(*op, *peer);
    } else {
      Transfer(*peer, *op);
    }
    return absl::OkStatus();
  }

  // Withdraws an incomplete op whose request is destroyed, or waits for its
  // transfer in progress.
  void Cancel(const std::shared_ptr<Op>& op) {
    Mailbox& mailbox = box(op->src, op->dst);
    bool withdrawn = false;
    {
      absl::MutexLock lock(&mailbox.mu);
      if (!op->matched) {
        auto& queue = op->is_send ? mailbox.sends : mailbox.recvs;
        auto it = std::find(queue.begin(), queue.end(), op);
        if (it != queue.end()) queue.erase(it);
        withdrawn = true;
      }
    }
    if (withdrawn) {
      op->completion.Complete(
          absl::CancelledError("request destroyed before it completed"));
    } else {
      op->completion.WaitFor(absl::InfiniteDuration());  // One copy away.
    }
  }

  absl::Status Abort(int rank, absl::Status reason) {
    if (reason.ok()) {
      return absl::InvalidArgumentError(
          "Transport::Abort needs a non-OK reason saying why the group is "
          "aborted");
    }
    {
      absl::MutexLock lock(&abort_mu_);
      if (!abort_status_.ok()) return absl::OkStatus();
      abort_status_ = absl::UnavailableError(absl::StrCat(
          "CUDA transport group of ", size_, " ranks was aborted by rank ",
          rank, ": ", reason.ToString()));
      aborted_.store(true);
    }
    for (int src = 0; src < size_; ++src) {
      for (int dst = 0; dst < size_; ++dst) Drain(src, dst);
    }
    return absl::OkStatus();
  }

  void Leave(int rank) {
    gone_[rank].store(true);
    for (int other = 0; other < size_; ++other) {
      Drain(rank, other);
      if (other != rank) Drain(other, rank);
    }
  }

 private:
  Mailbox& box(int src, int dst) { return *boxes_[src * size_ + dst]; }

  // Moves the message and completes both sides.
  void Transfer(Op& send, Op& recv) {
    absl::Status status;
    if (send.size != recv.size) {
      status = absl::InvalidArgumentError(absl::StrCat(
          "size mismatch for tag ", send.tag, " from rank ", send.src,
          " to rank ", send.dst, ": Send has ", send.size,
          " bytes but the matching Recv expects ", recv.size,
          " bytes; both sides must agree on the message size"));
    } else if (send.size > 0) {
      status = mover_.Copy(recv.recv_data, send.send_data, send.size);
      if (!status.ok()) {
        status = absl::Status(
            status.code(),
            absl::StrCat("moving tag ", send.tag, " (", send.size,
                         " bytes) from rank ", send.src, " to rank ", send.dst,
                         ": ", status.message()));
      }
    }
    recv.completion.Complete(status);
    send.completion.Complete(status);
  }

  absl::Status CheckOpen(int src, int dst) {
    if (aborted_.load()) {
      absl::MutexLock lock(&abort_mu_);
      return abort_status_;
    }
    for (int rank : {src, dst}) {
      if (gone_[rank].load()) {
        return absl::UnavailableError(absl::StrCat(
            "rank ", rank, " (", devices_[rank],
            ") has left the transport group (its endpoint was destroyed); "
            "messages between ranks ",
            src, " and ", dst, " can no longer be delivered"));
      }
    }
    return absl::OkStatus();
  }

  void Drain(int src, int dst) {
    Mailbox& mailbox = box(src, dst);
    std::deque<std::shared_ptr<Op>> failed;
    absl::Status status;
    {
      absl::MutexLock lock(&mailbox.mu);
      status = CheckOpen(src, dst);
      if (status.ok()) return;
      for (auto* queue : {&mailbox.sends, &mailbox.recvs}) {
        for (auto& op : *queue) failed.push_back(std::move(op));
        queue->clear();
      }
    }
    for (auto& op : failed) op->completion.Complete(status);
  }

  const std::vector<std::string> devices_;
  const CudaTransportOptions options_;
  const int size_;
  std::vector<std::unique_ptr<Mailbox>> boxes_;  // [src * size + dst]
  std::unique_ptr<std::atomic<bool>[]> gone_;
  std::atomic<bool> aborted_{false};
  absl::Mutex abort_mu_;
  absl::Status abort_status_ ABSL_GUARDED_BY(abort_mu_);
  Mover mover_;
};

class CudaRequest : public Request {
 public:
  CudaRequest(std::shared_ptr<Group> group, std::shared_ptr<Op> op)
      : group_(std::move(group)), op_(std::move(op)) {}
  CudaRequest(const CudaRequest&) = delete;
  CudaRequest& operator=(const CudaRequest&) = delete;
  ~CudaRequest() override {
    if (!op_->completion.done()) group_->Cancel(op_);
  }

  absl::Status Wait(absl::Duration timeout) override {
    if (op_->completion.WaitFor(timeout, group_->options().spin)) {
      return op_->completion.status();
    }
    const double seconds = absl::ToDoubleSeconds(timeout);
    if (op_->is_send) {
      return absl::DeadlineExceededError(absl::StrFormat(
          "Send from rank %d to rank %d tag %d (%d bytes) was not received "
          "within %gs; the receiver may be slow, stuck, or waiting for a "
          "different tag",
          op_->src, op_->dst, op_->tag, op_->size, seconds));
    }
    return absl::DeadlineExceededError(absl::StrFormat(
        "Recv on rank %d of the message from rank %d tag %d (%d bytes) did "
        "not arrive within %gs; the sender may be slow, stuck, or sending a "
        "different tag",
        op_->dst, op_->src, op_->tag, op_->size, seconds));
  }

  bool IsComplete() const override { return op_->completion.done(); }

 private:
  const std::shared_ptr<Group> group_;
  const std::shared_ptr<Op> op_;
};

class CudaTransport : public Transport {
 public:
  CudaTransport(std::shared_ptr<Group> group, int rank)
      : group_(std::move(group)), rank_(rank) {}
  CudaTransport(const CudaTransport&) = delete;
  CudaTransport& operator=(const CudaTransport&) = delete;
  ~CudaTransport() override { group_->Leave(rank_); }

  int rank() const override { return rank_; }
  int size() const override { return group_->size(); }
  const std::string& device(int rank) const override {
    return group_->device(rank);
  }

  absl::StatusOr<std::unique_ptr<Request>> Send(
      int peer, uint64_t tag, absl::Span<const std::byte> data) override {
    RETURN_IF_ERROR(CheckPeer(peer, "Send"));
    auto op = std::make_shared<Op>();
    op->is_send = true;
    op->src = rank_;
    op->dst = peer;
    op->tag = tag;
    op->send_data = data.data();
    op->size = data.size();
    return Post(std::move(op));
  }

  absl::StatusOr<std::unique_ptr<Request>> Recv(
      int peer, uint64_t tag, absl::Span<std::byte> data) override {
    RETURN_IF_ERROR(CheckPeer(peer, "Recv"));
    auto op = std::make_shared<Op>();
    op->src = peer;
    op->dst = rank_;
    op->tag = tag;
    op->recv_data = data.data();
    op->size = data.size();
    return Post(std::move(op));
  }

  absl::Status Abort(absl::Status reason) override {
    return group_->Abort(rank_, std::move(reason));
  }

 private:
  absl::Status CheckPeer(int peer, absl::string_view what) const {
    if (peer < 0 || peer >= group_->size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, " on rank ", rank_, " names peer ", peer,
          ", outside the group's ranks [0, ", group_->size(), ")"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<Request>> Post(std::shared_ptr<Op> op) {
    RETURN_IF_ERROR(group_->Post(op));
    return std::unique_ptr<Request>(new CudaRequest(group_, std::move(op)));
  }

  const std::shared_ptr<Group> group_;
  const int rank_;
};

}  // namespace

absl::StatusOr<std::vector<std::unique_ptr<Transport>>>
CreateCudaTransportGroup(std::vector<std::string> device_names,
                         CudaTransportOptions options) {
  if (device_names.empty()) {
    return absl::InvalidArgumentError(
        "a transport group needs at least one device");
  }
  const int size = static_cast<int>(device_names.size());
  auto group = std::make_shared<Group>(std::move(device_names), options);
  std::vector<std::unique_ptr<Transport>> endpoints;
  endpoints.reserve(static_cast<size_t>(size));
  for (int rank = 0; rank < size; ++rank) {
    endpoints.push_back(std::make_unique<CudaTransport>(group, rank));
  }
  return endpoints;
}

}  // namespace cuda
}  // namespace devices
