// The grpc+tcp data plane's hello as a receiving server reads it from a new
// connection (distribute/server/internal/tcp_data_plane.h): a u32 length,
// then that many bytes of DataPlaneHello. The input's first byte says
// whether the server has a cluster token; the rest is what the connection
// sent. An accepted hello carries the server's token and names a pair that
// can be received from, and the sender's encoding of it reads back as the
// same hello; a refusal never echoes the server's token.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "distribute/server/internal/tcp_data_plane.h"
#include "distribute/server/worker_service.pb.h"
#include "tools/fuzz/fuzz_check.h"

namespace {

constexpr char kToken[] = "fuzz-cluster-token-5f3a";
constexpr char kTask[] = "/job:worker/task:0";

// The reads of TcpDataPlane::Serve, on bytes instead of a socket. Returns
// nullopt when the connection would still be waiting for bytes.
std::optional<absl::StatusOr<distribute::server::DataPlaneHello>> Read(
    absl::string_view wire, const std::optional<std::string>& token) {
  namespace si = distribute::server_internal;
  if (wire.size() < 4) return std::nullopt;
  uint32_t length = 0;
  for (int i = 0; i < 4; ++i) {
    length |= static_cast<uint32_t>(static_cast<unsigned char>(wire[i]))
              << (8 * i);
  }
  absl::Status valid = si::CheckDataPlaneHelloLength(length);
  if (!valid.ok())
    return absl::StatusOr<distribute::server::DataPlaneHello>(valid);
  if (wire.size() - 4 < length) return std::nullopt;
  return si::DecodeDataPlaneHello(wire.substr(4, length), token, kTask);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace si = distribute::server_internal;
  if (size == 0) return 0;
  std::optional<std::string> token;
  if (data[0] & 1) token = kToken;
  const absl::string_view wire(reinterpret_cast<const char*>(data) + 1,
                               size - 1);
  auto read = Read(wire, token);
  if (!read.has_value()) return 0;
  if (!read->ok()) {
    FUZZ_CHECK(!absl::StrContains(read->status().message(), kToken),
               "a refusal echoes the server's token");
    FUZZ_CHECK(read->status().code() == absl::StatusCode::kInvalidArgument ||
                   read->status().code() == absl::StatusCode::kUnauthenticated,
               "a refusal of unexpected code %d",
               static_cast<int>(read->status().code()));
    return 0;
  }
  const distribute::server::DataPlaneHello& hello = **read;
  FUZZ_CHECK(!hello.header().group_key().empty() &&
                 hello.header().src_rank() >= 0 &&
                 hello.header().dst_rank() >= 0,
             "an accepted hello names no receivable pair");
  if (token.has_value()) {
    FUZZ_CHECK(hello.cluster_token() == kToken,
               "a hello without the server's token was accepted");
  }
  // What a sender writes for this hello reads back as the same hello.
  const std::string again = si::EncodeDataPlaneHello(hello);
  auto back = Read(again, token);
  FUZZ_CHECK(back.has_value() && back->ok(),
             "an accepted hello, re-encoded, is refused");
  FUZZ_CHECK((*back)->SerializeAsString() == hello.SerializeAsString(),
             "a hello changed in a round trip");
  return 0;
}
