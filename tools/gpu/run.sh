#!/usr/bin/env bash
# Runs the GPU kit that tools/gpu/pack.sh made: every CUDA test binary (each
# under a timeout), the GPU benchmark, and `distsim train` on the cuda
# platform against the host. Needs only the NVIDIA driver, and cuBLAS and
# NCCL somewhere on the machine (the CUDA toolkit's lib64, or PyTorch's
# nvidia-* wheels); everything else travels in the kit.
#
#   bash gpu_kit/run.sh [RESULTS_DIR]     # default: $OUT, else gpu_kit/results
#
# Writes RESULTS_DIR/summary.txt (one line per test binary: passed, failed,
# skipped; the figures), kit.log (every binary's whole output) and
# bench.json. Exit status 0 when nothing failed (skipped is not failed).
set -uo pipefail
KIT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
RESULTS="${1:-${OUT:-$KIT/results}}"
mkdir -p "$RESULTS"
SUMMARY="$RESULTS/summary.txt"
LOG="$RESULTS/kit.log"
: >"$SUMMARY"
: >"$LOG"
TEST_TIMEOUT="${KIT_TEST_TIMEOUT:-90}"

say() { echo "$*" | tee -a "$SUMMARY"; }

# --- Libraries: the kit's own, then cuBLAS/NCCL/cudart wherever they are.
find_lib_dir() {  # prints the directory of the first $1 found
  local name="$1" dir
  local candidates=(/usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib
                    /usr/lib/x86_64-linux-gnu /usr/local/nvidia/lib64 /usr/local/nvidia/lib)
  if command -v python3 >/dev/null 2>&1; then
    while read -r sp; do
      candidates+=("$sp"/nvidia/*/lib "$sp"/nvidia/cu13/lib "$sp"/torch/lib)
    done < <(python3 -c 'import site,sys; print("\n".join(site.getsitepackages()+[site.getusersitepackages()]))' 2>/dev/null)
  fi
  for dir in "${candidates[@]}"; do
    if [[ -e "$dir/$name" ]]; then echo "$dir"; return 0; fi
  done
  dir="$(find / -xdev -name "$name" -not -path '/proc/*' 2>/dev/null | head -1)"
  [[ -n "$dir" ]] && dirname "$dir"
}
LIBPATH="$KIT/lib"
for lib in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2; do
  dir="$(find_lib_dir "$lib")"
  if [[ -z "$dir" ]]; then
    say "library $lib: NOT FOUND (binaries that need it will not start)"
  else
    say "library $lib: $dir"
    [[ ":$LIBPATH:" == *":$dir:"* ]] || LIBPATH="$LIBPATH:$dir"
  fi
done
export LD_LIBRARY_PATH="$LIBPATH${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# The kit was built against Debian 12's glibc (2.36); on an older one, run
# each binary through the glibc packed in the kit.
LOADER=()
glibc="$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')"
if [[ "${KIT_USE_OWN_GLIBC:-0}" == 1 ]] || { [[ -n "$glibc" ]] &&
    [[ "$(printf '%s\n2.36\n' "$glibc" | sort -V | head -1)" != 2.36 ]]; }; then
  LOADER=("$KIT/glibc/ld-linux-x86-64.so.2" --library-path "$KIT/glibc:$LD_LIBRARY_PATH")
  say "glibc $glibc (the kit's is 2.36): running every binary through the kit's glibc"
fi

{
  echo "== machine"
  date -u
  uname -a
  getconf GNU_LIBC_VERSION
  nvidia-smi || echo "nvidia-smi: not available"
  command -v nvcc >/dev/null && nvcc --version | tail -2
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
} >>"$LOG" 2>&1
gpu_line="$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)"
say "gpu: ${gpu_line:-none found by nvidia-smi}"
say "kit: $(cat "$KIT/VERSION" 2>/dev/null)"

passed=0 failed=0 skipped=0
# One test binary: its gtest counts into the summary.
run_test() {
  local name="$1"; shift
  local out rc
  echo "== test $name" >>"$LOG"
  out="$(timeout "$TEST_TIMEOUT" "${LOADER[@]}" "$KIT/bin/$name" "$@" 2>&1)"
  rc=$?
  echo "$out" >>"$LOG"
  local p f s
  p="$(echo "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' | tail -1)"
  f="$(echo "$out" | sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' | tail -1)"
  s="$(echo "$out" | sed -n 's/^\[  SKIPPED \] \([0-9]*\) test.*/\1/p' | tail -1)"
  p="${p:-0}" f="${f:-0}" s="${s:-0}"
  local verdict=ok
  if ((rc == 124)); then verdict="TIMED OUT after ${TEST_TIMEOUT}s"; f=$((f + 1))
  elif ((rc != 0 && f == 0)); then verdict="EXIT $rc"; f=1
  elif ((f > 0)); then verdict="FAILED"; fi
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
  say "$(printf 'test %-28s %3d passed %3d failed %3d skipped  %s' "$name" "$p" "$f" "$s" "$verdict")"
  if ((s > 0)); then
    echo "$out" | grep -m1 -i "no CUDA GPU found\|skipped" | sed 's/^/    /' | tee -a "$SUMMARY" >/dev/null
  fi
  echo "$out" | grep '^\[  FAILED  \] .*\.' | sed 's/^/    /' >>"$SUMMARY"
}

for t in $(cat "$KIT/TESTS"); do run_test "$t"; done

# The smoke binary: PASS/FAIL per kernel; exit 2 without a GPU.
echo "== cuda_smoke" >>"$LOG"
smoke="$(timeout "$TEST_TIMEOUT" "${LOADER[@]}" "$KIT/bin/cuda_smoke" 2>&1)"; rc=$?
echo "$smoke" >>"$LOG"
case $rc in
  0) say "cuda_smoke: $(echo "$smoke" | grep -c '^PASS ') checks passed" ;;
  2) say "cuda_smoke: skipped ($(echo "$smoke" | head -1))"; skipped=$((skipped + 1)) ;;
  *) say "cuda_smoke: FAILED (exit $rc)"; echo "$smoke" | grep '^FAIL' | sed 's/^/    /' >>"$SUMMARY"; failed=$((failed + 1)) ;;
esac

# The benchmark (every benchmark reports an error without a GPU).
echo "== bench" >>"$LOG"
timeout 240 "${LOADER[@]}" "$KIT/bin/cuda_bench" --benchmark_min_time=0.2 \
  --benchmark_out="$RESULTS/bench.json" --benchmark_out_format=json >>"$LOG" 2>&1
rc=$?
if [[ -s "$RESULTS/bench.json" ]] && command -v python3 >/dev/null; then
  python3 - "$RESULTS/bench.json" >>"$SUMMARY" <<'PY' || echo "bench: could not read bench.json" >>"$SUMMARY"
import json, sys
d = json.load(open(sys.argv[1]))
for b in d["benchmarks"]:
    if b.get("error_occurred"):
        print(f"bench {b['name']}: {b.get('error_message', 'error')}")
        continue
    t = b["real_time"]; unit = b.get("time_unit", "ns")
    extra = []
    for k in ("bytes_per_second", "flop_per_second"):
        if k in b: extra.append(f"{b[k]/1e9:.1f} G{'B' if k[0]=='b' else 'FLOP'}/s")
    for k in ("frac_of_peak_bw", "frac_of_fp32_peak"):
        if k in b: extra.append(f"{100*b[k]:.0f}% of peak")
    if "steps_per_second" in b: extra.append(f"{b['steps_per_second']:.2f} steps/s")
    print(f"bench {b['name']}: {t:.4g} {unit}  " + "  ".join(extra))
PY
fi
say "bench: exit $rc"

# Training on the cuda platform against the host: losses agree within
# 1e-4 (cuBLAS and the host sum in different orders, so bits differ).
train() {  # platform strategy
  timeout 60 "${LOADER[@]}" "$KIT/bin/distsim" train --platform="$1" \
    --strategy="$2" --steps=10 --global_batch=256 2>&1
}
for strategy in one_device mirrored; do
  echo "== train $strategy" >>"$LOG"
  gpu_out="$(train cuda "$strategy")"; grc=$?
  host_out="$(train host "$strategy")"; hrc=$?
  echo "$gpu_out" >>"$LOG"; echo "$host_out" >>"$LOG"
  gl="$(echo "$gpu_out" | sed -n 's/^summary: loss .* -> \([0-9.e+-]*\),.*/\1/p')"
  hl="$(echo "$host_out" | sed -n 's/^summary: loss .* -> \([0-9.e+-]*\),.*/\1/p')"
  gc="$(echo "$gpu_out" | sed -n 's/.*weights checksum \([0-9a-f]*\).*/\1/p')"
  hc="$(echo "$host_out" | sed -n 's/.*weights checksum \([0-9a-f]*\).*/\1/p')"
  if ((grc != 0)) || [[ -z "$gl" ]]; then
    if echo "$gpu_out" | grep -qi "no CUDA GPU\|FAILED_PRECONDITION"; then
      say "train $strategy: skipped on cuda ($(echo "$gpu_out" | tail -1))"; skipped=$((skipped + 1))
    else
      say "train $strategy: FAILED on cuda (exit $grc): $(echo "$gpu_out" | tail -1)"; failed=$((failed + 1))
    fi
    continue
  fi
  if ((hrc != 0)) || [[ -z "$hl" ]]; then
    say "train $strategy: FAILED on host (exit $hrc)"; failed=$((failed + 1)); continue
  fi
  if python3 -c "import sys; g,h=float(sys.argv[1]),float(sys.argv[2]); sys.exit(0 if abs(g-h) <= 1e-4*max(1,abs(h)) else 1)" "$gl" "$hl"; then
    say "train $strategy: ok, final loss cuda $gl host $hl, checksums $gc / $hc ($([[ "$gc" == "$hc" ]] && echo identical || echo differ))"
  else
    say "train $strategy: FAILED, final loss cuda $gl vs host $hl"; failed=$((failed + 1))
  fi
done

# With KIT_SANITIZE=1: the kernel tests again under compute-sanitizer's
# memcheck (out-of-bounds and misaligned accesses). Leaks are not checked:
# the tests keep one platform, and its caching allocator, for the process.
if [[ "${KIT_SANITIZE:-0}" == 1 ]]; then
  sanitizer="$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)"
  if [[ -z "$sanitizer" ]]; then
    say "memcheck: compute-sanitizer not found"
  else
    for t in cuda_kernels_test training_ops_test; do
      echo "== memcheck $t" >>"$LOG"
      out="$(timeout 150 "$sanitizer" --tool memcheck --error-exitcode 3 \
        "$KIT/bin/$t" 2>&1)"; rc=$?
      echo "$out" >>"$LOG"
      errors="$(echo "$out" | sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' | tail -1)"
      if ((rc == 0)); then say "memcheck $t: ${errors:-0} errors"
      else say "memcheck $t: FAILED (exit $rc, ${errors:-?} errors)"; failed=$((failed + 1)); fi
    done
  fi
fi

say "TOTAL: $passed passed, $failed failed, $skipped skipped"
((failed == 0))
