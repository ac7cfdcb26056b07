#include "tools/bench/allreduce_rank.h"

#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "devices/reduce_op.h"
#include "devices/status_macros.h"
#include "devices/transport.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/collective/schedule.h"
#include "distribute/server/grpc_transport.h"

namespace tools_bench {

absl::StatusOr<std::unique_ptr<GrpcAllReduceRank>> GrpcAllReduceRank::Start(
    GrpcAllReduceRankOptions options, const std::string& address) {
  if (options.size < 1 || options.rank < 0 || options.rank >= options.size) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank ", options.rank, " of ", options.size));
  }
  // Only this task's address goes into the spec: the others' may not be
  // known yet (ports chosen by the system); the transport gets them all.
  ASSIGN_OR_RETURN(distribute::cluster::ClusterSpec spec,
                   distribute::cluster::ClusterSpec::CreateSparse(
                       {{"worker", {{options.rank, address}}}}));
  distribute::ServerOptions server_options;
  server_options.protocol = options.protocol;
  server_options.tls = options.tls;
  // Each rank's spec holds only its own address, so the ranks' specs differ.
  server_options.refuse_other_clusters = false;
  ASSIGN_OR_RETURN(
      std::unique_ptr<distribute::Server> server,
      distribute::Server::Create(spec, "worker", options.rank, server_options));
  return std::unique_ptr<GrpcAllReduceRank>(
      new GrpcAllReduceRank(std::move(options), std::move(server)));
}

GrpcAllReduceRank::~GrpcAllReduceRank() {
  comm_.reset();
  server_->Stop();
}

absl::Status GrpcAllReduceRank::Connect(
    const std::vector<std::string>& addresses) {
  if (static_cast<int>(addresses.size()) != options_.size) {
    return absl::InvalidArgumentError(absl::StrCat(
        addresses.size(), " addresses for ", options_.size, " ranks"));
  }
  distribute::GrpcTransportOptions transport_options;
  transport_options.group_key = options_.group_key;
  transport_options.rank_targets = addresses;
  transport_options.rank = options_.rank;
  transport_options.connect_timeout = options_.connect_timeout;
  ASSIGN_OR_RETURN(
      std::unique_ptr<devices::Transport> transport,
      distribute::GrpcTransport::Create(*server_, transport_options));
  std::vector<std::unique_ptr<devices::Transport>> endpoints;
  endpoints.push_back(std::move(transport));
  distribute::collective::ScheduleCommunicatorOptions comm_options;
  comm_options.chunk_bytes = options_.chunk_bytes;
  comm_options.costs = distribute::GrpcGroupCosts(options_.protocol);
  if (options_.algorithm != "auto") {
    ASSIGN_OR_RETURN(
        distribute::collective::Algorithm forced,
        distribute::collective::AlgorithmFromName(options_.algorithm));
    comm_options.all_reduce_algorithm = forced;
  }
  ASSIGN_OR_RETURN(
      std::unique_ptr<distribute::collective::ScheduleCommunicator> comm,
      distribute::collective::ScheduleCommunicator::Create(
          std::move(endpoints), std::move(comm_options)));
  comm_ = std::move(comm);
  return absl::OkStatus();
}

absl::Status GrpcAllReduceRank::Resize(int64_t bytes) {
  const devices::Shape shape({bytes / 4});
  ASSIGN_OR_RETURN(devices::Tensor in,
                   devices::Tensor::Host(devices::DType::kFloat32, shape));
  ASSIGN_OR_RETURN(devices::Tensor out,
                   devices::Tensor::Host(devices::DType::kFloat32, shape));
  in_ = std::move(in);
  out_ = std::move(out);
  in_.flat<float>().setConstant(static_cast<float>(options_.rank));
  bytes_ = bytes;
  return absl::OkStatus();
}

absl::Status GrpcAllReduceRank::AllReduce() {
  if (comm_ == nullptr) return absl::FailedPreconditionError("not connected");
  return comm_->AllReduce(options_.rank, in_, out_,
                          {devices::ReduceOp::kSum, options_.timeout});
}

absl::Status GrpcAllReduceRank::Barrier() {
  if (comm_ == nullptr) return absl::FailedPreconditionError("not connected");
  return comm_->Barrier(options_.rank, options_.timeout);
}

absl::Status GrpcAllReduceRank::CheckResult() const {
  const float expected =
      static_cast<float>(options_.size * (options_.size - 1) / 2);
  if (bytes_ < 4) return absl::OkStatus();
  const float got = out_.flat<float>()(0);
  if (got != expected) {
    return absl::InternalError(
        absl::StrCat("wrong all-reduce result ", got, ", expected ", expected));
  }
  return absl::OkStatus();
}

std::string GrpcAllReduceRank::LastSelection() const {
  if (comm_ == nullptr) return "";
  std::optional<distribute::collective::AllReduceSelection> selection =
      comm_->LastAllReduceSelection(options_.rank);
  if (!selection.has_value()) return "";
  return absl::StrCat(
      distribute::collective::AlgorithmName(selection->algorithm),
      "/chunk:", selection->chunk_bytes);
}

void GrpcAllReduceRank::Abort(const absl::Status& reason) {
  if (comm_ != nullptr) comm_->Abort(reason).IgnoreError();
}

absl::Status GrpcAllReduceRank::Finish() {
  absl::Status status = Barrier();
  comm_.reset();
  server_->Stop();
  return status;
}

}  // namespace tools_bench
