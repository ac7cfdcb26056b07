#!/bin/bash
# Cross-process all-reduce on loopback TCP, side by side in one run: ours
# (ScheduleCommunicator over the gRPC transport, one process per rank),
# four times: servers of protocol "grpc" (every byte over gRPC) and
# "grpc+tcp" (gRPC for the rendezvous, the bytes over the TCP data plane),
# each in plaintext and with mutual TLS ("grpc+tls", "grpc+tcp+tls": every
# rank's server has a throwaway self-signed certificate for 127.0.0.1 that
# is also the CA, made with openssl; without openssl those columns are "-"),
# Gloo's ring and chunked ring all-reduce over its TCP transport, OpenMPI's
# MPI_Allreduce over its TCP BTL (--mca btl tcp,self, pinned to lo), and a
# raw TCP stream between two threads (one direction, the loopback's ceiling).
# Prints one table: per ranks (2, 4) and size (4 KiB .. 64 MiB, x4), the
# median over ROUNDS interleaved rounds (default 3; each round runs every
# implementation once) of the mean time in microseconds, and busbw in GB/s
# (nccl-tests' convention) from it.
#
# Placement is the same for every implementation. PLACEMENT=mpirun (the
# default) is mpirun's own default: with no more ranks than CPUs each
# rank's process is bound to its own CPU (rank r to CPU r, as mpirun binds
# to cores for 2 ranks), otherwise no process is bound (mpirun's choice
# when oversubscribed). PLACEMENT=none binds nothing (mpirun --bind-to none).
#
#   [ROUNDS=N] [PLACEMENT=mpirun|none] tools/bench/compare_grpc_collectives.sh
#       [--ranks="2 4"] [--min_bytes=N] [--max_bytes=N]
#
# Needs libgloo-dev and libopenmpi-dev/openmpi-bin (the Gloo and MPI targets
# are manual); a missing one leaves its columns as "-".
set -u
cd "$(dirname "$0")/../.."

RANKS="2 4"
MIN_BYTES=4096
MAX_BYTES=$((64 << 20))
for arg in "$@"; do
  case "$arg" in
    --ranks=*) RANKS="${arg#--ranks=}" ;;
    --max_bytes=*) MAX_BYTES="${arg#--max_bytes=}" ;;
    --min_bytes=*) MIN_BYTES="${arg#--min_bytes=}" ;;
    *) echo "unknown argument $arg" >&2; exit 2 ;;
  esac
done

BAZEL=bazel
command -v bazel >/dev/null || BAZEL=tools/bazel
WORK=$(mktemp -d /tmp/compare_grpc.XXXXXX)
trap 'rm -rf "$WORK"' EXIT

build() {
  "$BAZEL" build -c opt "$@" >"$WORK/build.log" 2>&1
}
build //tools/bench:grpc_allreduce_worker //tools/bench:grpc_collectives ||
  { cat "$WORK/build.log" >&2; exit 1; }
BIN=$("$BAZEL" info -c opt bazel-bin 2>/dev/null)/tools/bench
cp "$BIN/grpc_allreduce_worker" "$BIN/grpc_collectives" "$WORK/"
HAVE_GLOO=0
HAVE_MPI=0
if build //tools/bench:gloo_allreduce_worker; then
  cp "$BIN/gloo_allreduce_worker" "$WORK/" && HAVE_GLOO=1
else
  echo "Gloo baseline not built (libgloo-dev missing?)" >&2
fi
if command -v mpirun >/dev/null && build //tools/bench:mpi_allreduce_worker; then
  cp "$BIN/mpi_allreduce_worker" "$WORK/" && HAVE_MPI=1
else
  echo "MPI baseline not built (libopenmpi-dev / openmpi-bin missing?)" >&2
fi

# A self-signed P-256 certificate for 127.0.0.1, every rank's own and its
# CA (mutual TLS, as distribute/server/internal/test_certificates.h).
HAVE_TLS=0
TLS_FLAGS=()
if command -v openssl >/dev/null &&
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -days 2 -subj /CN=localhost \
    -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$WORK/tls_key.pem" -out "$WORK/tls_cert.pem" \
    >"$WORK/openssl.log" 2>&1; then
  HAVE_TLS=1
  TLS_FLAGS=(--tls_cert="$WORK/tls_cert.pem" --tls_key="$WORK/tls_key.pem"
    --tls_ca="$WORK/tls_cert.pem")
else
  echo "TLS columns not run (openssl missing or failed)" >&2
fi

RESULTS="$WORK/results.txt"
: >"$RESULTS"
SWEEP="--min_bytes=$MIN_BYTES --max_bytes=$MAX_BYTES"

ROUNDS=${ROUNDS:-3}
PLACEMENT=${PLACEMENT:-mpirun}
case "$PLACEMENT" in
  mpirun | none) ;;
  *) echo "PLACEMENT must be mpirun or none, not $PLACEMENT" >&2; exit 2 ;;
esac
CPUS=$(nproc)
# Whether each of $1 ranks is bound to a CPU of its own (see the header).
bound() { [ "$PLACEMENT" = mpirun ] && [ "$1" -le "$CPUS" ]; }
# The command prefix that places rank $1 of $2.
place() {
  if bound "$2"; then echo "taskset -c $1"; fi
}

# Runs N copies of a worker (rank flags appended), keeps rank 0's lines.
run_ranks() {
  local n=$1
  shift
  local pids=()
  for ((r = 1; r < n; r++)); do
    $(place $r "$n") "$@" --rank=$r --size=$n $SWEEP >/dev/null \
      2>"$WORK/err.$r" &
    pids+=($!)
  done
  $(place 0 "$n") "$@" --rank=0 --size=$n $SWEEP >>"$RESULTS" 2>"$WORK/err.0"
  local status=$?
  for pid in "${pids[@]}"; do wait "$pid" || status=1; done
  if [ $status -ne 0 ]; then
    echo "failed: $* ($n ranks):" >&2
    cat "$WORK"/err.* >&2
  fi
}

for ((round = 1; round <= ROUNDS; round++)); do
for n in $RANKS; do
  port=$((20000 + RANDOM % 20000))
  run_ranks "$n" "$WORK/grpc_allreduce_worker" --port_base=$port
  run_ranks "$n" "$WORK/grpc_allreduce_worker" --port_base=$((port + 16)) \
    --protocol=grpc+tcp
  if [ $HAVE_TLS = 1 ]; then
    run_ranks "$n" "$WORK/grpc_allreduce_worker" --port_base=$((port + 32)) \
      "${TLS_FLAGS[@]}"
    run_ranks "$n" "$WORK/grpc_allreduce_worker" --port_base=$((port + 48)) \
      --protocol=grpc+tcp "${TLS_FLAGS[@]}"
  fi
  if [ $HAVE_GLOO = 1 ]; then
    for algorithm in ring ring_chunked; do
      store="$WORK/gloo-$n-$algorithm"
      mkdir -p "$store"
      run_ranks "$n" "$WORK/gloo_allreduce_worker" --store="$store" \
        --algorithm=$algorithm
    done
  fi
  if [ $HAVE_MPI = 1 ]; then
    bind=none
    bound "$n" && bind=core
    mpirun --allow-run-as-root --oversubscribe -np "$n" --bind-to $bind \
      --mca btl tcp,self --mca btl_tcp_if_include lo \
      "$WORK/mpi_allreduce_worker" $SWEEP >>"$RESULTS" 2>"$WORK/err.mpi" ||
      { echo "mpirun failed:" >&2; cat "$WORK/err.mpi" >&2; }
  fi
done
done

# The raw TCP stream: GB/s of one sender to one receiver per size.
"$WORK/grpc_collectives" --benchmark_filter='BM_TcpLoopback' \
  --benchmark_min_time=0.2 2>/dev/null |
  awk '/^BM_TcpLoopback/ {
    split($1, parts, "[:/]")
    for (i = 2; i <= NF; ++i) if ($i ~ /^tcp_GBps=/) {
      v = $i; sub(/^tcp_GBps=/, "", v); sub(/\/s$/, "", v)
    }
    printf "tcp 1 %d %s %s %s\n", parts[3], $2, v, v
  }' >>"$RESULTS"

# Median time per (implementation, ranks, bytes) over the rounds; busbw
# scales with 1 / time, so it is taken from the run with the median time.
sort -k1,1 -k2,2n -k3,3n -k4,4g "$RESULTS" | awk '
  { key = $1 " " $2 " " $3; line[key, ++c[key]] = $0 }
  END { for (key in c) print line[key, int((c[key] + 1) / 2)] }' |
awk -v ranks="$RANKS" -v rounds="$ROUNDS" -v placement="$PLACEMENT" '
  { key = $2 " " $3; time[$1, key] = $4; busbw[$1, key] = $6
    if ($1 == "tcp") tcp[$3] = $6; else sizes[$3] = 1 }
  END {
    n = split("grpc grpc+tls grpc+tcp grpc+tcp+tls gloo_ring gloo_ring_chunked mpi", impls, " ")
    printf "placement %s; median of %d interleaved rounds: time in us and busbw in GB/s per implementation; raw TCP: one stream, GB/s\n", placement, rounds
    printf "%5s %9s", "ranks", "bytes"
    for (i = 1; i <= n; ++i) printf " | %-24s", impls[i]
    printf " | %s\n", "raw TCP"
    m = split(ranks, rs, " ")
    for (j = 1; j <= m; ++j) {
      for (bytes = 1; bytes <= 1073741824; bytes *= 2) {
        if (!(bytes in sizes)) continue
        key = rs[j] " " bytes
        printf "%5s %9d", rs[j], bytes
        for (i = 1; i <= n; ++i) {
          if ((impls[i], key) in time)
            printf " | %10.0f us %6.2f GB/s", time[impls[i], key], busbw[impls[i], key]
          else
            printf " | %24s", "-"
        }
        printf " | %s\n", (bytes in tcp) ? sprintf("%.2f", tcp[bytes]) : "-"
      }
    }
  }'
