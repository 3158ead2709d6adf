#!/usr/bin/env bash
# The fuzz campaign of docs/reliability.md on a many-core machine that has no build: every target
# of tests/fuzz at once, each with libFuzzer's -fork=W (W worker processes sharing one corpus),
# for SECONDS, from a pack that scripts/pack-fuzz made (bin/, lib/, lib-compat/, seeds/).
#
#   bench/fuzz_campaign_device.sh PACK SECONDS [OUT_DIR]
#
# OUT_DIR (default $OUT/fuzz-campaign, else ./fuzz-campaign) gets per target the corpus as it
# grew (corpus/), what libFuzzer saved as failing (crashes/: crash-*, leak-*, timeout-*, oom-*,
# slow-unit-*) and the log; it prints per target the workers, the executions of all of them, the
# executions per second and the failing files. Exit 1 when any target saved a failing input.
# FUZZ_WORKERS="npz=1 protocol=4 ..." replaces the workers of the table below.
set -euo pipefail
pack="$(cd "${1:?PACK folder (scripts/pack-fuzz)}" && pwd)"
seconds="${2:?SECONDS per target}"
out="${3:-${OUT:-$PWD}/fuzz-campaign}"

# target -> workers on a 16 cores: in inverse proportion to its executions per second on one core
# (docs/reliability.md, "Speed of the targets"), so that all reach their counts at about the same
# time; npz, at ~35 000/s, needs one.
workers_table="npz=1 onnx_model=1 tensor_pb=2 protocol=3 input_list=4 cache_records=5"
for kv in ${FUZZ_WORKERS:-}; do
  workers_table="$(echo " $workers_table " | sed "s/ ${kv%%=*}=[0-9]* / $kv /")"
done

export LD_LIBRARY_PATH="$pack/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The machine's libstdc++ older than the build's: take the packed one (lib-compat/).
if ! "$pack/bin/fuzz_npz" -help=1 > /dev/null 2>&1; then
  export LD_LIBRARY_PATH="$pack/lib:$pack/lib-compat${LD_LIBRARY_PATH#"$pack/lib"}"
  if ! "$pack/bin/fuzz_npz" -help=1 > /dev/null 2>&1; then
    echo "fuzz campaign: the packed programs do not start here:" >&2
    "$pack/bin/fuzz_npz" -help=1 2>&1 >/dev/null | head -3 >&2
    exit 1
  fi
  echo "fuzz campaign: using the packed libstdc++ (lib-compat/)"
fi

# Each target's files of one execution go to memory (fuzz_support.h), in a folder of this run.
scratch="$(mktemp -d "${TMPDIR:-/tmp}/turnkey-fuzz-scratch.XXXXXX")"
[ -w /dev/shm ] && scratch="$(mktemp -d /dev/shm/turnkey-fuzz-scratch.XXXXXX)"
export TURNKEY_FUZZ_SCRATCH="$scratch"
pids=()
trap 'kill "${pids[@]}" 2>/dev/null || true; rm -rf "$scratch"' EXIT
echo "fuzz campaign: $(nproc) cores, ${seconds} s per target, out: $out"
for kv in $workers_table; do
  t="${kv%%=*}" w="${kv#*=}"
  [ "$w" -gt 0 ] || continue
  mkdir -p "$out/$t/corpus" "$out/$t/crashes" "$out/$t/tmp"
  cp "$pack/seeds/$t"/* "$out/$t/corpus/"
  max_len=$(awk -v t="$t" '$1 == t { print $2 }' "$pack/max_len")
  TMPDIR="$out/$t/tmp" "$pack/bin/fuzz_$t" -fork="$w" -ignore_crashes=1 -ignore_timeouts=1 \
    -ignore_ooms=1 -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 -max_len="$max_len" \
    -artifact_prefix="$out/$t/crashes/" "$out/$t/corpus" > "$out/$t/log.txt" 2>&1 &
  pids+=($!)
done
status=0
for p in "${pids[@]}"; do wait "$p" || status=1; done
pids=()

found=0
printf '%-14s %7s %14s %9s  %s\n' target workers executions exec/s "failing inputs (crashes/)"
for kv in $workers_table; do
  t="${kv%%=*}" w="${kv#*=}"
  [ "$w" -gt 0 ] || continue
  # Fork mode's progress lines: "#RUNS: cov: ... exec/s N oom/timeout/crash: a/b/c time: Ss".
  last="$(grep -E '^#[0-9]+: cov:' "$out/$t/log.txt" | tail -1)"
  runs="$(echo "$last" | sed -nE 's/^#([0-9]+):.*/\1/p')"
  time_s="$(echo "$last" | sed -nE 's/.* time: ([0-9]+)s.*/\1/p')"
  files="$(cd "$out/$t/crashes" && ls | tr '\n' ' ')"
  [ -z "$files" ] || found=1
  printf '%-14s %7s %14s %9s  %s\n' "$t" "$w" "${runs:-?}" \
    "$(( ${runs:-0} / (${time_s:-0} > 0 ? ${time_s:-1} : 1) ))" "${files:-none}"
  grep -E '^(CRASH|TIMEOUT|OOM|==[0-9]+==ERROR)' "$out/$t/log.txt" | head -3 | sed 's/^/    /' || true
done
rm -rf "$out"/*/tmp
[ "$status" -eq 0 ] || echo "fuzz campaign: a libFuzzer parent exited non-zero (see its log.txt)"
exit $((found || status))
