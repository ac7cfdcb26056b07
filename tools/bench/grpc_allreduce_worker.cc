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
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--algorithm=", 0) == 0) {
      options.algorithm = arg.substr(12);
      continue;
    }
    if (arg.rfind("--protocol=", 0) == 0) {
      options.protocol = arg.substr(11);
      continue;
    }
    if (arg.rfind("--tls_cert=", 0) == 0) {
      options.tls.cert_file = arg.substr(11);
      continue;
    }
    if (arg.rfind("--tls_key=", 0) == 0) {
      options.tls.key_file = arg.substr(10);
      continue;
    }
    if (arg.rfind("--tls_ca=", 0) == 0) {
      options.tls.ca_file = arg.substr(9);
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
