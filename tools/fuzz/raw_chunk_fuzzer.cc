// A bulk-transfer chunk as gRPC hands it to the receiver (a varint length,
// the DeliverChunk header, the payload), in slices cut where the input's
// first byte says. An accepted chunk's pieces hold exactly the bytes after
// the header, and a chunk the sender serializes is read back intact.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "distribute/server/internal/raw_chunk.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "tools/fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace si = distribute::server_internal;
  if (size == 0) return 0;
  // Slices of 1 + data[0] % 64 bytes: the reader must not care where gRPC
  // cut the message.
  const size_t cut = 1 + data[0] % 64;
  const std::string bytes(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += cut) {
    slices.emplace_back(bytes.data() + at, std::min(cut, bytes.size() - at));
  }
  grpc::ByteBuffer buffer(slices.data(), slices.size());
  si::InboundChunk chunk;
  grpc::Status status =
      grpc::SerializationTraits<si::InboundChunk>::Deserialize(&buffer, &chunk);
  if (!status.ok()) return 0;
  std::string payload;
  for (absl::string_view piece : chunk.pieces)
    payload.append(piece.data(), piece.size());
  FUZZ_CHECK(payload.size() == chunk.size, "pieces hold %zu of %zu bytes",
             payload.size(), chunk.size);
  FUZZ_CHECK(
      chunk.size <= bytes.size() &&
          bytes.compare(bytes.size() - chunk.size, chunk.size, payload) == 0,
      "the payload is not the input's tail");
  // The sender's side: the same header and payload, serialized and read.
  si::OutboundChunk out;
  out.Set(chunk.meta, reinterpret_cast<const std::byte*>(payload.data()),
          payload.size());
  grpc::ByteBuffer sent;
  bool own = false;
  FUZZ_CHECK(
      grpc::SerializationTraits<si::OutboundChunk>::Serialize(out, &sent, &own)
          .ok(),
      "serialize");
  si::InboundChunk back;
  FUZZ_CHECK(
      grpc::SerializationTraits<si::InboundChunk>::Deserialize(&sent, &back)
          .ok(),
      "a serialized chunk does not read back");
  std::string round;
  for (absl::string_view piece : back.pieces)
    round.append(piece.data(), piece.size());
  FUZZ_CHECK(round == payload, "the payload changed in a round trip");
  FUZZ_CHECK(back.meta.SerializeAsString() == chunk.meta.SerializeAsString(),
             "the header changed in a round trip");
  return 0;
}
