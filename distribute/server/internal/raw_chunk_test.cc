#include "distribute/server/internal/raw_chunk.h"

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "gtest/gtest.h"

namespace distribute {
namespace server_internal {
namespace {

using Outbound = grpc::SerializationTraits<OutboundChunk, void>;
using InboundTraits = grpc::SerializationTraits<InboundChunk, void>;

server::DeliverChunk Meta(int64_t offset, bool with_header) {
  server::DeliverChunk meta;
  meta.set_offset(offset);
  if (with_header) {
    meta.mutable_header()->set_group_key("group");
    meta.mutable_header()->set_src_rank(1);
    meta.mutable_header()->set_dst_rank(2);
    meta.mutable_header()->set_tag(77);
    meta.mutable_header()->set_total_bytes(1 << 20);
  }
  return meta;
}

std::string Joined(const InboundChunk& chunk) {
  std::string all;
  for (absl::string_view piece : chunk.pieces) {
    all.append(piece.data(), piece.size());
  }
  return all;
}

// Re-slices a serialized buffer into pieces of `step` bytes, as gRPC may
// hand a received message over in several slices.
grpc::ByteBuffer Resliced(const grpc::ByteBuffer& buffer, size_t step) {
  std::vector<grpc::Slice> slices;
  EXPECT_TRUE(buffer.Dump(&slices).ok());
  std::string flat;
  for (const grpc::Slice& slice : slices) {
    flat.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  std::vector<grpc::Slice> pieces;
  for (size_t at = 0; at < flat.size(); at += step) {
    pieces.emplace_back(flat.substr(at, step));
  }
  return grpc::ByteBuffer(pieces.data(), pieces.size());
}

TEST(RawChunkTest, RoundTripKeepsMetaAndPayloadWhateverTheSlicing) {
  std::string payload(10000, '\0');
  for (size_t i = 0; i < payload.size(); ++i) {
    payload[i] = static_cast<char>(i * 13 % 251);
  }
  for (bool with_header : {true, false}) {
    for (size_t step :
         {size_t{1}, size_t{3}, size_t{64}, size_t{4096}, size_t{1} << 20}) {
      OutboundChunk out;
      out.Set(Meta(4096, with_header),
              reinterpret_cast<const std::byte*>(payload.data()),
              payload.size());
      grpc::ByteBuffer wire;
      bool own = false;
      ASSERT_TRUE(Outbound::Serialize(out, &wire, &own).ok());
      grpc::ByteBuffer received = Resliced(wire, step);
      InboundChunk in;
      ASSERT_TRUE(InboundTraits::Deserialize(&received, &in).ok()) << step;
      EXPECT_EQ(in.meta.offset(), 4096);
      EXPECT_EQ(in.meta.has_header(), with_header);
      if (with_header) {
        EXPECT_EQ(in.meta.header().group_key(), "group");
        EXPECT_EQ(in.meta.header().tag(), 77u);
      }
      EXPECT_EQ(in.size, payload.size());
      EXPECT_EQ(Joined(in), payload) << "step " << step;
    }
  }
}

TEST(RawChunkTest, EmptyPayload) {
  OutboundChunk out;
  out.Set(Meta(0, true), nullptr, 0);
  grpc::ByteBuffer wire;
  bool own = false;
  ASSERT_TRUE(Outbound::Serialize(out, &wire, &own).ok());
  InboundChunk in;
  ASSERT_TRUE(InboundTraits::Deserialize(&wire, &in).ok());
  EXPECT_EQ(in.size, 0u);
  EXPECT_TRUE(in.pieces.empty());
  EXPECT_TRUE(in.meta.has_header());
}

TEST(RawChunkTest, PinsAreReleasedWhenGrpcDropsTheSlices) {
  const std::string payload(1000, 'x');
  PayloadPins pins;
  {
    OutboundChunk out;
    out.Set(Meta(0, false), reinterpret_cast<const std::byte*>(payload.data()),
            payload.size());
    out.pins = &pins;
    grpc::ByteBuffer wire;
    bool own = false;
    ASSERT_TRUE(Outbound::Serialize(out, &wire, &own).ok());
    std::vector<grpc::Slice> slices;
    ASSERT_TRUE(wire.Dump(&slices).ok());
    ASSERT_EQ(slices.size(), 2u);
    // The payload slice borrows the caller's bytes: no copy.
    EXPECT_EQ(reinterpret_cast<const char*>(slices[1].begin()), payload.data());
  }
  pins.WaitUntilReleased();  // Returns: the buffer and its slices are gone.
}

TEST(RawChunkTest, MalformedPrefixIsAnError) {
  const std::string garbage = "\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff";
  grpc::Slice slice(garbage);
  grpc::ByteBuffer buffer(&slice, 1);
  InboundChunk in;
  EXPECT_FALSE(InboundTraits::Deserialize(&buffer, &in).ok());
  // A prefix longer than the message.
  grpc::Slice short_slice(std::string("\x10\x01", 2));
  grpc::ByteBuffer truncated(&short_slice, 1);
  EXPECT_FALSE(InboundTraits::Deserialize(&truncated, &in).ok());
}

}  // namespace
}  // namespace server_internal
}  // namespace distribute
