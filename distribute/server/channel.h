// How this package's clients reach a task's Server: the options every
// outgoing call shares (cluster token, TLS, message size bound) and the
// channel factory that applies them. The Server, GrpcTransport, PeerMonitor
// and RemoteFunctionClient all create their channels here.
//
// Example:
//   distribute::ChannelOptions options;
//   options.cluster_token = "s3cret";
//   absl::StatusOr<std::shared_ptr<grpc::Channel>> channel =
//       distribute::CreateChannel("grpc://127.0.0.1:2222", options);
//   grpc::ClientContext context;
//   distribute::PrepareClientContext(options, absl::Seconds(5), context);
#ifndef DISTRIBUTE_SERVER_CHANNEL_H_
#define DISTRIBUTE_SERVER_CHANNEL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"

namespace distribute {

// The metadata key that carries the cluster token on every call.
inline constexpr char kClusterTokenMetadataKey[] = "x-distsim-cluster-token";

// The metadata keys that say which task calls and the fingerprint of its
// cluster (ClusterSpec::Fingerprint), on calls from a task.
inline constexpr char kCallerTaskMetadataKey[] = "x-distsim-task";
inline constexpr char kClusterFingerprintMetadataKey[] = "x-distsim-cluster";

// 256 MiB, the default bound on one gRPC message.
inline constexpr int64_t kDefaultMaxMessageBytes = int64_t{256} << 20;

// TLS files, all PEM. Empty paths mean "not given".
// Servers: cert_file and key_file (both or neither) turn TLS on; with
// ca_file, clients must present a certificate signed by it (mutual TLS).
// Clients: TLS is on when any path is given; ca_file verifies the servers
// (the system's roots when empty) and cert_file/key_file, when given, are
// the client's own certificate for mutual TLS.
struct TlsOptions {
  std::string cert_file;
  std::string key_file;
  std::string ca_file;
  // The name to expect in servers' certificates when it differs from the
  // host of the address dialled (e.g. "localhost" for 127.0.0.1).
  std::string target_name_override;

  bool enabled() const {
    return !cert_file.empty() || !key_file.empty() || !ca_file.empty();
  }
};

// gRPC keepalive: every `time` while a call is open, an HTTP/2 ping goes to
// the other end of the connection, and gRPC closes the connection when the
// peer does not answer within `timeout`. A peer that freezes (SIGSTOP, a host
// that hangs, a partition) keeps its connection open and reads nothing: the
// heartbeats fail its collectives, but a large send to it is stuck with its
// payload in gRPC's buffers, which gRPC lets go only when the connection
// closes. Keepalive bounds that to about time + timeout. An infinite `time`
// turns it off.
struct KeepaliveOptions {
  absl::Duration time = absl::Seconds(10);
  absl::Duration timeout = absl::Seconds(10);
};

// INVALID_ARGUMENT naming the field unless `time` is positive (or infinite)
// and `timeout` positive, both at most 2^31 - 1 ms.
absl::Status ValidateKeepalive(const KeepaliveOptions& keepalive);

struct ChannelOptions {
  // Sent as kClusterTokenMetadataKey on every call when set.
  std::optional<std::string> cluster_token;
  TlsOptions tls;
  // Bound on one message in either direction.
  int64_t max_message_bytes = kDefaultMaxMessageBytes;
  // When the caller is a task of a cluster: its name ("/job:worker/task:1")
  // and its cluster's ClusterSpec::Fingerprint(), sent on every call (and in
  // grpc+tcp hellos), so that the server of another cluster, or of one that
  // lacks this task, refuses the call instead of mixing two jobs' messages.
  // A Server sets both for its own clients; a client that is not a task
  // leaves them empty.
  std::string caller_task;
  std::string cluster_fingerprint;
  KeepaliveOptions keepalive;
};

// One gRPC channel argument (name, integer value).
struct IntChannelArg {
  const char* name;
  int value;
};

// The HTTP/2 and TCP settings for bulk transfers that CreateChannel and the
// Server apply on both ends of every connection: a large initial stream
// window (so a multi-MiB chunk is not throttled by the 64 KiB default while
// BDP probing ramps up), 16 MiB - 1 HTTP/2 frames, and large TCP reads.
const std::vector<IntChannelArg>& BulkTransferChannelArgs();

// The channel arguments of `keepalive` (valid: ValidateKeepalive) that
// CreateChannel and the Server apply on both ends of every connection: the
// pings' period and timeout (none when keepalive is off), no limit on pings
// while no data moves (the stuck send moves none), and no limit on the pings
// a server accepts (a peer with a shorter period is not cut off with
// GOAWAY "too_many_pings").
std::vector<IntChannelArg> KeepaliveChannelArgs(
    const KeepaliveOptions& keepalive);

// A channel to `target` ("host:port" or "grpc://host:port") with `options`'
// credentials, message bounds and keepalive, reconnecting quickly (backoff
// 100 ms to 1 s) after a peer restarts. INVALID_ARGUMENT for an empty target,
// a max_message_bytes outside [1, 2^31 - 1], a bad keepalive, or a TLS file
// that cannot be read
// (naming it).
absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(
    absl::string_view target, const ChannelOptions& options);

// Adds the token and caller metadata and, for a finite `timeout`, the
// deadline.
void PrepareClientContext(const ChannelOptions& options, absl::Duration timeout,
                          grpc::ClientContext& context);

// Initializes the gRPC library for the rest of the process (idempotent,
// thread-safe). It is never shut down: gRPC's full shutdown, which otherwise
// runs whenever its last object dies, can block for seconds on background
// pollers, and a task keeps gRPC for its whole life anyway. CreateChannel and
// Server::Create call it.
void InitGrpcForProcess();

// "host:port" without a leading "grpc://".
absl::string_view StripGrpcScheme(absl::string_view target);

// The cluster token stored in the file at `path` (a file keeps the secret
// out of command lines and environments that other users can read), without
// a trailing newline. INVALID_ARGUMENT naming the file when it cannot be
// read or holds no token.
absl::StatusOr<std::string> ReadClusterTokenFile(const std::string& path);

// The contents of `path`; INVALID_ARGUMENT naming `what` and the path when
// it is missing or unreadable.
absl::StatusOr<std::string> ReadPemFile(absl::string_view what,
                                        const std::string& path);

}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_CHANNEL_H_
