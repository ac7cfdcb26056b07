#!/usr/bin/env bash
# Fuzzes one target of //tools/fuzz with libFuzzer (clang, ASan, UBSan), or
# every target in turn, for SECONDS each (default 60), starting from its
# corpus in tools/fuzz/corpus/NAME. New inputs go to a scratch corpus
# (FUZZ_WORK, default /tmp/distsim_fuzz/NAME), crashes to FUZZ_WORK's
# crashes/ folder; copy an input that found a bug into the repository's
# corpus, named bug_..., so the replay test keeps it.
#
#   tools/fuzz/run.sh hostlist 600          # one target, ten minutes
#   tools/fuzz/run.sh all 60                # every target, a minute each
#   FUZZ_ARGS='-runs=10000000' tools/fuzz/run.sh checkpoint 0
#
# Prints libFuzzer's final statistics line (executions, exec/s, coverage).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
target="${1:-all}"
seconds="${2:-60}"
work_root="${FUZZ_WORK:-/tmp/distsim_fuzz}"
# An output base of its own: the clang toolchain would otherwise replace
# the gcc one of the main build's cache.
bazel=(tools/bazel --output_base="${FUZZ_OUTPUT_BASE:-$HOME/.cache/distsim_fuzz_bazel}")

targets=()
if [[ "$target" == all ]]; then
  for dir in tools/fuzz/corpus/*/; do targets+=("$(basename "$dir")"); done
else
  if [[ ! -d "tools/fuzz/corpus/$target" ]]; then
    echo "run.sh: no target '$target'; the targets are: $(ls tools/fuzz/corpus | tr '\n' ' ')" >&2
    exit 2
  fi
  targets=("$target")
fi

labels=()
for t in "${targets[@]}"; do labels+=("//tools/fuzz:${t}_fuzzer"); done
# --symlink_prefix=/: no bazel-* links in the workspace, which belong to the
# main build (a link into this output base would make `bazel test //...`
# of the main build wander into it).
"${bazel[@]}" build --config=fuzz --symlink_prefix=/ "${labels[@]}"
bin="$("${bazel[@]}" info --config=fuzz bazel-bin 2>/dev/null)"

status=0
for t in "${targets[@]}"; do
  work="$work_root/$t"
  mkdir -p "$work/corpus" "$work/crashes"
  args=(-max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10
        -artifact_prefix="$work/crashes/" -print_final_stats=1)
  ((seconds == 0)) && args=(-rss_limit_mb=2048 -timeout=10
        -artifact_prefix="$work/crashes/" -print_final_stats=1)
  echo "== $t: ${seconds}s, corpus tools/fuzz/corpus/$t, new inputs in $work/corpus" >&2
  # shellcheck disable=SC2086
  if ! "$bin/tools/fuzz/${t}_fuzzer" "${args[@]}" ${FUZZ_ARGS:-} \
      "$work/corpus" "tools/fuzz/corpus/$t" 2>"$work/log"; then
    status=1
    echo "$t: FAILED; the input is in $work/crashes/, the log in $work/log" >&2
  fi
  grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)|cov: " "$work/log" |
    tail -4 | sed "s/^/$t: /"
done
exit $status
