#include "distribute/server/server.h"

#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "devices/status_macros.h"
#include "distribute/server/internal/blob_store.h"
#include "distribute/server/internal/data_plane_tls.h"
#include "distribute/server/internal/mailbox.h"
#include "distribute/server/internal/receive_counters.h"
#include "distribute/server/internal/server_security.h"
#include "distribute/server/internal/tcp_data_plane.h"
#include "distribute/server/internal/worker_service_impl.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"

namespace distribute {
namespace {

uint64_t RandomIncarnation() {
  std::random_device device;
  std::mt19937_64 engine((uint64_t{device()} << 32) ^ device());
  uint64_t value = 0;
  while (value == 0) value = engine();  // 0 reads as "unknown" on the wire.
  return value;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Create(
    const cluster::ClusterSpec& cluster, std::string job_name, int task_index,
    ServerOptions options) {
  InitGrpcForProcess();
  if (options.protocol != kGrpcProtocol &&
      options.protocol != kGrpcTcpProtocol) {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown server protocol \"", options.protocol,
        "\"; the supported protocols are \"grpc\" and \"grpc+tcp\""));
  }
  absl::StatusOr<std::string> address =
      cluster.task_address(job_name, task_index);
  if (!address.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "task ", task_index, " of job \"", job_name,
        "\" is not in the cluster ", cluster.DebugString(),
        "; a server can only be created for one of the cluster's tasks"));
  }
  if (options.cluster_token.has_value() && options.cluster_token->empty()) {
    return absl::InvalidArgumentError(
        "cluster_token is set but empty; give a non-empty token or leave it "
        "unset");
  }
  if (options.max_message_bytes < 1 ||
      options.max_message_bytes > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_message_bytes is ", options.max_message_bytes,
        "; it must be in [1, ", std::numeric_limits<int>::max(), "]"));
  }
  RETURN_IF_ERROR(ValidateKeepalive(options.keepalive));
  // Fail now, naming the file, rather than at Start.
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                   server_internal::LoadServerCredentials(options.tls));
  // The data plane's own TLS contexts, from the same files (which gRPC
  // reads again; both fail here, naming the file, rather than at Start).
  std::shared_ptr<const server_internal::DataPlaneTls> data_plane_tls;
  if (options.protocol == kGrpcTcpProtocol && options.tls.enabled()) {
    ASSIGN_OR_RETURN(
        std::shared_ptr<const server_internal::DataPlaneTls> loaded,
        server_internal::DataPlaneTls::Create(options.tls));
    data_plane_tls = std::move(loaded);
  }
  const bool start = options.start;
  std::unique_ptr<Server> server(
      new Server(cluster, std::move(job_name), task_index, *std::move(address),
                 std::move(options), std::move(data_plane_tls)));
  if (start) {
    RETURN_IF_ERROR(server->Start());
  }
  return server;
}

absl::StatusOr<std::unique_ptr<Server>> Server::CreateLocalServer(
    ServerOptions options) {
  ASSIGN_OR_RETURN(
      cluster::ClusterSpec spec,
      cluster::ClusterSpec::Create({{"localhost", {"127.0.0.1:0"}}}));
  options.start = true;
  return Create(spec, "localhost", 0, std::move(options));
}

Server::Server(
    cluster::ClusterSpec cluster, std::string job_name, int task_index,
    std::string address, ServerOptions options,
    std::shared_ptr<const server_internal::DataPlaneTls> data_plane_tls)
    : cluster_(std::move(cluster)),
      job_name_(std::move(job_name)),
      task_index_(task_index),
      options_(std::move(options)),
      data_plane_tls_(std::move(data_plane_tls)),
      incarnation_(RandomIncarnation()),
      functions_(std::make_unique<FunctionRegistry>()),
      mailboxes_(std::make_shared<server_internal::MailboxRegistry>()),
      blobs_(std::make_shared<server_internal::BlobStore>()),
      received_(std::make_shared<server_internal::ReceiveCounters>()),
      peer_filter_(server_internal::PeerFilter::ForCluster(
          cluster_, options_.restrict_to_cluster_hosts)),
      address_(std::move(address)) {
  caller_check_ =
      std::make_unique<server_internal::CallerCheck>(cluster_, task_name());
  channel_options_.cluster_token = options_.cluster_token;
  // This task's own calls say who it is and which cluster it belongs to.
  channel_options_.caller_task = task_name();
  channel_options_.cluster_fingerprint = caller_check_->fingerprint();
  channel_options_.tls = options_.tls;
  channel_options_.max_message_bytes = options_.max_message_bytes;
  channel_options_.keepalive = options_.keepalive;
  server_internal::WorkerServiceConfig config;
  config.job = job_name_;
  config.task_index = task_index_;
  config.incarnation = incarnation_;
  config.cluster_token = options_.cluster_token;
  config.max_message_bytes = options_.max_message_bytes;
  config.functions = functions_.get();
  config.peer_filter = peer_filter_.get();
  if (options_.refuse_other_clusters) {
    config.caller_check = caller_check_.get();
  }
  config.mailboxes = mailboxes_;
  config.blobs = blobs_;
  config.received = received_;
  service_ =
      std::make_unique<server_internal::WorkerServiceImpl>(std::move(config));
  bulk_service_ =
      std::make_unique<server_internal::BulkTransferService>(service_.get());
}

Server::~Server() { Stop(); }

Server::ReceiveStats Server::received() const {
  ReceiveStats stats;
  stats.messages = received_->messages.load(std::memory_order_relaxed);
  stats.chunks = received_->chunks.load(std::memory_order_relaxed);
  stats.bytes = received_->bytes.load(std::memory_order_relaxed);
  return stats;
}

absl::Status Server::Start() {
  absl::MutexLock lock(&mu_);
  if (stopped_) {
    return absl::FailedPreconditionError(absl::StrCat(
        "server of task ", task_name(),
        " was stopped; a stopped server cannot be restarted (create a new "
        "one)"));
  }
  if (grpc_server_ != nullptr) return absl::OkStatus();
  grpc::ServerBuilder builder;
  int port = 0;
  RETURN_IF_ERROR(server_internal::ConfigureServerBuilder(
      builder, address_, options_.tls, &port, options_.max_message_bytes,
      options_.keepalive));
  builder.RegisterService(service_.get());
  builder.RegisterService(bulk_service_.get());

  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat(
        "task ", task_name(), " cannot listen on ", address_,
        ": the port may be in use, or the host is not an address of this "
        "machine"));
  }
  address_ = server_internal::WithPort(address_, port);
  if (options_.protocol == kGrpcTcpProtocol) {
    server_internal::TcpDataPlaneConfig config;
    config.task = task_name();
    config.cluster_token = options_.cluster_token;
    config.peer_filter = peer_filter_.get();
    if (options_.refuse_other_clusters) {
      config.caller_check = caller_check_.get();
    }
    config.mailboxes = mailboxes_;
    config.received = received_;
    config.tls = data_plane_tls_;
    absl::StatusOr<std::unique_ptr<server_internal::TcpDataPlane>> plane =
        server_internal::TcpDataPlane::Start(server_internal::HostOf(address_),
                                             std::move(config));
    if (!plane.ok()) {
      server->Shutdown();
      server->Wait();
      return plane.status();
    }
    data_plane_ = *std::move(plane);
    service_->set_data_port(data_plane_->port());
  }
  service_->set_address(address_);
  grpc_server_ = std::move(server);
  return absl::OkStatus();
}

void Server::Stop() {
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<server_internal::TcpDataPlane> data_plane;
  std::string address;
  bool already = false;
  {
    absl::MutexLock lock(&mu_);
    already = stopped_;
    stopped_ = true;
    server = std::move(grpc_server_);
    data_plane = std::move(data_plane_);
    address = address_;
  }
  if (already) {
    // Another call is stopping (or has stopped) the server: return when it
    // has, so that a caller may destroy the server once Stop() returns.
    Join();
    return;
  }
  const absl::Status stopped = absl::UnavailableError(absl::StrCat(
      "the server of task ", task_name(), " (", address, ") has stopped"));
  mailboxes_->Shutdown(stopped);
  blobs_->Shutdown(stopped);
  if (data_plane != nullptr) data_plane->Stop();
  if (server != nullptr) {
    // Calls still running after the deadline are cancelled.
    server->Shutdown(absl::ToChronoTime(absl::Now() + absl::Milliseconds(50)));
    server->Wait();
  }
  stopped_notification_.Notify();
}

void Server::Join() { stopped_notification_.WaitForNotification(); }

bool Server::JoinFor(absl::Duration timeout) {
  return stopped_notification_.WaitForNotificationWithTimeout(timeout);
}

int Server::data_port() const {
  absl::MutexLock lock(&mu_);
  return data_plane_ == nullptr ? 0 : data_plane_->port();
}

bool Server::running() const {
  absl::MutexLock lock(&mu_);
  return grpc_server_ != nullptr;
}

std::string Server::address() const {
  absl::MutexLock lock(&mu_);
  return address_;
}

std::string Server::target() const {
  return absl::StrCat("grpc://", address());
}

std::string Server::task_name() const {
  return absl::StrCat("/job:", job_name_, "/task:", task_index_);
}

std::string Server::TaskAt(absl::string_view address) const {
  for (const auto& [job, tasks] : cluster_.job_map()) {
    for (const auto& [index, task_address] : tasks) {
      if (task_address == address)
        return absl::StrCat("/job:", job, "/task:", index);
    }
  }
  if (address == this->address()) return task_name();
  return "";
}

absl::Status Server::PublishBlob(absl::string_view key, std::string value) {
  return blobs_->Publish(key, std::move(value));
}

absl::Status Server::AwaitBlobFetches(absl::string_view key, int64_t count,
                                      absl::Duration timeout) {
  return blobs_->AwaitFetches(key, count, absl::Now() + timeout);
}

int Server::AbortTransportsInvolving(absl::string_view address,
                                     const absl::Status& status) {
  return mailboxes_->AbortInvolving(address, status);
}

}  // namespace distribute
