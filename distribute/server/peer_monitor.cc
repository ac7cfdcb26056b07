#include "distribute/server/peer_monitor.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "devices/status_macros.h"
#include "distribute/server/internal/mailbox.h"
#include "distribute/server/internal/pinger.h"
#include "distribute/server/worker_service.grpc.pb.h"

namespace distribute {

struct PeerMonitor::Peer {
  std::string address;
  std::string task;  // "/job:worker/task:2", or "" if not in the cluster.
  std::shared_ptr<server::WorkerService::Stub> stub;
  uint64_t incarnation = 0;  // 0 until the first answer.
  int misses = 0;
  absl::Status dead;  // Non-OK once dead.
};

absl::StatusOr<std::unique_ptr<PeerMonitor>> PeerMonitor::Create(
    Server& local, PeerMonitorOptions options) {
  if (options.heartbeat_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("heartbeat_interval is ",
                     absl::FormatDuration(options.heartbeat_interval),
                     "; it must be positive"));
  }
  if (options.missed_heartbeats < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("missed_heartbeats is ", options.missed_heartbeats,
                     "; a peer is dead after at least one missed heartbeat"));
  }
  std::vector<std::string> addresses = options.peers;
  if (addresses.empty()) {
    const std::string self = local.address();
    for (const auto& [job, tasks] : local.cluster_spec().job_map()) {
      for (const auto& [index, address] : tasks) {
        if (job == local.job_name() && index == local.task_index()) continue;
        if (address == self) continue;
        addresses.push_back(address);
      }
    }
  }
  std::vector<Peer> peers;
  for (const std::string& target : addresses) {
    const std::string address(StripGrpcScheme(target));
    if (address.empty()) {
      return absl::InvalidArgumentError(
          "PeerMonitorOptions::peers holds an empty address");
    }
    ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                     CreateChannel(address, local.channel_options()));
    Peer peer;
    peer.address = address;
    peer.task = local.TaskAt(address);
    peer.stub = server::WorkerService::NewStub(channel);
    peers.push_back(std::move(peer));
  }
  return std::unique_ptr<PeerMonitor>(
      new PeerMonitor(std::move(options), local.mailboxes(),
                      local.channel_options(), std::move(peers)));
}

PeerMonitor::PeerMonitor(
    PeerMonitorOptions options,
    std::shared_ptr<server_internal::MailboxRegistry> mailboxes,
    ChannelOptions channel_options, std::vector<Peer> peers)
    : options_(std::move(options)),
      mailboxes_(std::move(mailboxes)),
      channel_options_(std::move(channel_options)),
      peers_(std::move(peers)) {
  thread_ = std::thread([this] { Run(); });
}

PeerMonitor::~PeerMonitor() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    wake_.Signal();
  }
  thread_.join();
}

absl::Status PeerMonitor::PeerStatus(absl::string_view address) const {
  absl::MutexLock lock(&mu_);
  for (const Peer& peer : peers_) {
    if (peer.address == StripGrpcScheme(address)) return peer.dead;
  }
  return absl::NotFoundError(
      absl::StrCat("the peer monitor does not watch \"", address, "\""));
}

std::vector<std::string> PeerMonitor::DeadPeers() const {
  absl::MutexLock lock(&mu_);
  return dead_;
}

void PeerMonitor::Run() {
  absl::Time next = absl::Now();
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && absl::Now() < next) {
        wake_.WaitWithDeadline(&mu_, next);
      }
      if (stopping_) return;
    }
    next = absl::Now() + options_.heartbeat_interval;
    Beat();
  }
}

void PeerMonitor::Beat() {
  std::vector<size_t> live;
  std::vector<server::WorkerService::Stub*> stubs;
  {
    absl::MutexLock lock(&mu_);
    for (size_t i = 0; i < peers_.size(); ++i) {
      if (!peers_[i].dead.ok()) continue;
      live.push_back(i);
      stubs.push_back(peers_[i].stub.get());
    }
  }
  if (stubs.empty()) return;
  // Stubs stay valid: peers_ never changes size and stubs are never reset.
  std::vector<server_internal::PingResult> results = server_internal::PingAll(
      stubs, channel_options_, options_.heartbeat_interval,
      /*wait_for_ready=*/false);
  std::vector<std::pair<std::string, absl::Status>> died;
  {
    absl::MutexLock lock(&mu_);
    for (size_t k = 0; k < live.size(); ++k) {
      Peer& peer = peers_[live[k]];
      const server_internal::PingResult& result = results[k];
      const std::string who =
          peer.task.empty()
              ? absl::StrCat("the task at ", peer.address)
              : absl::StrCat("task ", peer.task, " (", peer.address, ")");
      if (result.status.ok()) {
        peer.misses = 0;
        const uint64_t incarnation = result.response.incarnation();
        if (peer.incarnation == 0) {
          peer.incarnation = incarnation;
        } else if (incarnation != peer.incarnation) {
          peer.dead = absl::UnavailableError(absl::StrFormat(
              "%s restarted: its incarnation changed from %016x to %016x, so "
              "the state it held for its collective groups is lost",
              who, peer.incarnation, incarnation));
        }
      } else if (++peer.misses >= options_.missed_heartbeats) {
        peer.dead = absl::UnavailableError(
            absl::StrCat(who, " stopped answering heartbeats: ", peer.misses,
                         " pings in a row failed (every ",
                         absl::FormatDuration(options_.heartbeat_interval),
                         "); last error: ", result.status.ToString()));
      }
      if (!peer.dead.ok()) {
        dead_.push_back(peer.address);
        died.emplace_back(peer.address, peer.dead);
      }
    }
  }
  for (const auto& [address, why] : died) {
    mailboxes_->AbortInvolving(address, why);
    if (options_.on_peer_dead) options_.on_peer_dead(address, why);
  }
}

}  // namespace distribute
