#!/usr/bin/env bash
# End-to-end: --use-slurm on a real one-node Slurm cluster started here (slurm_cluster.sh) and
# stopped afterwards. A small corpus: a good script (benchmarked), an endless loop (timeout), a
# segfault (crashed (signal 11)) and a sleeper whose job the test cancels with scancel
# (cancelled). Skips (exit 77) only when the Slurm or munge binaries are missing.
#   test_slurm.sh TURNKEY_BINARY SOURCE_DIR
set -uo pipefail
turnkey="$1"
src="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/slurm_cluster.sh"
if ! slurm_have_binaries; then
  echo "SKIP: Slurm binaries missing (munged, slurmctld, slurmd, sbatch, scontrol, scancel, sinfo);"
  echo "      install the Debian packages slurm-wlm and munge (scripts/setup does)"
  exit 77
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "FAIL: the Slurm test starts munged and slurmd, which needs root" >&2
  exit 1
fi
work="$(mktemp -d)"
chmod 0755 "$work"
cleanup() {
  scancel --name=turnkey-sleeper_ >/dev/null 2>&1 || true
  slurm_stop
  rm -rf "$work"
}
trap cleanup EXIT
slurm_start "$work/cluster" || { echo "FAIL: could not start Slurm" >&2; exit 1; }
echo "Slurm is up: $(sinfo -h -o '%P %T %c CPUs')"

hostile="$src/tests/data/hostile"
mkdir -p "$work/pids" "$work/corpus"
cp "$hostile/good_linear.py" "$hostile/infinite_loop.py" "$hostile/segfault.py" "$work/corpus/"
cat > "$work/corpus/sleeper.py" <<'PY'
import os
import time

folder = os.environ.get("HOSTILE_PID_DIR")
if folder:
    with open(os.path.join(folder, "pids.txt"), "a") as f:
        f.write("%d\n" % os.getpid())
time.sleep(300)
PY

# Cancel the sleeper's job once it runs, as an operator would.
(
  for _ in $(seq 1 600); do
    id="$(squeue -h -o '%i %j %T' 2>/dev/null | awk '$2 ~ /^turnkey-sleeper_/ && $3 == "RUNNING" {print $1}')"
    if [ -n "$id" ] && [ -s "$work/pids/pids.txt" ] && grep -q . "$work/pids/pids.txt"; then
      sleep 1
      scancel "$id"
      exit 0
    fi
    sleep 0.2
  done
) &
canceller=$!

export HOSTILE_PID_DIR="$work/pids"
export TURNKEY_BUILD_MONITOR=False
start=$(date +%s)
"$turnkey" "$work"/corpus/*.py -d "$work/cache" --use-slurm --timeout 12 --iterations 5 \
  > "$work/out.txt" 2> "$work/err.txt"
code=$?
echo "turnkey --use-slurm finished in $(( $(date +%s) - start )) s with exit code $code"
wait "$canceller" 2>/dev/null || true
cat "$work/out.txt" | tail -n 20
cat "$work/err.txt"

record() { cat "$work"/cache/inputs/"$1"_*.yaml 2>/dev/null; }
check "exit code 1 (some inputs failed)" test "$code" -eq 1
check "good_linear.py: successful" grep -q '^status: "successful"' <(record good_linear)
check "good_linear.py: benchmarked" grep -q "median_latency_ms" <(cat "$work"/cache/good_linear_*/turnkey_stats.yaml)
check "infinite_loop.py: timeout" grep -q '^status: "timeout"' <(record infinite_loop)
check "segfault.py: crashed with signal 11" \
  bash -c "grep -q '^status: \"crashed\"' $work/cache/inputs/segfault_*.yaml && grep -q '^signal: 11' $work/cache/inputs/segfault_*.yaml"
check "sleeper.py: cancelled" grep -q '^status: "cancelled"' <(record sleeper)
check "summary counts per status" \
  bash -c "grep -q 'Corpus summary: 4 inputs' $work/out.txt && grep -Eq '^  timeout +1$' $work/out.txt && grep -Eq '^  cancelled +1$' $work/out.txt"
check "progress lines while waiting" grep -q "turnkey: Slurm: .* done of 4" "$work/err.txt"
check "no job left in the queue" test -z "$(squeue -h 2>/dev/null)"
# A killed process may stay a zombie for a moment until its reaper gets to it: that is gone too.
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != "Z" ]; }
sleep 0.5
left=""
for p in $(cat "$work/pids/pids.txt" 2>/dev/null); do
  if alive "$p"; then left="$left $p:$(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null)"; fi
done
check "no process of the corpus left running${left:+ (left:$left)}" test -z "$left"

# --use-slurm and --process-isolation exclude each other (a usage error).
"$turnkey" "$work/corpus/good_linear.py" -d "$work/cache" --use-slurm --process-isolation \
  > /dev/null 2> "$work/usage.txt"
check "--use-slurm with --process-isolation is a usage error" test $? -eq 2

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed; Slurm logs:" >&2
  tail -n 20 "$work"/cluster/log/*.log >&2
  exit 1
fi
echo "all Slurm checks passed"
