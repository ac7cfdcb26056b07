// One rank of a cross-process all-reduce over our gRPC transport
// (ScheduleCommunicator over GrpcTransport, AUTO algorithm), for
// compare_grpc_collectives.sh. Task i of job "worker" serves on
// 127.0.0.1:<port_base + i>.
//
//   grpc_allreduce_worker --rank=0 --size=2 --port_base=23400
//       [--min_bytes=4096 --max_bytes=67108864]
//       [--algorithm=auto|ring|tree|rhd|direct --chunk_bytes=N]
//       [--protocol=grpc|grpc+tcp]
//
// Rank 0 prints the lines of allreduce_sweep.h with impl "grpc" (or
// "grpc+tcp": the servers' protocol, see distribute/server/server.h).
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "devices/reduce_op.h"
#include "devices/tensor.h"
#include "devices/transport.h"
#include "distribute/cluster/cluster_spec.h"
#include "distribute/collective/schedule.h"
#include "distribute/collective/schedule_communicator.h"
#include "distribute/server/grpc_transport.h"
#include "distribute/server/server.h"
#include "tools/bench/allreduce_sweep.h"

namespace {

constexpr absl::Duration kTimeout = absl::Seconds(120);

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "grpc_allreduce_worker: %s\n",
               status.ToString().c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t rank = -1, size = 0, port_base = 0, chunk_bytes = 0;
  std::string algorithm = "auto";
  distribute::ServerOptions server_options;
  tools_bench::SweepOptions sweep;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--algorithm=", 0) == 0) {
      algorithm = arg.substr(12);
      continue;
    }
    if (arg.rfind("--protocol=", 0) == 0) {
      server_options.protocol = arg.substr(11);
      continue;
    }
    if (!tools_bench::ParseIntFlag(argv[i], "rank", rank) &&
        !tools_bench::ParseIntFlag(argv[i], "chunk_bytes", chunk_bytes) &&
        !tools_bench::ParseIntFlag(argv[i], "size", size) &&
        !tools_bench::ParseIntFlag(argv[i], "port_base", port_base) &&
        !tools_bench::ParseIntFlag(argv[i], "min_bytes", sweep.min_bytes) &&
        !tools_bench::ParseIntFlag(argv[i], "max_bytes", sweep.max_bytes)) {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (size < 1 || rank < 0 || rank >= size || port_base < 1 ||
      port_base + size > 65535) {
    std::fprintf(stderr,
                 "usage: grpc_allreduce_worker --rank=R --size=N "
                 "--port_base=P (0 <= R < N, ports P..P+N-1 free)\n");
    return 2;
  }
  sweep.impl = server_options.protocol;
  sweep.rank = static_cast<int>(rank);
  sweep.size = static_cast<int>(size);

  std::vector<std::string> addresses;
  for (int64_t i = 0; i < size; ++i) {
    addresses.push_back(absl::StrCat("127.0.0.1:", port_base + i));
  }
  absl::StatusOr<distribute::cluster::ClusterSpec> spec =
      distribute::cluster::ClusterSpec::Create({{"worker", addresses}});
  if (!spec.ok()) return Fail(spec.status());
  absl::StatusOr<std::unique_ptr<distribute::Server>> server =
      distribute::Server::Create(*spec, "worker", sweep.rank, server_options);
  if (!server.ok()) return Fail(server.status());
  distribute::GrpcTransportOptions options;
  options.group_key = "compare-allreduce";
  options.rank_targets = addresses;
  options.rank = sweep.rank;
  options.connect_timeout = absl::Seconds(60);
  absl::StatusOr<std::unique_ptr<devices::Transport>> transport =
      distribute::GrpcTransport::Create(**server, options);
  if (!transport.ok()) return Fail(transport.status());
  std::vector<std::unique_ptr<devices::Transport>> endpoints;
  endpoints.push_back(*std::move(transport));
  distribute::collective::ScheduleCommunicatorOptions comm_options;
  comm_options.chunk_bytes = chunk_bytes;
  comm_options.topology =
      distribute::GrpcGroupTopology(server_options.protocol);
  if (algorithm != "auto") {
    absl::StatusOr<distribute::collective::Algorithm> forced =
        distribute::collective::AlgorithmFromName(algorithm);
    if (!forced.ok()) return Fail(forced.status());
    comm_options.all_reduce_algorithm = *forced;
  }
  absl::StatusOr<std::unique_ptr<distribute::collective::ScheduleCommunicator>>
      comm = distribute::collective::ScheduleCommunicator::Create(
          std::move(endpoints), std::move(comm_options));
  if (!comm.ok()) return Fail(comm.status());

  sweep.note = [&comm, &sweep]() -> std::string {
    std::optional<distribute::collective::AllReduceSelection> selection =
        (*comm)->LastAllReduceSelection(sweep.rank);
    if (!selection.has_value()) return "";
    return absl::StrCat(
        distribute::collective::AlgorithmName(selection->algorithm),
        "/chunk:", selection->chunk_bytes);
  };
  devices::Tensor in, out;
  absl::Status failure;
  const bool ok = tools_bench::RunSweep(
      sweep,
      [&](int64_t bytes) {
        const devices::Shape shape({bytes / 4});
        in = *devices::Tensor::Host(devices::DType::kFloat32, shape);
        out = *devices::Tensor::Host(devices::DType::kFloat32, shape);
        in.flat<float>().setConstant(static_cast<float>(sweep.rank));
        return true;
      },
      [&] {
        failure = (*comm)->AllReduce(sweep.rank, in, out,
                                     {devices::ReduceOp::kSum, kTimeout});
        return failure.ok();
      },
      [&] {
        failure = (*comm)->Barrier(sweep.rank, kTimeout);
        return failure.ok();
      });
  if (!ok) return Fail(failure);
  // The result is the sum of the ranks.
  const float expected = static_cast<float>(size * (size - 1) / 2);
  if (out.flat<float>()(0) != expected) {
    return Fail(absl::InternalError(absl::StrCat("wrong all-reduce result ",
                                                 out.flat<float>()(0),
                                                 ", expected ", expected)));
  }
  // Leave together, so no rank stops its server while a peer still sends.
  absl::Status last = (*comm)->Barrier(sweep.rank, kTimeout);
  if (!last.ok()) return Fail(last);
  comm->reset();
  (*server)->Stop();
  return 0;
}
