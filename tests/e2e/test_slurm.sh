#!/usr/bin/env bash
# End-to-end: --use-slurm on a real one-node Slurm cluster started here (slurm_cluster.sh) and
# stopped afterwards. A small corpus: a good script (benchmarked), an endless loop (timeout), a
# segfault (crashed (signal 11)) and a sleeper whose job the test cancels with scancel
# (cancelled). Then a controller that stops answering (SIGSTOP) for longer than
# --slurm-controller-timeout (inputs still out: slurm_unreachable, turnkey ends) and for less (the
# run goes on). Skips (exit 77) only when the Slurm or munge binaries are missing.
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
  # A controller the test stopped (SIGSTOP) answers again, so the jobs can be cancelled.
  [ -n "${SLURM_TEST_DIR:-}" ] && kill -CONT "$(cat "$SLURM_TEST_DIR/slurmctld.pid" 2>/dev/null)" 2>/dev/null
  scancel --user="$(id -un)" >/dev/null 2>&1 || true
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

# ---- The controller stops answering mid-run (a hung slurmctld: SIGSTOP) -------------------------
# Two jobs run side by side (not exclusive: one CPU each). The quick one ends while the controller
# is silent: its result is read from its record in the cache dir. The other is still running when
# --slurm-controller-timeout passes: it is recorded slurm_unreachable and turnkey ends, rather than
# waiting for a controller that may never come back.
mkdir -p "$work/corpus2"
{ echo "import time"; echo "time.sleep(4)"; cat "$hostile/good_linear.py"; } > "$work/corpus2/late_good.py"
printf 'import time\ntime.sleep(120)\n' > "$work/corpus2/long_sleeper.py"
"$turnkey" "$work"/corpus2/*.py -d "$work/cache2" --use-slurm --slurm-exclusive never \
  --slurm-controller-timeout 15 --timeout 300 --iterations 5 > "$work/out2.txt" 2> "$work/err2.txt" &
tk=$!
ctld="$(cat "$SLURM_TEST_DIR/slurmctld.pid")"
for _ in $(seq 1 300); do
  [ "$(squeue -h -t RUNNING -o %i 2>/dev/null | wc -l)" -eq 2 ] && break
  sleep 0.2
done
kill -STOP "$ctld"
stopped=$(date +%s)
for _ in $(seq 1 120); do kill -0 "$tk" 2>/dev/null || break; sleep 1; done
if kill -0 "$tk" 2>/dev/null; then
  kill "$tk"
  check "turnkey ends while the controller is silent" false
fi
wait "$tk"
code2=$?
echo "turnkey ended $(( $(date +%s) - stopped )) s after the controller stopped, exit code $code2"
kill -CONT "$ctld"
cat "$work/err2.txt"
check "silent controller: exit code 1" test "$code2" -eq 1
check "silent controller: said once, with the reason" \
  test "$(grep -c 'the controller does not answer (squeue' "$work/err2.txt")" -eq 1
rec2() { cat "$work"/cache2/inputs/"$1"_*.yaml 2>/dev/null; }
check "silent controller: the job that ended meanwhile is successful, read from its record" \
  bash -c "grep -q '^status: \"successful\"' $work/cache2/inputs/late_good_*.yaml &&
           grep -q 'UNKNOWN' $work/cache2/inputs/late_good_*.yaml"
check "silent controller: the running job's input is slurm_unreachable, saying why" \
  bash -c "grep -q '^status: \"slurm_unreachable\"' $work/cache2/inputs/long_sleeper_*.yaml &&
           grep -q 'did not answer for' $work/cache2/inputs/long_sleeper_*.yaml"
check "silent controller: the summary counts it" grep -Eq '^  slurm_unreachable +1$' "$work/out2.txt"
scancel --user="$(id -un)" >/dev/null 2>&1
for _ in $(seq 1 150); do [ -z "$(squeue -h 2>/dev/null)" ] && break; sleep 0.2; done

# The controller comes back within the limit (14 s of 20). One job at a time (--slurm-nodes 1): the first
# ends while the controller is silent (read from its record), the second waits to be submitted
# until the controller answers again, then the run goes on as if nothing had happened.
mkdir -p "$work/corpus3"
cp "$work/corpus2/late_good.py" "$work/corpus3/"
cp "$hostile/good_linear.py" "$work/corpus3/quick_good.py"
"$turnkey" "$work"/corpus3/*.py -d "$work/cache3" --use-slurm --slurm-nodes 1 \
  --slurm-controller-timeout 20 --timeout 300 --iterations 5 > "$work/out3.txt" 2> "$work/err3.txt" &
tk=$!
for _ in $(seq 1 300); do
  squeue -h -t RUNNING -o %j 2>/dev/null | grep -q late_good && break
  sleep 0.2
done
kill -STOP "$ctld"
sleep 14
kill -CONT "$ctld"
for _ in $(seq 1 120); do kill -0 "$tk" 2>/dev/null || break; sleep 1; done
kill -0 "$tk" 2>/dev/null && kill "$tk"
wait "$tk"
code3=$?
grep -E "controller|Slurm job" "$work/err3.txt"
check "controller back: exit code 0, both inputs successful" \
  bash -c "test $code3 -eq 0 && grep -q '^status: \"successful\"' $work/cache3/inputs/late_good_*.yaml &&
           grep -q '^status: \"successful\"' $work/cache3/inputs/quick_good_*.yaml"
check "controller back: the first job's result was read from its record during the silence" \
  grep -q 'UNKNOWN' <(cat "$work"/cache3/inputs/late_good_*.yaml)
check "controller back: said so" grep -q "the controller answers again after" "$work/err3.txt"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed; Slurm logs:" >&2
  tail -n 20 "$work"/cluster/log/*.log >&2
  exit 1
fi
echo "all Slurm checks passed"
