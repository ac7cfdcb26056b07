#include "distribute/server/grpc_transport.h"

#include <algorithm>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "devices/completion.h"
#include "devices/status_macros.h"
#include "distribute/server/internal/grpc_status.h"
#include "distribute/server/internal/mailbox.h"
#include "distribute/server/internal/peer_sender.h"
#include "distribute/server/internal/pinger.h"
#include "distribute/server/internal/tcp_data_plane.h"
#include "distribute/server/worker_service.grpc.pb.h"
#include "grpcpp/channel.h"
#include "grpcpp/completion_queue.h"

namespace distribute {
namespace {

// How long the best-effort abort notices to peers may take.
constexpr absl::Duration kNotifyTimeout = absl::Seconds(1);
// Waits block at once. A message over gRPC takes hundreds of microseconds,
// so Completion's default spin never sees it finish and only takes the CPU
// from gRPC's own threads (without it, 2 processes all-reduce 4 KiB in
// 300 us instead of 380, 1 MiB in 1.05 ms instead of 1.24).
constexpr absl::Duration kWaitSpin = absl::ZeroDuration();
// Except for a message over the grpc+tcp data plane in a process bound to
// one CPU: there the waiter yields the CPU at every turn of its spin (so the
// data plane's threads, spinning too, run), which spares the futex wake-up
// and the idle CPU's interrupt that a blocked waiter costs (a 4 KiB
// all-reduce between 2 bound processes: 65 us with blocking waits, 50 us
// with this spin alone, 29 us with the data plane's).
constexpr absl::Duration kBoundDataPlaneWaitSpin = absl::Microseconds(200);

absl::Duration WaitSpin(bool data_plane) {
  return data_plane && devices::BoundToOneCpu() ? kBoundDataPlaneWaitSpin
                                                : kWaitSpin;
}

using server_internal::GroupMailbox;
using server_internal::MessageSender;
using server_internal::PeerSender;
using server_internal::RecvOp;
using server_internal::SendOp;

class SendRequest : public devices::Request {
 public:
  SendRequest(std::shared_ptr<MessageSender> sender, std::shared_ptr<SendOp> op,
              std::string description, absl::Duration spin)
      : sender_(std::move(sender)),
        op_(std::move(op)),
        description_(std::move(description)),
        spin_(spin) {}
  SendRequest(const SendRequest&) = delete;
  SendRequest& operator=(const SendRequest&) = delete;
  ~SendRequest() override {
    if (!op_->completion.done() && sender_ != nullptr) sender_->Cancel(op_);
  }

  absl::Status Wait(absl::Duration timeout) override {
    if (op_->completion.WaitFor(timeout, spin_)) {
      return op_->completion.status();
    }
    return absl::DeadlineExceededError(absl::StrFormat(
        "%s was not delivered within %gs; the receiving task may be slow, "
        "stuck or unreachable",
        description_, absl::ToDoubleSeconds(timeout)));
  }
  bool IsComplete() const override { return op_->completion.done(); }

 private:
  const std::shared_ptr<MessageSender> sender_;  // Null for a send to self.
  const std::shared_ptr<SendOp> op_;
  const std::string description_;
  const absl::Duration spin_;
};

class RecvRequest : public devices::Request {
 public:
  RecvRequest(std::shared_ptr<GroupMailbox> mailbox, std::shared_ptr<RecvOp> op,
              std::string description, absl::Duration spin)
      : mailbox_(std::move(mailbox)),
        op_(std::move(op)),
        description_(std::move(description)),
        spin_(spin) {}
  RecvRequest(const RecvRequest&) = delete;
  RecvRequest& operator=(const RecvRequest&) = delete;
  ~RecvRequest() override {
    if (!op_->completion.done()) mailbox_->CancelRecv(op_);
  }

  absl::Status Wait(absl::Duration timeout) override {
    if (op_->completion.WaitFor(timeout, spin_)) {
      return op_->completion.status();
    }
    return absl::DeadlineExceededError(absl::StrFormat(
        "%s did not arrive within %gs; the sender may be slow, stuck, or "
        "sending a different tag",
        description_, absl::ToDoubleSeconds(timeout)));
  }
  bool IsComplete() const override { return op_->completion.done(); }

 private:
  const std::shared_ptr<GroupMailbox> mailbox_;
  const std::shared_ptr<RecvOp> op_;
  const std::string description_;
  const absl::Duration spin_;
};

// How long a server that answered the rendezvous may then be unreachable
// before the layout check gives up on it: it has most likely exited (a
// task that fails its own rendezvous does).
constexpr absl::Duration kGoneGrace = absl::Seconds(2);
// The rendezvous asks the servers that have not answered yet again this
// often, looking in between for an abort of the group on its own server.
constexpr absl::Duration kRendezvousPoll = absl::Seconds(1);

// Shows `layout` to every server (one per task of the group), in rounds
// of at most kRendezvousPoll until `deadline`, checking `aborted` (the
// group on this server) between rounds. Returns OK once every server
// accepted it; a server's layout refusal (FAILED_PRECONDITION, whole) or
// `aborted`'s status; another refusal naming `names[i]`; UNAVAILABLE for a
// server unreachable for kGoneGrace (it answered the rendezvous, so it has
// most likely exited); DEADLINE_EXCEEDED for servers silent until
// `deadline` (hung or stopped).
absl::Status AgreeOnLayout(
    const std::vector<server::WorkerService::Stub*>& servers,
    const std::vector<std::string>& names, const ChannelOptions& options,
    const server::PingRequest& layout, absl::Time deadline,
    absl::FunctionRef<absl::Status()> aborted) {
  std::vector<size_t> pending(servers.size());
  for (size_t i = 0; i < pending.size(); ++i) pending[i] = i;
  std::vector<absl::Time> unreachable_since(servers.size(),
                                            absl::InfiniteFuture());
  while (true) {
    std::vector<server::WorkerService::Stub*> asked;
    for (size_t i : pending) asked.push_back(servers[i]);
    std::vector<server_internal::PingResult> answers = server_internal::PingAll(
        asked, options, std::min(kRendezvousPoll, deadline - absl::Now()),
        /*wait_for_ready=*/false, layout);
    const absl::Time now = absl::Now();
    std::vector<size_t> still;
    std::vector<std::string> gone;
    absl::Status refused;
    for (size_t k = 0; k < answers.size(); ++k) {
      const size_t i = pending[k];
      const absl::Status& status = answers[k].status;
      if (status.ok()) continue;
      if (status.code() == absl::StatusCode::kFailedPrecondition) {
        return status;
      }
      if (status.code() == absl::StatusCode::kUnavailable) {
        unreachable_since[i] = std::min(unreachable_since[i], now);
        if (now - unreachable_since[i] >= kGoneGrace) gone.push_back(names[i]);
        still.push_back(i);
        continue;
      }
      if (status.code() == absl::StatusCode::kDeadlineExceeded) {
        unreachable_since[i] = absl::InfiniteFuture();
        still.push_back(i);
        continue;
      }
      if (refused.ok()) {
        refused = absl::Status(
            status.code(),
            absl::StrCat("the server of ", names[i],
                         " refused the group: ", status.message()));
      }
    }
    // The group's own abort here says more than a server reporting it
    // (ABORTED) or refusing for another reason.
    RETURN_IF_ERROR(aborted());
    RETURN_IF_ERROR(refused);
    if (still.empty()) return absl::OkStatus();
    if (!gone.empty()) {
      return absl::UnavailableError(absl::StrCat(
          "the servers of ", absl::StrJoin(gone, ", "),
          " answered the rendezvous but then stopped answering; those tasks "
          "have most likely exited (see their logs)"));
    }
    if (now >= deadline) {
      std::vector<std::string> silent;
      for (size_t i : still) silent.push_back(names[i]);
      return absl::DeadlineExceededError(absl::StrCat(
          "the servers of ", absl::StrJoin(silent, ", "),
          " answered the rendezvous but not the layout check before the "
          "connect timeout; those tasks may be hung or stopped"));
    }
    pending = std::move(still);
    absl::SleepFor(absl::Milliseconds(20));
  }
}

std::string DeviceName(const server::PingResponse& who) {
  return absl::StrCat("/job:", who.job(), "/replica:0/task:", who.task_index(),
                      "/device:CPU:0");
}

}  // namespace

collective::GroupCosts GrpcGroupCosts(absl::string_view protocol) {
  // Per protocol: stream bandwidth, latency and hand-offs per message (us),
  // reduction bandwidth; fitted to grpc_allreduce_worker sweeps with each
  // algorithm forced.
  const bool tcp = protocol == kGrpcTcpProtocol;
  const double bw = tcp ? 2.5e9 : 1e9;
  const double latency_us = tcp ? 30 : 150;
  collective::GroupCosts costs;
  costs.ranks_per_node = 0;  // One node: every message costs the same.
  costs.intra_bw_Bps = costs.inter_bw_Bps = bw;
  costs.intra_latency_us = costs.inter_latency_us = latency_us;
  costs.step_overhead_us = tcp ? 60 : 200;
  costs.reduce_bw_Bps = tcp ? 12e9 : 2e9;
  costs.bisection_fraction = 0.7;
  if (tcp) {
    // Ring pieces of 2 MiB, the most the socket copies and the reduction
    // keep in cache: forced-chunk sweeps (medians of 5 interleaved rounds)
    // measured 2 MiB fastest at every size from 4 MiB up, e.g. 2 processes
    // at 4 MiB 1.67 ms vs 1.88 ms in 1 MiB pieces, 4 processes at 16 MiB
    // 23.0 ms vs 24.9 ms in 1 MiB and 25.8 ms in 4 MiB pieces. (Accumulate
    // itself runs at about 40 GB/s on cached data; 12 GB/s is what the
    // sweeps fit, the reduced data arriving from the socket copy.)
    costs.max_chunk_bytes = int64_t{2} << 20;
  }
  return costs;
}

absl::StatusOr<std::unique_ptr<devices::Transport>> GrpcTransport::Create(
    Server& local, GrpcTransportOptions options) {
  const int size = static_cast<int>(options.rank_targets.size());
  if (options.group_key.empty()) {
    return absl::InvalidArgumentError(
        "GrpcTransportOptions::group_key is empty; give the group a key that "
        "every rank uses");
  }
  if (size == 0) {
    return absl::InvalidArgumentError(
        "GrpcTransportOptions::rank_targets is empty; list every rank's "
        "server as \"host:port\"");
  }
  if (options.rank < 0 || options.rank >= size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", options.rank,
                     " is outside the group's ranks [0, ", size, ")"));
  }
  for (int r = 0; r < size; ++r) {
    if (StripGrpcScheme(options.rank_targets[r]).empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("rank_targets[", r, "] is empty"));
    }
    options.rank_targets[r] =
        std::string(StripGrpcScheme(options.rank_targets[r]));
  }
  const int64_t max_pack =
      local.channel_options().max_message_bytes - kGrpcChunkOverheadBytes;
  if (options.bytes_per_pack < 1 || options.bytes_per_pack > max_pack) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bytes_per_pack is ", options.bytes_per_pack, "; it must be in [1, ",
        max_pack, "] (max_message_bytes less 64 KiB for framing)"));
  }
  if (options.connect_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "connect_timeout must be positive; it bounds the wait for the peers");
  }
  if (!local.running()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the local server of task ", local.task_name(),
        " is not running; Start() it before creating transport endpoints"));
  }

  // Rendezvous: every rank's server must answer.
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  std::vector<std::unique_ptr<server::WorkerService::Stub>> stubs;
  std::vector<server::WorkerService::Stub*> stub_ptrs;
  for (const std::string& target : options.rank_targets) {
    ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                     CreateChannel(target, local.channel_options()));
    stubs.push_back(server::WorkerService::NewStub(channel));
    stub_ptrs.push_back(stubs.back().get());
    channels.push_back(std::move(channel));
  }
  // Aborted mailboxes left by notices for an earlier group of this key
  // (when this is its first endpoint here) must not fail this one; notices
  // that arrive from now on are this group's.
  local.mailboxes()->DropAbortedStrays(options.group_key);
  // Asked in rounds of at most kRendezvousPoll, so that a group already
  // aborted on this server (a peer refused it: its layout differs) ends the
  // wait instead of a dead peer's connect_timeout.
  std::vector<server_internal::PingResult> answers(size);
  std::vector<int> waiting(size);
  for (int r = 0; r < size; ++r) waiting[r] = r;
  const absl::Time deadline = absl::Now() + options.connect_timeout;
  while (true) {
    std::vector<server::WorkerService::Stub*> asked;
    for (int r : waiting) asked.push_back(stub_ptrs[r]);
    std::vector<server_internal::PingResult> round = server_internal::PingAll(
        asked, local.channel_options(),
        std::min(kRendezvousPoll, deadline - absl::Now()),
        /*wait_for_ready=*/true);
    std::vector<int> still;
    for (size_t k = 0; k < round.size(); ++k) {
      const int r = waiting[k];
      answers[r] = std::move(round[k]);
      const absl::Status& status = answers[r].status;
      if (status.code() == absl::StatusCode::kDeadlineExceeded ||
          status.code() == absl::StatusCode::kUnavailable) {
        still.push_back(r);
      }
    }
    waiting = std::move(still);
    absl::Status aborted = local.mailboxes()->GroupStatus(options.group_key);
    if (!aborted.ok()) {
      return absl::Status(aborted.code(),
                          absl::StrCat("transport group \"", options.group_key,
                                       "\" rank ", options.rank,
                                       ": the group was aborted during the "
                                       "rendezvous: ",
                                       aborted.message()));
    }
    if (waiting.empty() || absl::Now() >= deadline) break;
  }
  std::vector<std::string> missing;
  for (int r = 0; r < size; ++r) {
    const absl::Status& status = answers[r].status;
    if (status.ok()) continue;
    const std::string task = local.TaskAt(options.rank_targets[r]);
    const std::string who =
        absl::StrCat("rank ", r, " (", task.empty() ? "" : task + " at ",
                     options.rank_targets[r], ")");
    if (status.code() == absl::StatusCode::kDeadlineExceeded ||
        status.code() == absl::StatusCode::kUnavailable) {
      missing.push_back(who);
      continue;
    }
    return absl::Status(
        status.code(),
        absl::StrCat("transport group \"", options.group_key,
                     "\": the server of ", who,
                     " refused the rendezvous: ", status.message()));
  }
  if (!missing.empty()) {
    return absl::DeadlineExceededError(absl::StrCat(
        "transport group \"", options.group_key, "\" rank ", options.rank,
        ": within ", absl::FormatDuration(options.connect_timeout),
        " no answer from the servers of ", absl::StrJoin(missing, ", "),
        "; start those tasks or check their addresses"));
  }
  const server::PingResponse& self = answers[options.rank].response;
  if (self.incarnation() != local.incarnation()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "rank_targets[", options.rank,
        "] = ", options.rank_targets[options.rank],
        " is served by task /job:", self.job(), "/task:", self.task_index(),
        ", not by the local server (", local.task_name(), " at ",
        local.address(), "); list this task's own address for its rank"));
  }
  std::vector<std::string> devices;
  std::vector<int> data_ports;
  server::PingRequest layout;
  server::GroupLayout& group = *layout.mutable_group();
  group.set_group_key(options.group_key);
  group.set_rank(options.rank);
  group.set_task(local.task_name());
  const bool local_data_plane = local.data_port() > 0;
  for (const auto& answer : answers) {
    devices.push_back(DeviceName(answer.response));
    data_ports.push_back(local_data_plane ? answer.response.data_port() : 0);
    group.add_rank_tasks(absl::StrCat("/job:", answer.response.job(),
                                      "/task:", answer.response.task_index()));
  }

  ASSIGN_OR_RETURN(std::shared_ptr<GroupMailbox> mailbox,
                   local.mailboxes()->Register(
                       options.group_key, options.rank, options.rank_targets,
                       {group.rank_tasks().begin(), group.rank_tasks().end()}));
  std::unique_ptr<GrpcTransport> transport(new GrpcTransport(
      std::move(options), local.task_name(), std::move(devices),
      local.channel_options(), std::move(channels), std::move(data_ports),
      local.data_plane_tls(), local.mailboxes(), std::move(mailbox)));
  GrpcTransport* raw = transport.get();
  transport->mailbox_->SetAbortListener(
      [raw](const absl::Status& status) { raw->OnAbort(status); });
  // Aborted before the listener was set (a peer's abort notice came first).
  if (transport->mailbox_->aborted()) {
    transport->OnAbort(transport->mailbox_->status());
  }

  // Every rank's server must agree with this endpoint on the group: ranks
  // that number the group differently (workers with different numbers of
  // local devices) would otherwise wait for each other's messages forever.
  // The layout is checked after this endpoint registered its own, so of two
  // endpoints that disagree the later check sees the earlier one, fails,
  // and aborts it on its server, which relays the refusal to its peers.
  std::vector<server::WorkerService::Stub*> servers;
  std::vector<std::string> names;
  std::vector<std::string> server_targets;
  for (int r = 0; r < size; ++r) {
    const std::string& target = transport->options_.rank_targets[r];
    if (std::find(server_targets.begin(), server_targets.end(), target) !=
        server_targets.end()) {
      continue;
    }
    server_targets.push_back(target);
    servers.push_back(stub_ptrs[r]);
    names.push_back(absl::StrCat("rank ", r, " (", group.rank_tasks(r), ")"));
  }
  const std::string key = transport->options_.group_key;
  const int rank = transport->options_.rank;
  server_internal::MailboxRegistry& registry = *local.mailboxes();
  absl::Status agreed =
      // At least one round, even when the last peer answered at the
      // deadline.
      AgreeOnLayout(servers, names, local.channel_options(), layout,
                    std::max(deadline, absl::Now() + kRendezvousPoll),
                    [&registry, &key] { return registry.GroupStatus(key); });
  if (agreed.code() == absl::StatusCode::kFailedPrecondition) {
    // Refused (or told of a refusal): this endpoint's peers may never ask
    // the server that refused, so it tells them. The refusal names the
    // group and both layouts already.
    transport->NotifyPeers(std::string(agreed.message()), agreed.code());
    return agreed;
  }
  if (!agreed.ok()) {
    return absl::Status(
        agreed.code(), absl::StrCat("transport group \"", key, "\" rank ", rank,
                                    ": ", agreed.message()));
  }
  return std::unique_ptr<devices::Transport>(std::move(transport));
}

GrpcTransport::GrpcTransport(
    GrpcTransportOptions options, std::string task,
    std::vector<std::string> devices, ChannelOptions channel_options,
    std::vector<std::shared_ptr<grpc::Channel>> channels,
    std::vector<int> data_ports,
    std::shared_ptr<const server_internal::DataPlaneTls> tls,
    std::shared_ptr<server_internal::MailboxRegistry> registry,
    std::shared_ptr<GroupMailbox> mailbox)
    : options_(std::move(options)),
      rank_(options_.rank),
      task_(std::move(task)),
      devices_(std::move(devices)),
      channel_options_(std::move(channel_options)),
      channels_(std::move(channels)),
      data_ports_(std::move(data_ports)),
      data_plane_tls_(std::move(tls)),
      registry_(std::move(registry)),
      mailbox_(std::move(mailbox)),
      senders_(devices_.size()) {}

GrpcTransport::~GrpcTransport() {
  registry_->Unregister(*mailbox_);  // Fails pending receives and sends.
  mailbox_->SetAbortListener(nullptr);
  std::vector<std::shared_ptr<MessageSender>> senders;
  {
    absl::MutexLock lock(&mu_);
    senders.swap(senders_);
  }
  senders.clear();  // Joins their threads (requests may keep them alive).
  std::thread notifier;
  {
    absl::MutexLock lock(&mu_);
    notifier.swap(notifier_);
  }
  if (notifier.joinable()) notifier.join();  // Within kNotifyTimeout.
}

const std::string& GrpcTransport::device(int rank) const {
  static const std::string* const kNone = new std::string();
  return rank >= 0 && rank < size() ? devices_[rank] : *kNone;
}

std::string GrpcTransport::Describe(int rank) const {
  return absl::StrCat("rank ", rank, " (", devices_[rank], " at ",
                      options_.rank_targets[rank], ")");
}

absl::Status GrpcTransport::CheckPeer(int peer, const char* what) const {
  if (peer < 0 || peer >= size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " on rank ", rank_, " names peer ", peer,
                     ", outside the group's ranks [0, ", size(), ")"));
  }
  return absl::OkStatus();
}

std::shared_ptr<MessageSender> GrpcTransport::Sender(int peer) {
  absl::MutexLock lock(&mu_);
  std::shared_ptr<MessageSender>& sender = senders_[peer];
  if (sender == nullptr) {
    server::MessageHeader header;
    header.set_group_key(options_.group_key);
    header.set_src_rank(rank_);
    header.set_dst_rank(peer);
    header.set_src_task(task_);
    if (data_ports_[peer] > 0) {
      sender = std::make_shared<server_internal::TcpPeerSender>(
          server_internal::HostOf(options_.rank_targets[peer]),
          data_ports_[peer], std::move(header), channel_options_.cluster_token,
          channel_options_.cluster_fingerprint, Describe(peer),
          options_.connect_timeout, data_plane_tls_);
    } else {
      sender = std::make_shared<PeerSender>(
          channels_[peer], channel_options_, std::move(header),
          options_.bytes_per_pack, Describe(peer));
    }
    if (!failed_.ok()) sender->Fail(failed_);
  }
  return sender;
}

absl::StatusOr<std::unique_ptr<devices::Request>> GrpcTransport::Send(
    int peer, uint64_t tag, absl::Span<const std::byte> data) {
  RETURN_IF_ERROR(CheckPeer(peer, "Send"));
  RETURN_IF_ERROR(mailbox_->status());
  auto op = std::make_shared<SendOp>();
  op->tag = tag;
  op->data = data.data();
  op->size = data.size();
  std::string description =
      absl::StrCat("Send from rank ", rank_, " to ", Describe(peer), " tag ",
                   tag, " (", data.size(), " bytes)");
  if (peer == rank_) {
    // To itself: straight into the local mailbox, no RPC.
    server::MessageHeader header;
    header.set_group_key(options_.group_key);
    header.set_src_rank(rank_);
    header.set_dst_rank(rank_);
    header.set_tag(tag);
    header.set_total_bytes(static_cast<int64_t>(data.size()));
    header.set_src_task(task_);
    absl::StatusOr<std::shared_ptr<server_internal::Inbound>> message =
        mailbox_->BeginMessage(header);
    absl::Status status = message.status();
    if (status.ok()) {
      status = mailbox_->AddChunk(
          **message, 0,
          absl::string_view(reinterpret_cast<const char*>(data.data()),
                            data.size()));
      absl::Status ended = mailbox_->EndMessage(*message, status);
      if (status.ok()) status = ended;
    }
    op->completion.Complete(status);
    return std::unique_ptr<devices::Request>(new SendRequest(
        nullptr, std::move(op), std::move(description), kWaitSpin));
  }
  std::shared_ptr<MessageSender> sender = Sender(peer);
  RETURN_IF_ERROR(sender->Post(op));
  return std::unique_ptr<devices::Request>(
      new SendRequest(std::move(sender), std::move(op), std::move(description),
                      WaitSpin(data_ports_[peer] > 0)));
}

absl::StatusOr<std::unique_ptr<devices::Request>> GrpcTransport::Recv(
    int peer, uint64_t tag, absl::Span<std::byte> data) {
  RETURN_IF_ERROR(CheckPeer(peer, "Recv"));
  absl::StatusOr<std::shared_ptr<RecvOp>> op =
      mailbox_->PostRecv(peer, tag, data);
  RETURN_IF_ERROR(op.status());
  return std::unique_ptr<devices::Request>(new RecvRequest(
      mailbox_, *std::move(op),
      absl::StrCat("Recv on rank ", rank_, " of the message from ",
                   Describe(peer), " tag ", tag, " (", data.size(), " bytes)"),
      WaitSpin(data_ports_[peer] > 0)));
}

absl::Status GrpcTransport::Abort(absl::Status reason) {
  if (reason.ok()) {
    return absl::InvalidArgumentError(
        "Transport::Abort needs a non-OK reason saying why the group is "
        "aborted");
  }
  // An endpoint that already knows of an abort (its own, or a peer's that
  // reached it) keeps that reason and tells no one of another.
  if (!mailbox_->Abort(absl::Status(
          devices::GroupAbortCode(reason.code()),
          absl::StrCat("transport group \"", options_.group_key, "\" of ",
                       size(), " ranks was aborted by rank ", rank_, " (task ",
                       task_, "): ", reason.ToString())))) {
    return absl::OkStatus();
  }
  NotifyPeers(reason.ToString(), devices::GroupAbortCode(reason.code()));
  return absl::OkStatus();
}

void GrpcTransport::OnAbort(const absl::Status& status) {
  if (mailbox_->relay_abort()) {
    NotifyPeers(std::string(status.message()), status.code());
  }
  std::vector<std::shared_ptr<MessageSender>> senders;
  {
    absl::MutexLock lock(&mu_);
    if (failed_.ok()) failed_ = status;
    senders = senders_;
  }
  for (auto& sender : senders) {
    if (sender != nullptr) sender->Fail(status);
  }
}

void GrpcTransport::NotifyPeers(std::string reason, absl::StatusCode code) {
  absl::MutexLock lock(&mu_);
  if (notified_) return;
  notified_ = true;
  notifier_ = std::thread(
      [this, text = std::move(reason), code] { SendAbortNotices(text, code); });
}

void GrpcTransport::SendAbortNotices(std::string reason,
                                     absl::StatusCode code) {
  struct Call {
    grpc::ClientContext context;
    server::AbortGroupRequest request;
    server::AbortGroupResponse response;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<server::AbortGroupResponse>>
        reader;
  };
  grpc::CompletionQueue queue;
  std::vector<std::unique_ptr<server::WorkerService::Stub>> stubs;
  std::vector<std::unique_ptr<Call>> calls;
  for (int peer = 0; peer < size(); ++peer) {
    if (peer == rank_) continue;
    stubs.push_back(server::WorkerService::NewStub(channels_[peer]));
    calls.push_back(std::make_unique<Call>());
    Call& call = *calls.back();
    PrepareClientContext(channel_options_, kNotifyTimeout, call.context);
    call.request.set_group_key(options_.group_key);
    call.request.set_src_rank(rank_);
    call.request.set_dst_rank(peer);
    call.request.set_src_task(task_);
    call.request.set_reason(reason);
    call.request.set_code(static_cast<int>(code));
    call.reader =
        stubs.back()->AsyncAbortGroup(&call.context, call.request, &queue);
    call.reader->Finish(&call.response, &call.status, &call);
  }
  // Each call has a deadline; the answers themselves do not matter.
  for (size_t done = 0; done < calls.size(); ++done) {
    void* tag = nullptr;
    bool ok = false;
    if (!queue.Next(&tag, &ok)) break;
  }
  queue.Shutdown();
  void* tag = nullptr;
  bool ok = false;
  while (queue.Next(&tag, &ok)) {
  }
}

}  // namespace distribute
