#!/usr/bin/env bash
# Builds (-c opt) every CUDA test, the CUDA smoke check, the GPU benchmark
# and distsim, and packs them with the shared libraries a GPU machine lacks
# into one folder (default: gpu_kit/ at the repository's root, ignored by
# git), with run.sh. The kit holds everything the binaries link except the
# NVIDIA driver, cuBLAS/cuBLASLt and NCCL (hundreds of MB; run.sh finds
# them on the GPU machine, in the CUDA toolkit or PyTorch's wheels).
#
#   tools/gpu/pack.sh [KIT_DIR]
#   # then, on the GPU machine, from a copy of the tree that holds the kit:
#   bash gpu_kit/run.sh [RESULTS_DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
KIT="${1:-gpu_kit}"
MAX_MIB="${KIT_MAX_MIB:-60}"

# Test binaries (each a gtest main that skips without a GPU), then the
# other binaries, as target:name-in-the-kit.
TESTS=(
  //devices/cuda:cuda_kernels_test:cuda_kernels_test
  //devices/cuda:cuda_platform_test:cuda_platform_test
  //devices/cuda:nccl_communicator_test:nccl_communicator_test
  //devices/cuda:training_ops_test:training_ops_test
  //tests:cuda_training_test:cuda_training_test
  //distribute/server:nccl_bootstrap_test:nccl_bootstrap_test
)
OTHERS=(
  //devices/cuda:cuda_smoke:cuda_smoke
  //tools/bench:cuda:cuda_bench
  //tools/distsim:distsim:distsim
)

targets=()
for entry in "${TESTS[@]}" "${OTHERS[@]}"; do targets+=("${entry%:*}"); done
if [[ ! -d /usr/local/cuda ]] && ! command -v nvcc >/dev/null; then
  echo "pack.sh: no CUDA toolkit here (/usr/local/cuda); the kit's CUDA targets cannot be built" >&2
  exit 1
fi
tools/bazel build -c opt "${targets[@]}"

rm -rf "$KIT"
mkdir -p "$KIT/bin" "$KIT/lib" "$KIT/glibc"
: >"$KIT/TESTS"
built=()
for entry in "${TESTS[@]}" "${OTHERS[@]}"; do
  target="${entry%:*}"
  name="${entry##*:}"
  label="${target#//}"
  path="bazel-bin/${label%%:*}/${label##*:}"
  [[ -f "$path" ]] || { echo "pack.sh: $target built no $path" >&2; exit 1; }
  built+=("$path")
  cp "$path" "$KIT/bin/$name"
  chmod u+w "$KIT/bin/$name"
  strip --strip-unneeded "$KIT/bin/$name"
done
for entry in "${TESTS[@]}"; do echo "${entry##*:}" >>"$KIT/TESTS"; done

# Shared libraries: everything ldd resolves, except the C library (packed
# apart, for machines with an older one), the driver and the large NVIDIA
# libraries. libcudart is small and packed. ldd reads the built binaries,
# whose run paths lead to Bazel's own shared libraries.
skip='^(linux-vdso|libcuda\.so|libnvidia-|libcublas|libcublasLt|libnccl)'
glibc='^(ld-linux-x86-64|libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|libmvec)\.so'
for bin in "${built[@]}"; do
  ldd "$bin" | awk '/=>/ && $3 ~ /^\// {print $1, $3}' 
done | sort -u | while read -r soname file; do
  if [[ "$soname" =~ $skip ]]; then continue; fi
  if [[ "$soname" =~ $glibc ]]; then
    cp -L "$file" "$KIT/glibc/$soname"
  else
    cp -L "$file" "$KIT/lib/$soname"
    chmod u+w "$KIT/lib/$soname"
    strip --strip-unneeded "$KIT/lib/$soname" 2>/dev/null || true
  fi
done
loader="$(ldd "${built[0]}" | awk '/ld-linux-x86-64/ {print $1}')"
cp -L "$loader" "$KIT/glibc/ld-linux-x86-64.so.2"

cp tools/gpu/run.sh "$KIT/run.sh"
chmod +x "$KIT/run.sh"
echo "$(git rev-parse --short HEAD 2>/dev/null)$(git diff --quiet 2>/dev/null || echo '+changes') built $(date -u +%FT%TZ)" >"$KIT/VERSION"

mib=$(( $(du -sb "$KIT" | cut -f1) / 1048576 ))
echo "pack.sh: $KIT holds $(ls "$KIT/bin" | wc -l) binaries and $(ls "$KIT/lib" | wc -l) libraries, ${mib} MiB"
if ((mib > MAX_MIB)); then
  echo "pack.sh: the kit is ${mib} MiB, over ${MAX_MIB} MiB: a GPU machine takes at most 64 MiB with the tree" >&2
  exit 1
fi
