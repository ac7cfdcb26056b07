#include "distribute/server/internal/server_security.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "devices/status_macros.h"
#include "grpcpp/security/server_credentials.h"

namespace distribute {
namespace server_internal {
namespace {

bool IsLoopback(const std::string& ip) {
  return absl::StartsWith(ip, "127.") || ip == "::1";
}

}  // namespace

std::string HostOf(absl::string_view address) {
  if (absl::StartsWith(address, "[")) {
    const size_t close = address.find(']');
    if (close != absl::string_view::npos) {
      return std::string(address.substr(1, close - 1));
    }
  }
  const size_t colon = address.rfind(':');
  return std::string(
      colon == absl::string_view::npos ? address : address.substr(0, colon));
}

std::string WithPort(absl::string_view address, int port) {
  const size_t colon = address.rfind(':');
  return absl::StrCat(address.substr(0, colon), ":", port);
}

bool TokensMatch(absl::string_view got, absl::string_view expected) {
  // Compares every byte whatever the first difference, so the time taken
  // does not reveal how much of the token was right.
  unsigned char diff = got.size() == expected.size() ? 0 : 1;
  for (size_t i = 0; i < got.size(); ++i) {
    const char want = i < expected.size() ? expected[i] : '\0';
    diff |= static_cast<unsigned char>(got[i] ^ want);
  }
  return diff == 0;
}

std::optional<std::string> CanonicalIp(absl::string_view text) {
  const std::string ip(text);
  in_addr v4;
  if (inet_pton(AF_INET, ip.c_str(), &v4) == 1) {
    char out[INET_ADDRSTRLEN];
    if (inet_ntop(AF_INET, &v4, out, sizeof(out)) == nullptr) {
      return std::nullopt;
    }
    return std::string(out);
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, ip.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_V4MAPPED(&v6)) {
      in_addr mapped;
      std::memcpy(&mapped, &v6.s6_addr[12], sizeof(mapped));
      char out[INET_ADDRSTRLEN];
      if (inet_ntop(AF_INET, &mapped, out, sizeof(out)) == nullptr) {
        return std::nullopt;
      }
      return std::string(out);
    }
    char out[INET6_ADDRSTRLEN];
    if (inet_ntop(AF_INET6, &v6, out, sizeof(out)) == nullptr) {
      return std::nullopt;
    }
    return std::string(out);
  }
  return std::nullopt;
}

std::optional<std::string> PeerIp(absl::string_view grpc_peer) {
  std::string peer = absl::StrReplaceAll(
      grpc_peer, {{"%5B", "["}, {"%5D", "]"}, {"%5b", "["}, {"%5d", "]"}});
  absl::string_view rest = peer;
  if (absl::ConsumePrefix(&rest, "ipv4:")) {
    const size_t colon = rest.rfind(':');
    if (colon == absl::string_view::npos) return std::nullopt;
    return CanonicalIp(rest.substr(0, colon));
  }
  if (absl::ConsumePrefix(&rest, "ipv6:")) {
    if (!absl::ConsumePrefix(&rest, "[")) return std::nullopt;
    const size_t close = rest.find(']');
    if (close == absl::string_view::npos) return std::nullopt;
    absl::string_view ip = rest.substr(0, close);
    const size_t zone = ip.find('%');  // fe80::1%eth0
    if (zone != absl::string_view::npos) ip = ip.substr(0, zone);
    return CanonicalIp(ip);
  }
  return std::nullopt;
}

namespace {

// The canonical IPs of `hosts` (IP literals or names, looked up with
// getaddrinfo; names that do not resolve add nothing).
std::set<std::string> LookUpHosts(const std::vector<std::string>& hosts) {
  std::set<std::string> ips;
  for (const std::string& host : hosts) {
    std::optional<std::string> literal = CanonicalIp(host);
    if (literal.has_value()) {
      ips.insert(*literal);
      continue;
    }
    addrinfo hints;
    std::memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* results = nullptr;
    if (getaddrinfo(host.c_str(), nullptr, &hints, &results) != 0) continue;
    for (addrinfo* ai = results; ai != nullptr; ai = ai->ai_next) {
      char text[INET6_ADDRSTRLEN];
      const void* raw = nullptr;
      if (ai->ai_family == AF_INET) {
        raw = &reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_addr;
      } else if (ai->ai_family == AF_INET6) {
        raw = &reinterpret_cast<sockaddr_in6*>(ai->ai_addr)->sin6_addr;
      } else {
        continue;
      }
      if (inet_ntop(ai->ai_family, raw, text, sizeof(text)) == nullptr)
        continue;
      std::optional<std::string> canonical = CanonicalIp(text);
      if (canonical.has_value()) ips.insert(*canonical);
    }
    freeaddrinfo(results);
  }
  return ips;
}

}  // namespace

PeerFilter::PeerFilter(std::vector<std::string> hosts, bool restrict,
                       HostResolver resolver, absl::Duration interval)
    : hosts_(std::move(hosts)),
      restrict_(restrict),
      resolver_(resolver ? std::move(resolver) : HostResolver(LookUpHosts)),
      interval_(interval) {
  Record(resolver_(hosts_));
}

std::unique_ptr<PeerFilter> PeerFilter::ForCluster(
    const cluster::ClusterSpec& spec, bool restrict) {
  std::vector<std::string> hosts;
  for (const auto& [job, tasks] : spec.job_map()) {
    for (const auto& [index, address] : tasks) hosts.push_back(HostOf(address));
  }
  return std::unique_ptr<PeerFilter>(
      new PeerFilter(std::move(hosts), restrict, nullptr, absl::Seconds(5)));
}

std::unique_ptr<PeerFilter> PeerFilter::ForIps(std::vector<std::string> ips) {
  return std::unique_ptr<PeerFilter>(
      new PeerFilter(std::move(ips), true, nullptr, absl::Seconds(5)));
}

std::unique_ptr<PeerFilter> PeerFilter::ForHostsForTesting(
    std::vector<std::string> hosts, HostResolver resolver,
    absl::Duration interval) {
  return std::unique_ptr<PeerFilter>(
      new PeerFilter(std::move(hosts), true, std::move(resolver), interval));
}

void PeerFilter::Record(const std::set<std::string>& ips) {
  absl::MutexLock lock(&mu_);
  ips_.insert(ips.begin(), ips.end());
  loopback_ = ips_.count("127.0.0.1") > 0 || ips_.count("::1") > 0;
  resolving_ = false;
  resolved_at_ = absl::Now();
}

bool PeerFilter::Contains(const std::string& ip) const {
  return ips_.count(ip) > 0 || (loopback_ && IsLoopback(ip));
}

bool PeerFilter::Allowed(absl::string_view grpc_peer) {
  if (!restrict_) return true;
  std::optional<std::string> ip = PeerIp(grpc_peer);
  if (!ip.has_value()) return false;
  {
    absl::MutexLock lock(&mu_);
    if (Contains(*ip)) return true;
    // One look-up at a time, at most every interval_; callers meanwhile
    // (admitted or not) do not wait for it: a slow DNS must not stall every
    // call.
    if (resolving_ || absl::Now() - resolved_at_ < interval_) {
      return false;
    }
    resolving_ = true;
  }
  Record(resolver_(hosts_));
  absl::MutexLock lock(&mu_);
  return Contains(*ip);
}

absl::Status CheckClusterToken(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
    const std::optional<std::string>& expected) {
  if (!expected.has_value()) return absl::OkStatus();
  auto it = metadata.find(kClusterTokenMetadataKey);
  if (it == metadata.end()) {
    return absl::UnauthenticatedError(absl::StrCat(
        "the call carries no cluster token (metadata \"",
        kClusterTokenMetadataKey,
        "\") but this server requires one; give the client the cluster's "
        "token (ChannelOptions::cluster_token)"));
  }
  const grpc::string_ref& got = it->second;
  if (!TokensMatch(absl::string_view(got.data(), got.size()), *expected)) {
    return absl::UnauthenticatedError(
        "the call's cluster token is wrong; every task of a cluster must use "
        "the same token");
  }
  return absl::OkStatus();
}

namespace {

// (job, index) of "/job:<job>/task:<index>", nullopt for anything else.
std::optional<std::pair<std::string, int64_t>> ParseTaskName(
    absl::string_view name) {
  if (!absl::ConsumePrefix(&name, "/job:")) return std::nullopt;
  const size_t slash = name.find("/task:");
  if (slash == absl::string_view::npos || slash == 0) return std::nullopt;
  int64_t index = 0;
  if (!absl::SimpleAtoi(name.substr(slash + 6), &index) || index < 0) {
    return std::nullopt;
  }
  return std::make_pair(std::string(name.substr(0, slash)), index);
}

std::vector<std::string> JobNames(const cluster::ClusterSpec& spec) {
  std::vector<std::string> names;
  for (const auto& [job, tasks] : spec.job_map()) names.push_back(job);
  return names;
}

absl::string_view MetadataValue(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
    const char* key) {
  auto it = metadata.find(key);
  if (it == metadata.end()) return absl::string_view();
  return absl::string_view(it->second.data(), it->second.size());
}

}  // namespace

CallerCheck::CallerCheck(const cluster::ClusterSpec& spec,
                         std::string server_task)
    : spec_(spec),
      fingerprint_(spec.Fingerprint()),
      server_task_(std::move(server_task)) {}

absl::Status CallerCheck::Check(absl::string_view task,
                                absl::string_view fingerprint,
                                absl::string_view peer) const {
  const std::string caller = task.empty()
                                 ? absl::StrCat("a task at ", peer)
                                 : absl::StrCat("task ", task, " (", peer, ")");
  if (!fingerprint.empty() && fingerprint != fingerprint_) {
    return absl::PermissionDeniedError(absl::StrCat(
        "task ", server_task_, " refuses the call from ", caller,
        ": it belongs to another cluster (cluster fingerprint ", fingerprint,
        ", this server's is ", fingerprint_,
        "); every task of a cluster must be given the same cluster spec "
        "(TF_CONFIG's \"cluster\"), and a task of another job must not "
        "dial this one's addresses"));
  }
  // Without a fingerprint the caller does not claim to be a task.
  if (fingerprint.empty()) return absl::OkStatus();
  std::optional<std::pair<std::string, int64_t>> parsed = ParseTaskName(task);
  if (!parsed.has_value() ||
      !spec_.task_address(parsed->first, parsed->second).ok()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "task ", server_task_, " refuses the call from ", caller,
        ": that is not a task of this server's cluster (", spec_.total_tasks(),
        " tasks in jobs ", absl::StrJoin(JobNames(spec_), ", "),
        "); give every task the same cluster spec"));
  }
  return absl::OkStatus();
}

absl::Status CallerCheck::CheckMetadata(
    const std::multimap<grpc::string_ref, grpc::string_ref>& metadata,
    absl::string_view peer) const {
  return Check(MetadataValue(metadata, kCallerTaskMetadataKey),
               MetadataValue(metadata, kClusterFingerprintMetadataKey), peer);
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> LoadServerCredentials(
    const TlsOptions& tls) {
  if (tls.cert_file.empty() && tls.key_file.empty()) {
    if (!tls.ca_file.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "TLS options give ca_file \"", tls.ca_file,
          "\" but no cert_file and key_file; a server needs its own "
          "certificate and key to serve TLS"));
    }
    return grpc::InsecureServerCredentials();
  }
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs both cert_file and key_file (PEM), or neither");
  }
  ASSIGN_OR_RETURN(std::string cert, ReadPemFile("certificate", tls.cert_file));
  ASSIGN_OR_RETURN(std::string key, ReadPemFile("private key", tls.key_file));
  std::string ca;
  if (!tls.ca_file.empty()) {
    ASSIGN_OR_RETURN(std::string read,
                     ReadPemFile("CA certificate", tls.ca_file));
    ca = std::move(read);
  }
  grpc::SslServerCredentialsOptions ssl(
      ca.empty() ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                 : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  ssl.pem_root_certs = std::move(ca);
  ssl.pem_key_cert_pairs.push_back({std::move(key), std::move(cert)});
  return grpc::SslServerCredentials(ssl);
}

absl::Status ConfigureServerBuilder(grpc::ServerBuilder& builder,
                                    const std::string& address,
                                    const TlsOptions& tls, int* port,
                                    int64_t max_message_bytes,
                                    const KeepaliveOptions& keepalive) {
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                   LoadServerCredentials(tls));
  builder.AddListeningPort(address, std::move(credentials), port);
  builder.SetMaxReceiveMessageSize(static_cast<int>(max_message_bytes));
  builder.SetMaxSendMessageSize(static_cast<int>(max_message_bytes));
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  for (const IntChannelArg& arg : BulkTransferChannelArgs()) {
    builder.AddChannelArgument(arg.name, arg.value);
  }
  for (const IntChannelArg& arg : KeepaliveChannelArgs(keepalive)) {
    builder.AddChannelArgument(arg.name, arg.value);
  }
  return absl::OkStatus();
}

}  // namespace server_internal
}  // namespace distribute
