// Server: the in-process gRPC server of one task of a cluster, in the shape
// of tf.distribute.Server. It answers health checks (Ping: the task's
// identity and incarnation), runs registered functions for remote callers
// (FunctionRegistry, RemoteFunctionClient), and receives the messages of
// the gRPC collective transport (GrpcTransport). It listens only on the
// address the cluster spec gives for its own task.
//
// Example:
//   absl::StatusOr<cluster::ClusterSpec> spec = cluster::ClusterSpec::Create(
//       {{"worker", {"127.0.0.1:2222", "127.0.0.1:2223"}}});
//   absl::StatusOr<std::unique_ptr<distribute::Server>> server =
//       distribute::Server::Create(*spec, "worker", 0, {});
//   (*server)->target();  // "grpc://127.0.0.1:2222"
//   (*server)->Join();    // Until another thread calls Stop().
//
// With ServerOptions::protocol "grpc+tcp" the bytes of transport messages
// take a TCP side channel (see ServerOptions::protocol).
//
// Security: with ServerOptions::cluster_token every call must carry the
// token (UNAUTHENTICATED otherwise); calls from addresses that are not the
// cluster's task hosts are refused (PERMISSION_DENIED); messages are bounded
// by max_message_bytes; TLS is used when a certificate and key are given.
#ifndef DISTRIBUTE_SERVER_SERVER_H_
#define DISTRIBUTE_SERVER_SERVER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/server/channel.h"
#include "distribute/server/function_registry.h"

namespace grpc {
class Server;
}  // namespace grpc

namespace distribute {

namespace server_internal {
class BlobStore;
class BulkTransferService;
struct ReceiveCounters;
class CallerCheck;
class DataPlaneTls;
class TcpDataPlane;
class MailboxRegistry;
class PeerFilter;
class WorkerServiceImpl;
}  // namespace server_internal

// The values of ServerOptions::protocol.
inline constexpr char kGrpcProtocol[] = "grpc";
inline constexpr char kGrpcTcpProtocol[] = "grpc+tcp";

struct ServerOptions {
  // "grpc": everything over gRPC. "grpc+tcp": the payloads of transport
  // messages (GrpcTransport between two grpc+tcp servers) travel over TCP
  // connections of their own beside gRPC, which stays for everything else
  // (internal/tcp_data_plane.h); 2-3x the throughput of gRPC's HTTP/2 path
  // on 2 cores. With `tls` set those connections are TLS sessions with the
  // same certificate, key and CA as gRPC's (internal/data_plane_tls.h).
  std::string protocol = kGrpcProtocol;
  // Start listening in Create (otherwise call Start()).
  bool start = true;
  // When set (non-empty), every call must carry this token and this
  // server's own clients (transports, monitors) send it.
  std::optional<std::string> cluster_token;
  // TLS: the server's certificate and key, and the CA that verifies peers
  // (see TlsOptions).
  TlsOptions tls;
  // Bound on one message in either direction, in [1, 2^31 - 1].
  int64_t max_message_bytes = kDefaultMaxMessageBytes;
  // Refuse calls from addresses that are not a task host of the cluster.
  bool restrict_to_cluster_hosts = true;
  // Refuse calls from tasks whose cluster spec differs from this server's
  // (ClusterSpec::Fingerprint, which every task's calls carry) or that this
  // cluster lacks: a task with a TF_CONFIG that disagrees, or a task of
  // another job with another spec on a reused port, then fails its
  // rendezvous with PERMISSION_DENIED instead of mixing its messages into
  // this job's. It guards against misconfiguration, not attack: a caller
  // that sends no fingerprint is taken for a client (not a task), and a
  // stale task of an earlier run of the same spec looks the same as a live
  // one; a cluster token per run (cluster_token) keeps both out. Turn off
  // only where each task's spec is partial by design (say, tasks that know
  // only their own address because the system picks the ports).
  bool refuse_other_clusters = true;
  // gRPC keepalive on this server's connections and its own clients'
  // (transports, heartbeats): a frozen peer's connection closes within
  // about time + timeout, which lets go of sends stuck on it (see
  // KeepaliveOptions).
  KeepaliveOptions keepalive;
};

class Server {
 public:
  // A server for task `task_index` of `job_name` in `cluster`.
  // INVALID_ARGUMENT for an unknown protocol, a task that is not in the
  // cluster (naming job and index), an empty token, a bad max_message_bytes or
  // keepalive, or a TLS file that cannot be read (naming it); with
  // options.start, Start()'s errors.
  static absl::StatusOr<std::unique_ptr<Server>> Create(
      const cluster::ClusterSpec& cluster, std::string job_name, int task_index,
      ServerOptions options = {});

  // A server for a one-task cluster {"localhost": ["127.0.0.1:0"]}, started
  // on a port chosen by the system (see target()).
  static absl::StatusOr<std::unique_ptr<Server>> CreateLocalServer(
      ServerOptions options = {});

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;
  // Stops the server.
  ~Server();

  // Starts listening. OK if already running; FAILED_PRECONDITION after
  // Stop(); UNAVAILABLE if the address cannot be bound (port in use, or the
  // host is not an address of this machine).
  absl::Status Start();

  // Stops serving: pending receives of this server's transport endpoints
  // fail with UNAVAILABLE, calls in progress are cancelled, and Join()
  // returns. Idempotent; thread-safe: every call returns once the server
  // has stopped (a call while another is stopping it waits for that one), so
  // the server may be destroyed after any Stop() returns. Not from a
  // registered function (RunFunction): the stop waits for calls in progress.
  void Stop();

  // Blocks until Stop() has been called.
  void Join();
  // Like Join, for at most `timeout`; returns whether the server stopped.
  bool JoinFor(absl::Duration timeout);

  bool running() const;

  // "grpc://host:port" with the bound port (the spec's port until Start()
  // binds an ephemeral one).
  std::string target() const;
  // "host:port", the same address without the scheme.
  std::string address() const;
  // The port of the grpc+tcp data plane on the same host; 0 for protocol
  // "grpc" or before Start().
  int data_port() const;
  const std::string& protocol() const { return options_.protocol; }
  const std::string& job_name() const { return job_name_; }
  int task_index() const { return task_index_; }
  // "/job:worker/task:1".
  std::string task_name() const;
  // A random 64-bit number chosen when the server was created; peers see a
  // new one after this task restarts.
  uint64_t incarnation() const { return incarnation_; }
  const cluster::ClusterSpec& cluster_spec() const { return cluster_; }

  // "/job:<job>/task:<i>" of the task at `address` in this server's
  // cluster, or "" if none is.
  std::string TaskAt(absl::string_view address) const;

  // What this server has received for its transport endpoints since it was
  // created. Over gRPC a message arrives as a Deliver stream of chunks of at
  // most the sender's bytes_per_pack bytes (GrpcTransportOptions); over the
  // grpc+tcp data plane each message counts as one chunk.
  struct ReceiveStats {
    int64_t messages = 0;
    int64_t chunks = 0;
    int64_t bytes = 0;
  };
  ReceiveStats received() const;

  // The functions RunFunction calls may run.
  FunctionRegistry& function_registry() { return *functions_; }

  // What this task's clients of other tasks use: the cluster token, the TLS
  // options and the message bound of this server's options.
  const ChannelOptions& channel_options() const { return channel_options_; }

  // Aborts, with `status`, the transport endpoints on this server whose
  // group has a rank at `address` ("host:port"). Returns how many.
  int AbortTransportsInvolving(absl::string_view address,
                               const absl::Status& status);

  // Publishes `value` under `key` for other tasks to fetch with FetchBlob
  // (blob_exchange.h). Publishing the same value again is OK;
  // ALREADY_EXISTS if the key holds another value; INVALID_ARGUMENT for an
  // empty key; FAILED_PRECONDITION once the server has stopped.
  absl::Status PublishBlob(absl::string_view key, std::string value);
  // Waits until `key`'s blob was handed to fetchers `count` times in all: OK
  // then; DEADLINE_EXCEEDED when `timeout` passes first; UNAVAILABLE once
  // the server has stopped. A task that gives up after publishing waits so
  // that its peers still get its blob (and say why they gave up too).
  absl::Status AwaitBlobFetches(absl::string_view key, int64_t count,
                                absl::Duration timeout);

  // The receiving side of this server's transport endpoints (used by
  // GrpcTransport).
  const std::shared_ptr<server_internal::MailboxRegistry>& mailboxes() const {
    return mailboxes_;
  }
  // The TLS credentials of this server's grpc+tcp data plane, which its
  // transports' senders present too; null without TLS options or with
  // protocol "grpc" (used by GrpcTransport).
  const std::shared_ptr<const server_internal::DataPlaneTls>& data_plane_tls()
      const {
    return data_plane_tls_;
  }

 private:
  Server(cluster::ClusterSpec cluster, std::string job_name, int task_index,
         std::string address, ServerOptions options,
         std::shared_ptr<const server_internal::DataPlaneTls> data_plane_tls);

  const cluster::ClusterSpec cluster_;
  const std::string job_name_;
  const int task_index_;
  const ServerOptions options_;
  const std::shared_ptr<const server_internal::DataPlaneTls> data_plane_tls_;
  const uint64_t incarnation_;
  ChannelOptions channel_options_;
  std::unique_ptr<FunctionRegistry> functions_;
  std::shared_ptr<server_internal::MailboxRegistry> mailboxes_;
  std::shared_ptr<server_internal::BlobStore> blobs_;
  std::shared_ptr<server_internal::ReceiveCounters> received_;
  std::unique_ptr<server_internal::PeerFilter> peer_filter_;
  std::unique_ptr<server_internal::CallerCheck> caller_check_;
  std::unique_ptr<server_internal::WorkerServiceImpl> service_;
  std::unique_ptr<server_internal::BulkTransferService> bulk_service_;

  mutable absl::Mutex mu_;
  std::string address_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  std::unique_ptr<grpc::Server> grpc_server_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<server_internal::TcpDataPlane> data_plane_
      ABSL_GUARDED_BY(mu_);
  absl::Notification stopped_notification_;
};

}  // namespace distribute

#endif  // DISTRIBUTE_SERVER_SERVER_H_
