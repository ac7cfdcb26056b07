// The server side of the package's security: which peers may call (the
// hosts of the cluster's tasks), whether a call carries the cluster token,
// whether a calling task belongs to this cluster, and the server's TLS
// credentials.
//
// Example:
//   server_internal::PeerFilter filter =
//       server_internal::PeerFilter::ForCluster(spec, /*restrict=*/true);
//   filter.Allowed("ipv4:127.0.0.1:53122");   // true for a 127.0.0.1 cluster
//   absl::Status s = server_internal::CheckClusterToken(metadata, "s3cret");
#ifndef DISTRIBUTE_SERVER_INTERNAL_SERVER_SECURITY_H_
#define DISTRIBUTE_SERVER_INTERNAL_SERVER_SECURITY_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/server/channel.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "grpcpp/support/string_ref.h"

namespace distribute {
namespace server_internal {

// The IP address in a gRPC peer string ("ipv4:10.0.0.1:5000",
// "ipv6:[::1]:5000", or its URI-escaped form "ipv6:%5B::1%5D:5000"), in
// canonical text form, with IPv4-mapped IPv6 addresses given as IPv4.
// nullopt for anything else (e.g. "unix:/path").
std::optional<std::string> PeerIp(absl::string_view grpc_peer);

// The canonical text form of an IP literal, nullopt if `text` is not one.
std::optional<std::string> CanonicalIp(absl::string_view text);

// Admits calls only from the IP addresses of the cluster's task hosts. Host
// names are resolved when the filter is built and again (at most every 5 s)
// when a call is refused, so tasks whose names resolve late are admitted;
// such a look-up holds no lock, so calls from admitted hosts never wait for
// DNS (a refused caller meanwhile is refused at once).
// When a host is 127.0.0.1 or ::1 (or a name resolving to one, such as
// "localhost"), every loopback address (127.0.0.0/8 and ::1) is admitted.
// Other loopback addresses are matched exactly; note that a client on this
// machine dialling 127.0.0.2 arrives from 127.0.0.1, so single-machine
// clusters should use 127.0.0.1.
class PeerFilter {
 public:
  // With restrict == false every peer is admitted.
  static std::unique_ptr<PeerFilter> ForCluster(
      const cluster::ClusterSpec& spec, bool restrict);
  // Admits exactly `ips` (plus all loopback with 127.0.0.1 or ::1); for
  // tests.
  static std::unique_ptr<PeerFilter> ForIps(std::vector<std::string> ips);
  // Looks hosts up with `resolver` (IPs of the given hosts) instead of DNS,
  // again at most every `interval`.
  using HostResolver =
      std::function<std::set<std::string>(const std::vector<std::string>&)>;
  static std::unique_ptr<PeerFilter> ForHostsForTesting(
      std::vector<std::string> hosts, HostResolver resolver,
      absl::Duration interval);

  PeerFilter(const PeerFilter&) = delete;
  PeerFilter& operator=(const PeerFilter&) = delete;

  bool Allowed(absl::string_view grpc_peer);

 private:
  // A null resolver looks the hosts up in DNS (getaddrinfo).
  PeerFilter(std::vector<std::string> hosts, bool restrict,
             HostResolver resolver, absl::Duration interval);
  // Adds looked-up IPs and ends the look-up (resolving_, resolved_at_).
  void Record(const std::set<std::string>& ips) ABSL_LOCKS_EXCLUDED(mu_);
  bool Contains(const std::string& ip) const ABSL_SHARED_LOCKS_REQUIRED(mu_);

  const std::vector<std::string> hosts_;
  const bool restrict_;
  const HostResolver resolver_;
  const absl::Duration interval_;
  absl::Mutex mu_;
  // A look-up runs outside mu_; this keeps it to one at a time.
  bool resolving_ ABSL_GUARDED_BY(mu_) = false;
  std::set<std::string> ips_ ABSL_GUARDED_BY(mu_);
  bool loopback_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time resolved_at_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
};

// Refuses callers that say they are tasks of another cluster (their
// ClusterSpec::Fingerprint differs) or tasks that this cluster lacks. A
// caller that presents no fingerprint does not claim to be a task (it is a
// client, such as a tool) and is left to the host filter and the token.
class CallerCheck {
 public:
  // For the server of `server_task` ("/job:worker/task:0") in `spec`.
  CallerCheck(const cluster::ClusterSpec& spec, std::string server_task);
  CallerCheck(const CallerCheck&) = delete;
  CallerCheck& operator=(const CallerCheck&) = delete;

  // OK, or PERMISSION_DENIED naming the caller (`task` at `peer`) and what
  // to fix.
  absl::Status Check(absl::string_view task, absl::string_view fingerprint,
                     absl::string_view peer) const;
  // Check() of a call's kCallerTaskMetadataKey and
  // kClusterFingerprintMetadataKey.
  absl::Status CheckMetadata(
      const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
      absl::string_view peer) const;

  const std::string& fingerprint() const { return fingerprint_; }

 private:
  const cluster::ClusterSpec spec_;
  const std::string fingerprint_;
  const std::string server_task_;
};

// The host part of "host:port" or "[v6]:port", without brackets.
std::string HostOf(absl::string_view address);

// "host:port" with the port replaced by `port` (the one a server bound when
// given port 0).
std::string WithPort(absl::string_view address, int port);

// Whether a presented cluster token equals the expected one, compared in
// time that does not depend on where they differ.
bool TokensMatch(absl::string_view got, absl::string_view expected);

// OK when no token is expected or `metadata` carries exactly `expected`
// under kClusterTokenMetadataKey; UNAUTHENTICATED (saying whether it was
// missing or wrong, never echoing either token) otherwise.
absl::Status CheckClusterToken(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
    const std::optional<std::string>& expected);

// Insecure credentials when `tls` has neither cert nor key; otherwise TLS
// with that key pair, requiring and verifying client certificates when
// ca_file is given. INVALID_ARGUMENT naming a file that is missing or
// unreadable, or when only one of cert_file and key_file is given.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> LoadServerCredentials(
    const TlsOptions& tls);

// What every server of this project sets on its builder: listening on
// `address` with `tls`'s credentials (gRPC writes the port it binds into
// *port at BuildAndStart, 0 when it cannot), messages bounded by
// `max_message_bytes` both ways, no SO_REUSEPORT (with it a second server on
// a busy port would silently share the port), the bulk-transfer settings
// (BulkTransferChannelArgs) and `keepalive`'s pings, so that a call from a
// frozen client does not hold a handler for ever. The errors of
// LoadServerCredentials.
absl::Status ConfigureServerBuilder(grpc::ServerBuilder& builder,
                                    const std::string& address,
                                    const TlsOptions& tls, int* port,
                                    int64_t max_message_bytes,
                                    const KeepaliveOptions& keepalive);

}  // namespace server_internal
}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_INTERNAL_SERVER_SECURITY_H_
