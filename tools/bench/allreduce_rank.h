// One rank of a cross-process all-reduce over our gRPC transport
// (ScheduleCommunicator over GrpcTransport, float32 SUM), as the benchmarks
// of tools/bench set it up: grpc_allreduce_worker (one process per rank,
// fixed ports) and grpc_collectives (rank 0 in the benchmark process, the
// others its child processes, ports chosen by the system).
//
// Setting up takes two steps, so that ports chosen by the system can be
// exchanged in between: Start() serves task `rank` of job "worker" on
// `address` ("127.0.0.1:0" lets the system pick the port; address() then
// has it), Connect() joins the group once every rank's address is known.
//
// Example:
//   absl::StatusOr<std::unique_ptr<GrpcAllReduceRank>> rank =
//       GrpcAllReduceRank::Start(options, "127.0.0.1:0");
//   ... exchange (*rank)->address() with the other ranks ...
//   (*rank)->Connect(addresses);
//   (*rank)->Resize(bytes);
//   (*rank)->AllReduce();
//   (*rank)->Finish();
#ifndef TOOLS_BENCH_ALLREDUCE_RANK_H_
#define TOOLS_BENCH_ALLREDUCE_RANK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "devices/tensor.h"
#include "distribute/collective/schedule_communicator.h"
#include "distribute/server/server.h"

namespace tools_bench {

struct GrpcAllReduceRankOptions {
  int rank = 0;
  int size = 1;
  // The server's ServerOptions::protocol: "grpc" or "grpc+tcp".
  std::string protocol = "grpc";
  // The server's ServerOptions::tls (none by default).
  distribute::TlsOptions tls;
  // GrpcTransportOptions::group_key; the same on every rank.
  std::string group_key = "allreduce";
  // "auto" (AUTO selection) or a name AlgorithmFromName knows.
  std::string algorithm = "auto";
  // ScheduleCommunicatorOptions::chunk_bytes (0: the tuner's choice).
  int64_t chunk_bytes = 0;
  // How long Connect waits for every rank's server.
  absl::Duration connect_timeout = absl::Seconds(60);
  // The deadline of each all-reduce and barrier.
  absl::Duration timeout = absl::Seconds(120);
};

class GrpcAllReduceRank {
 public:
  // Starts the server of task options.rank on `address` ("host:port").
  static absl::StatusOr<std::unique_ptr<GrpcAllReduceRank>> Start(
      GrpcAllReduceRankOptions options, const std::string& address);

  GrpcAllReduceRank(const GrpcAllReduceRank&) = delete;
  GrpcAllReduceRank& operator=(const GrpcAllReduceRank&) = delete;
  // Stops the server (without the closing barrier of Finish).
  ~GrpcAllReduceRank();

  // "host:port" with the bound port.
  std::string address() const { return server_->address(); }
  const GrpcAllReduceRankOptions& options() const { return options_; }

  // Joins the group: `addresses` are every rank's address(), by rank.
  absl::Status Connect(const std::vector<std::string>& addresses);

  // Sizes the buffers for `bytes` of float32, the input filled with the
  // rank's number.
  absl::Status Resize(int64_t bytes);
  int64_t bytes() const { return bytes_; }

  // One all-reduce of the buffers; a barrier of every rank.
  absl::Status AllReduce();
  absl::Status Barrier();
  // Whether the last all-reduce's output is the sum of the ranks' numbers.
  absl::Status CheckResult() const;
  // The last all-reduce's algorithm and chunk size ("ring/chunk:2097152"),
  // or "".
  std::string LastSelection() const;
  // Aborts the group (any thread): this rank's pending and later
  // collectives fail, and so do the other ranks'.
  void Abort(const absl::Status& reason);

  // A last barrier, so that no rank stops its server while a peer still
  // sends, then stops.
  absl::Status Finish();

 private:
  GrpcAllReduceRank(GrpcAllReduceRankOptions options,
                    std::unique_ptr<distribute::Server> server)
      : options_(std::move(options)), server_(std::move(server)) {}

  const GrpcAllReduceRankOptions options_;
  std::unique_ptr<distribute::Server> server_;
  std::unique_ptr<distribute::collective::ScheduleCommunicator> comm_;
  devices::Tensor in_;
  devices::Tensor out_;
  int64_t bytes_ = -1;
};

}  // namespace tools_bench

#endif  // TOOLS_BENCH_ALLREDUCE_RANK_H_
