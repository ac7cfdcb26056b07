#!/usr/bin/env bash
# Host all-reduce (float32 SUM) side by side, measured in the same run:
#   ours  //tools/bench:host_collectives, BM_AllReduce/back_to_back
#         (threads of one process; SharedMemoryAllReduce under AUTO;
#         all-reduces back to back, timed like the others' loop in
#         allreduce_sweep.h)
#   gloo  //tools/bench:gloo_allreduce (gloo::AllreduceRing, TCP on
#         127.0.0.1, threads of one process)
#   mpi   //tools/bench:mpi_allreduce_worker under mpirun (OpenMPI's
#         MPI_Allreduce between processes over shared memory)
# for 4 KiB .. 64 MiB (factor 4) and 2, 4, 8 ranks; prints one table of
# time (us) and busbw (GB/s, nccl-tests' 2(N-1)/N convention).
#
# Usage (from the repository root; needs libgloo-dev, libopenmpi-dev and
# openmpi-bin):
#   tools/bench/compare_host_collectives.sh [RANKS...]     # default 2 4 8
# BIN_DIR=dir skips the build and takes the three binaries from dir.
set -euo pipefail

ranks=("$@")
if [ ${#ranks[@]} -eq 0 ]; then ranks=(2 4 8); fi

if [ -z "${BIN_DIR:-}" ]; then
  bazel build -c opt //tools/bench:host_collectives \
    //tools/bench:gloo_allreduce //tools/bench:mpi_allreduce_worker
  # bazel-bin follows the last build's configuration: copy the binaries.
  BIN_DIR="$(mktemp -d)"
  out="$(bazel info -c opt bazel-bin)/tools/bench"
  cp "$out/host_collectives" "$out/gloo_allreduce" \
    "$out/mpi_allreduce_worker" "$BIN_DIR/"
fi

results="$(mktemp)"
ranks_csv="$(IFS=,; echo "${ranks[*]}")"
ranks_re="$(IFS='|'; echo "${ranks[*]}")"

# Ours: Google Benchmark CSV -> "ours N bytes us algbw busbw".
"$BIN_DIR/host_collectives" \
  --benchmark_filter="BM_AllReduce/back_to_back/bytes:[0-9]+/replicas:(${ranks_re})/" \
  --benchmark_min_time=0.2 --benchmark_format=csv 2>/dev/null |
  awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
    { split($1, parts, "[/:]"); bytes = parts[4]; n = parts[6];
      printf "ours %s %s %s %s %s\n", n, bytes, $col["\"us\""],
             $col["\"algbw\""], $col["\"busbw\""] }' >>"$results"

"$BIN_DIR/gloo_allreduce" --ranks="$ranks_csv" --min_time=0.2 >>"$results"

for n in "${ranks[@]}"; do
  mpirun --allow-run-as-root --oversubscribe -np "$n" \
    "$BIN_DIR/mpi_allreduce_worker" >>"$results"
done

echo "host all-reduce, float32 sum; $(nproc) CPUs; ranks > CPUs oversubscribe"
awk '
  { key = $2 " " $3; t[$1, key] = $4; bw[$1, key] = $6;
    if (!(key in seen)) { seen[key] = 1; order[++n] = key } }
  END {
    printf "%5s %10s | %10s %7s | %10s %7s | %10s %7s\n", "ranks", "bytes",
           "ours us", "GB/s", "gloo us", "GB/s", "mpi us", "GB/s";
    for (i = 1; i <= n; i++) {
      split(order[i], k, " ");
      printf "%5s %10s | %10.1f %7.2f | %10.1f %7.2f | %10.1f %7.2f\n",
             k[1], k[2], t["ours", order[i]], bw["ours", order[i]],
             t["gloo", order[i]], bw["gloo", order[i]],
             t["mpi", order[i]], bw["mpi", order[i]]
    }
  }' "$results"
rm -f "$results"
