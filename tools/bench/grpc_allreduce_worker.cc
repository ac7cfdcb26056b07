// One rank of a cross-process all-reduce over our gRPC transport
// (ScheduleCommunicator over GrpcTransport, AUTO algorithm, set up by
// allreduce_rank.h), for compare_grpc_collectives.sh. Task i of job
// "worker" serves on 127.0.0.1:<port_base + i>.
//
//   grpc_allreduce_worker --rank=0 --size=2 --port_base=23400
//       [--min_bytes=4096 --max_bytes=67108864]
//       [--algorithm=auto|ring|tree|rhd|direct --chunk_bytes=N]
//       [--protocol=grpc|grpc+tcp]
//       [--tls_cert=FILE --tls_key=FILE [--tls_ca=FILE]]
//
// Rank 0 prints the lines of allreduce_sweep.h with impl "grpc" (or
// "grpc+tcp": the servers' protocol, see distribute/server/server.h),
// followed by "+tls" when the servers have TLS options (ServerOptions::tls:
// every rank's certificate must verify against every rank's CA, and name
// 127.0.0.1).
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "tools/bench/allreduce_rank.h"
#include "tools/bench/allreduce_sweep.h"
#include "tools/flags/flags.h"

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
  tools_bench::GrpcAllReduceRankOptions options;
  options.group_key = "compare-allreduce";
  options.timeout = kTimeout;
  tools_bench::SweepOptions sweep;
  tools_flags::FlagSet flags("grpc_allreduce_worker");
  flags.Int("rank", &rank, "this process's rank, 0 <= R < --size");
  flags.Int("size", &size, "how many ranks");
  flags.Int("port_base", &port_base,
            "rank i serves on 127.0.0.1:<port_base + i>");
  flags.Int("min_bytes", &sweep.min_bytes, "smallest all-reduce");
  flags.Int("max_bytes", &sweep.max_bytes, "largest all-reduce (sizes x4)");
  flags.String("algorithm", &options.algorithm,
               "auto, ring, tree, rhd or direct");
  flags.Int("chunk_bytes", &chunk_bytes, "chunk size of the ring (0: auto)");
  flags.String("protocol", &options.protocol, "grpc or grpc+tcp");
  flags.String("tls_cert", &options.tls.cert_file,
               "this server's TLS certificate (PEM); with --tls_key: TLS");
  flags.String("tls_key", &options.tls.key_file, "its private key (PEM)");
  flags.String("tls_ca", &options.tls.ca_file,
               "the CA that signed every rank's certificate (PEM)");
  const absl::Status parsed = flags.Parse(argc, argv);
  if (absl::IsCancelled(parsed)) return 0;  // --help
  if (!parsed.ok()) {
    std::fprintf(stderr, "grpc_allreduce_worker: %s\n",
                 std::string(parsed.message()).c_str());
    return 2;
  }
  if (size < 1 || rank < 0 || rank >= size || port_base < 1 ||
      port_base + size > 65535) {
    std::fprintf(stderr,
                 "usage: grpc_allreduce_worker --rank=R --size=N "
                 "--port_base=P (0 <= R < N, ports P..P+N-1 free)\n");
    return 2;
  }
  sweep.impl = options.protocol + (options.tls.enabled() ? "+tls" : "");
  sweep.rank = static_cast<int>(rank);
  sweep.size = static_cast<int>(size);
  options.rank = sweep.rank;
  options.size = sweep.size;
  options.chunk_bytes = chunk_bytes;

  std::vector<std::string> addresses;
  for (int64_t i = 0; i < size; ++i) {
    addresses.push_back(absl::StrCat("127.0.0.1:", port_base + i));
  }
  absl::StatusOr<std::unique_ptr<tools_bench::GrpcAllReduceRank>> me =
      tools_bench::GrpcAllReduceRank::Start(options, addresses[rank]);
  if (!me.ok()) return Fail(me.status());
  tools_bench::GrpcAllReduceRank& r = **me;
  absl::Status failure = r.Connect(addresses);
  if (!failure.ok()) return Fail(failure);

  sweep.note = [&r] { return r.LastSelection(); };
  const bool ok = tools_bench::RunSweep(
      sweep,
      [&](int64_t bytes) {
        failure = r.Resize(bytes);
        return failure.ok();
      },
      [&] {
        failure = r.AllReduce();
        return failure.ok();
      },
      [&] {
        failure = r.Barrier();
        return failure.ok();
      });
  if (!ok) return Fail(failure);
  // The result is the sum of the ranks.
  failure = r.CheckResult();
  if (!failure.ok()) return Fail(failure);
  // Leave together, so no rank stops its server while a peer still sends.
  failure = r.Finish();
  if (!failure.ok()) return Fail(failure);
  return 0;
}
