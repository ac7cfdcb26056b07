// The wire form of the gRPC transport's message chunks, written and read
// without copying the payload through protobuf: a sender's chunk is a
// gRPC byte buffer of two slices, a small serialized prefix (a DeliverChunk
// with its header and offset, no data) and a slice that borrows the bytes
// of the sender's buffer; a receiver keeps the slices gRPC read from the
// socket and copies their bytes once, straight into the posted receive
// buffer (or the mailbox's staging). The chunks travel on the RPC
// kDeliverRawMethod (client streaming, answered by a DeliverResponse),
// which the Server registers beside WorkerService.
//
// Layout: varint(prefix length) | prefix | payload bytes.
//
// Example (sending):
//   OutboundChunk chunk;
//   chunk.Set(meta, data + offset, n);   // meta: header (first) and offset
//   writer->Write(chunk);                // data must outlive the call
#ifndef DISTRIBUTE_SERVER_INTERNAL_RAW_CHUNK_H_
#define DISTRIBUTE_SERVER_INTERNAL_RAW_CHUNK_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "distribute/server/worker_service.pb.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/config.h"
#include "grpcpp/support/slice.h"
#include "grpcpp/support/status.h"

namespace distribute {
namespace server_internal {

// The full name of the raw Deliver method.
inline constexpr char kDeliverRawMethod[] =
    "/distribute.server.BulkTransfer/Deliver";

// Counts the payload slices of a message that gRPC still holds: a send's
// buffer may be released (its request completed) only once gRPC has
// dropped every slice that borrows it, which on a cancelled or failed call
// can be after the call has ended.
class PayloadPins {
 public:
  PayloadPins();
  PayloadPins(const PayloadPins&) = delete;
  PayloadPins& operator=(const PayloadPins&) = delete;

  // A slice of `data` whose release gRPC reports to these pins.
  grpc::Slice Pin(const std::byte* data, size_t size);
  // Blocks until every pinned slice was released (gRPC drops them when the
  // bytes are written or the call and its connection are torn down).
  void WaitUntilReleased();

 private:
  struct State;
  struct Ref;
  static void Release(void* ref);
  const std::shared_ptr<State> state_;
};

// A chunk to send; `data` is borrowed (it must stay alive and unchanged
// until `pins` report it released, or, without pins, until the call that
// writes the chunk has finished).
struct OutboundChunk {
  // Sets the prefix from `meta` (its data field must be empty) and the
  // payload.
  void Set(const server::DeliverChunk& meta, const std::byte* payload,
           size_t payload_size);

  std::string prefix;  // varint(length) and the serialized meta.
  const std::byte* data = nullptr;
  size_t size = 0;
  PayloadPins* pins = nullptr;
};

// A received chunk: its meta (header, offset) and its payload as pieces of
// the slices gRPC read, which `slices` keeps alive.
//
// A reader that reads the next chunk into the same object calls
// HandBack() first: gRPC deserializes (and frees the previous slices) on
// one of its own threads, ordered after the reader's Read call by gRPC's
// queues, which ThreadSanitizer cannot see (the system gRPC is not
// instrumented); HandBack and Deserialize carry that order in the
// project's code.
struct InboundChunk {
  InboundChunk() = default;
  InboundChunk(const InboundChunk&) = delete;
  InboundChunk& operator=(const InboundChunk&) = delete;
  ~InboundChunk();

  void HandBack() { handed_back.store(true, std::memory_order_release); }
  // Drops the slices (and the pieces that point into them).
  void DropSlices();

  server::DeliverChunk meta;
  std::vector<grpc::Slice> slices;
  std::vector<absl::string_view> pieces;
  size_t size = 0;
  std::atomic<bool> handed_back{false};
};

}  // namespace server_internal
}  // namespace distribute

namespace grpc {

template <>
class SerializationTraits<distribute::server_internal::OutboundChunk, void> {
 public:
  static Status Serialize(const distribute::server_internal::OutboundChunk& m,
                          ByteBuffer* buffer, bool* own_buffer);
};

template <>
class SerializationTraits<distribute::server_internal::InboundChunk, void> {
 public:
  // Takes `buffer` (gRPC hands its ownership to the deserializer).
  static Status Deserialize(ByteBuffer* buffer,
                            distribute::server_internal::InboundChunk* m);
};

}  // namespace grpc

#endif  // DISTRIBUTE_SERVER_INTERNAL_RAW_CHUNK_H_
