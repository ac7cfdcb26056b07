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
# median time (us) over ROUNDS interleaved rounds (default 3) and busbw
# (GB/s, nccl-tests' 2(N-1)/N convention).
#
# Usage (from the repository root; needs libgloo-dev, libopenmpi-dev and
# openmpi-bin):
#   tools/bench/compare_host_collectives.sh [RANKS...]     # default 2 4 8
# ROUNDS=N sets the rounds; DISTSIM_BENCH_PIN=1 pins our rank threads to
# CPUs as mpirun pins its ranks.
# RESULTS=file keeps the raw lines there. BIN_DIR=dir skips the build and
# takes the three binaries from dir.
set -euo pipefail

ranks=("$@")
if [ ${#ranks[@]} -eq 0 ]; then ranks=(2 4 8); fi

if [ -z "${BIN_DIR:-}" ]; then
  tools/bazel build -c opt //tools/bench:host_collectives \
    //tools/bench:gloo_allreduce //tools/bench:mpi_allreduce_worker
  # bazel-bin follows the last build's configuration: copy the binaries.
  BIN_DIR="$(mktemp -d)"
  out="$(tools/bazel info -c opt bazel-bin)/tools/bench"
  cp "$out/host_collectives" "$out/gloo_allreduce" \
    "$out/mpi_allreduce_worker" "$BIN_DIR/"
fi

results="${RESULTS:-$(mktemp)}"
rounds="${ROUNDS:-3}"

# This machine's speed drifts by up to 3x over tens of seconds (a shared
# VM), so the three are measured in turns: each round runs ours, OpenMPI
# and Gloo for one rank count, one after the other, and the table shows
# each one's median time over the rounds.
for n in "${ranks[@]}"; do
  for ((round = 1; round <= rounds; round++)); do
    # Ours: Google Benchmark CSV -> "ours N bytes us algbw busbw".
    "$BIN_DIR/host_collectives" \
      --benchmark_filter="BM_AllReduce/back_to_back/bytes:[0-9]+/replicas:${n}/" \
      --benchmark_min_time=0.2 --benchmark_format=csv 2>/dev/null |
      awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        { split($1, parts, "[/:]"); bytes = parts[4]; n = parts[6];
          printf "ours %s %s %s %s %s\n", n, bytes, $col["\"us\""],
                 $col["\"algbw\""], $col["\"busbw\""] }' >>"$results"
    mpirun --allow-run-as-root --oversubscribe -np "$n" \
      "$BIN_DIR/mpi_allreduce_worker" >>"$results"
    "$BIN_DIR/gloo_allreduce" --ranks="$n" --min_time=0.2 >>"$results"
  done
done

echo "host all-reduce, float32 sum; $(nproc) CPUs; ranks > CPUs oversubscribe;"
echo "median time of ${rounds} interleaved rounds, busbw from it"
# Median time per (impl, ranks, bytes), then one row per (ranks, bytes).
sort -k1,1 -k2,2n -k3,3n -k4,4g "$results" | awk '
  { key = $1 " " $2 " " $3; v[key, ++c[key]] = $4 }
  END {
    for (key in c) {
      m = c[key]
      if (m % 2) med = v[key, (m + 1) / 2]
      else med = (v[key, m / 2] + v[key, m / 2 + 1]) / 2
      print key, med
    }
  }' | sort -k2,2n -k3,3n | awk '
  { key = $2 " " $3; t[$1, key] = $4;
    bw[$1, key] = $4 > 0 ? $3 / ($4 * 1e3) * 2 * ($2 - 1) / $2 : 0;
    if (!(key in seen)) { seen[key] = 1; keys[++n] = key } }
  END {
    printf "%5s %10s | %10s %7s | %10s %7s | %10s %7s\n", "ranks", "bytes",
           "ours us", "GB/s", "gloo us", "GB/s", "mpi us", "GB/s";
    for (i = 1; i <= n; i++) {
      split(keys[i], k, " ");
      printf "%5s %10s | %10.1f %7.2f | %10.1f %7.2f | %10.1f %7.2f\n",
             k[1], k[2], t["ours", keys[i]], bw["ours", keys[i]],
             t["gloo", keys[i]], bw["gloo", keys[i]],
             t["mpi", keys[i]], bw["mpi", keys[i]]
    }
  }'
[ -n "${RESULTS:-}" ] || rm -f "$results"
