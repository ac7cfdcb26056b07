// MPI_Allreduce of float32 sums for compare_grpc_collectives.sh (the
// OpenMPI baseline; a manual target: it needs Debian's libopenmpi-dev).
// Run over TCP on loopback:
//
//   mpirun --allow-run-as-root --oversubscribe -np 2 --mca btl tcp,self
//       --mca btl_tcp_if_include lo mpi_allreduce_worker [--min_bytes=...
//       --max_bytes=...]
//
// Rank 0 prints the lines of allreduce_sweep.h with impl "mpi".
#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "tools/bench/allreduce_sweep.h"
#include "tools/flags/flags.h"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  tools_bench::SweepOptions sweep;
  sweep.impl = "mpi";
  sweep.rank = rank;
  sweep.size = size;
  tools_flags::FlagSet flags("mpi_allreduce_worker");
  flags.Int("min_bytes", &sweep.min_bytes, "smallest all-reduce");
  flags.Int("max_bytes", &sweep.max_bytes, "largest all-reduce (sizes x4)");
  // Every rank parses (MPI_Init has taken mpirun's own arguments); rank 0
  // speaks for them.
  const absl::Status parsed = flags.Parse(argc, argv);
  if (!parsed.ok()) {
    if (rank == 0 && !absl::IsCancelled(parsed)) {
      std::fprintf(stderr, "mpi_allreduce_worker: %s\n",
                   std::string(parsed.message()).c_str());
    }
    MPI_Finalize();
    return absl::IsCancelled(parsed) ? 0 : 2;
  }
  std::vector<float> in, out;
  const bool ok = tools_bench::RunSweep(
      sweep,
      [&](int64_t bytes) {
        in.assign(static_cast<size_t>(bytes / 4), static_cast<float>(rank));
        out.assign(in.size(), 0.0f);
        return true;
      },
      [&] {
        return MPI_Allreduce(in.data(), out.data(), static_cast<int>(in.size()),
                             MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS;
      },
      [&] { return MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS; });
  MPI_Finalize();
  return ok ? 0 : 1;
}
