#!/usr/bin/env bash
# End-to-end: --use-slurm on a real multi-node Slurm cluster started here (slurm_cluster.sh:
# each slurmd in its own network namespace on a bridge, slurmctld on the host side) and stopped
# afterwards, whatever happens. Nodes n1 and n2 (partition main), n3 whose view of the cache dir
# is read-only (partitions mixed = n2,n3 and ro = n3).
#   A  four small scripts and a slow one on n1+n2; the node running the slow one is killed
#      mid-run (every process of it: slurmd, slurmstepd, the job): inputs run on both nodes, no
#      node ever runs two turnkey jobs at once, the lost input runs again on the other node, every
#      input has its result, nothing is left running; benchmarks record the node's CPUs.
#   B  the killed node back; one build written by two jobs on two nodes at once (a.py and
#      a.py::HASH): the build lock holds across nodes, the result history keeps both runs.
#   C  two inputs on n2+n3: the job on n3 cannot create its files in the cache dir, n3 is named
#      once and excluded, the input runs on n2.
#   D  one input on n3 alone: it ends node_failed, saying why.
#   E  --slurm-nodes 1 with build-only jobs: never more than one job in the queue.
#   F  --slurm-exclusive never: a job given one CPU benchmarks with one thread (the thread
#      default follows SLURM_CPUS_ON_NODE), recorded with the result.
# Skips (exit 77) when the binaries are missing, when not root, or when network namespaces
# cannot be made here.
#   test_slurm_nodes.sh TURNKEY_BINARY SOURCE_DIR
set -uo pipefail
turnkey="$1"
src="$2"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/slurm_cluster.sh"
py=/usr/bin/python3

skip() {
  echo "SKIP: $*"
  exit 77
}
slurm_have_binaries || skip "Slurm binaries missing (munged, slurmctld, slurmd, sbatch, squeue," \
  "scontrol, scancel, sinfo); install slurm-wlm and munge (scripts/setup does)"
[ "$(id -u)" -eq 0 ] || skip "a multi-node cluster needs root (network namespaces, slurmd, munged)"
for b in ip nsenter unshare mount; do
  command -v "$b" >/dev/null 2>&1 || skip "$b is missing (iproute2, util-linux)"
done
probe="tkslurm-$$-probe"
if ! ip netns add "$probe" 2>/dev/null; then
  skip "cannot create network namespaces here (ip netns add failed)"
fi
ip netns del "$probe"

work="$(mktemp -d)"
chmod 0755 "$work"
monitor=""
tk=""
cleanup() {
  [ -n "$tk" ] && kill -9 "$tk" 2>/dev/null
  [ -n "$monitor" ] && kill "$monitor" 2>/dev/null && wait "$monitor" 2>/dev/null
  scancel --name="$(squeue -h -o %j 2>/dev/null | grep '^turnkey-' | sort -u | paste -sd,)" \
    >/dev/null 2>&1 || true
  slurm_stop
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# A "%j" in the path: sbatch would read it as the job id if turnkey did not escape it.
cache="$work/cache%j"
mkdir -p "$cache" "$work/pids" "$work/corpus"
t_start=$(date +%s)
SLURM_EXTRA_PARTITIONS="PartitionName=mixed Nodes=n2,n3 MaxTime=INFINITE State=UP
PartitionName=ro Nodes=n3 MaxTime=INFINITE State=UP"
if ! slurm_start_nodes "$work/cluster" n1 n2 "n3:ro=$cache"; then
  tail -n 20 "$work"/cluster/log/*.log >&2
  skip "could not start a Slurm cluster in network namespaces here (logs above)"
fi
echo "Slurm is up in $(( $(date +%s) - t_start )) s: $(sinfo -h -o '%P %D %T' | paste -sd';')"
cpus="$(nproc)"

# Watches the queue every 0.1 s: a node listed twice among running turnkey jobs is a node
# running two at once; the number of turnkey jobs in the queue is kept for the --slurm-nodes check.
(
  while kill -0 $$ 2>/dev/null; do
    squeue -h -t R,CG -o '%N %j' 2>/dev/null | awk '$2 ~ /^turnkey-/ {print $1}' | sort |
      uniq -d | sed "s/^/$(date +%T.%N) two jobs on /" >> "$work/overlaps.txt"
    squeue -h -o '%j' 2>/dev/null | grep -c '^turnkey-' >> "$work/queued.txt"
    sleep 0.1
  done
) &
monitor=$!

for i in a:16:8 b:24:8 c:32:4 d:8:8; do
  IFS=: read -r name nin nout <<< "$i"
  cat > "$work/corpus/${name}_linear.py" <<PY
import os
import time
import torch


class SlowLinear(torch.nn.Linear):
    # TK_SLOW_FORWARD_S makes each call (the export's trace too) hold a build lock long enough
    # for a second job to meet it.
    def forward(self, x):
        time.sleep(float(os.environ.get("TK_SLOW_FORWARD_S", "0")))
        return super().forward(x)


with open(os.path.join(os.environ["TK_PID_DIR"], "pids.txt"), "a") as f:
    f.write("%d\n" % os.getpid())
torch.manual_seed(0)
model = SlowLinear($nin, $nout)
model(torch.randn(1, $nin))
PY
done
cat > "$work/corpus/e_slow.py" <<'PY'
import os
import time
import torch

with open(os.path.join(os.environ["TK_PID_DIR"], "pids.txt"), "a") as f:
    f.write("%d\n" % os.getpid())
with open(os.path.join(os.environ["TK_PID_DIR"], "slow_started"), "a") as f:
    f.write("%s\n" % os.environ.get("SLURMD_NODENAME", "?"))
time.sleep(6)
model = torch.nn.Linear(12, 6)
model(torch.randn(1, 12))
PY
# turnkey dies with this shell, even when it is killed (SIGKILL runs no trap).
tk_run() { setpriv --pdeathsig KILL "$turnkey" "$@"; }
export TK_PID_DIR="$work/pids"
export TURNKEY_BUILD_MONITOR=False
records() { cat "$cache"/inputs/"$1"_*.yaml 2>/dev/null; }

# ---- A: five inputs on two nodes; the slow one's node is killed mid-run --------------------------
t0=$(date +%s)
setpriv --pdeathsig KILL "$turnkey" "$work"/corpus/*.py -d "$cache" --use-slurm --timeout 60 --iterations 5 \
  > "$work/a_out.txt" 2> "$work/a_err.txt" &
tk=$!
killed=""
for _ in $(seq 1 900); do
  if [ -s "$work/pids/slow_started" ]; then
    killed="$(head -n 1 "$work/pids/slow_started")"
    sleep 1
    slurm_kill_node "$killed" || echo "could not kill every process of $killed" >&2
    echo "killed node $killed at $(( $(date +%s) - t0 )) s"
    break
  fi
  kill -0 "$tk" 2>/dev/null || break
  sleep 0.1
done
wait "$tk"
code=$?
tk=""
echo "A: turnkey --use-slurm finished in $(( $(date +%s) - t0 )) s with exit code $code"
tail -n 12 "$work/a_out.txt"
cat "$work/a_err.txt"
other=n1
[ "$killed" = n1 ] && other=n2
check "A: the slow input started and its node ($killed) was killed" test -n "$killed"
check "A: exit code 0 (every input has its result)" test "$code" -eq 0
check "A: summary of 5 inputs, all successful" \
  bash -c "grep -q 'Corpus summary: 5 inputs' $work/a_out.txt && grep -Eq '^  successful +5$' $work/a_out.txt"
check "A: the lost job is reported and run again" \
  grep -q "e_slow.py: Slurm job [0-9]* on node $killed ended NODE_FAIL: the node was lost; running it again elsewhere" "$work/a_err.txt"
# The checks that need the records' structure read them with Python's YAML.
$py - "$cache" "$killed" "$other" "$cpus" > "$work/a_checks.txt" 2>&1 <<'PY'
import glob, os, sys, yaml
cache, killed, other, cpus = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
problems = []
records = {}
for path in glob.glob(os.path.join(cache, "inputs", "*.yaml")):
    r = yaml.safe_load(open(path))
    records[os.path.basename(r["input"])] = r
nodes = set()
windows = []
for name, r in sorted(records.items()):
    a = r.get("allocation", {})
    if r["status"] != "successful":
        problems.append(f"{name}: status {r['status']}")
    if a.get("slurm_job_id") != r["slurm_jobs"][-1]["job_id"]:
        problems.append(f"{name}: allocation job {a.get('slurm_job_id')} is not its last job")
    nodes.add(a.get("slurm_node"))
    windows.append((a.get("slurm_node"), a.get("started"), a.get("finished"), name))
    for b in r.get("builds", []):
        stats = yaml.safe_load(open(os.path.join(cache, b["build"], "turnkey_stats.yaml")))
        for res in stats.get("results", []):
            env = res.get("environment", {})
            if env.get("slurm_node") != a.get("slurm_node"):
                problems.append(f"{name}: result measured on {env.get('slurm_node')}")
            if env.get("slurm_cpus_on_node") != cpus or a.get("slurm_cpus_on_node") != cpus:
                problems.append(f"{name}: its job held {env.get('slurm_cpus_on_node')} CPUs "
                                f"of the node's {cpus} (not the whole node)")
            if res.get("threads") != env.get("default_threads") or len(env.get("usable_cpus", [])) != cpus:
                problems.append(f"{name}: {res.get('threads')} threads on CPUs "
                                f"{env.get('usable_cpus')}, default {env.get('default_threads')}")
slow = records.get("e_slow.py", {})
jobs = slow.get("slurm_jobs", [])
if [(j.get("node"), j.get("state")) for j in jobs] != [(killed, "NODE_FAIL"), (other, "COMPLETED")]:
    problems.append(f"e_slow.py: jobs {jobs}, expected NODE_FAIL on {killed} then COMPLETED on {other}")
for name, r in records.items():
    if name != "e_slow.py" and len(r.get("slurm_jobs", [])) != 1:
        problems.append(f"{name}: {len(r.get('slurm_jobs', []))} jobs, expected 1")
if nodes != {"n1", "n2"}:
    problems.append(f"results came from {sorted(nodes)}, expected both n1 and n2")
# Two jobs of one node never ran at once (each job's own start and end, ms).
windows.sort()
for x, y in zip(windows, windows[1:]):
    if x[0] == y[0] and y[1] < x[2]:
        problems.append(f"{x[3]} and {y[3]} ran at once on {x[0]}: {x[1:3]} / {y[1:3]}")
print(f"{len(records)} records; results from {sorted(nodes)}")
for p in problems:
    print("problem:", p)
sys.exit(1 if problems or len(records) != 5 else 0)
PY
a_ok=$?
cat "$work/a_checks.txt"
check "A: records: all successful, results from both nodes, the slow input NODE_FAIL then
    COMPLETED, each result measured on its job's node with all its CPUs, no two jobs of a node
    at once (their own start and end times)" test "$a_ok" -eq 0
check "A: no node ran two turnkey jobs at once (queue watched every 0.1 s)" \
  test ! -s "$work/overlaps.txt"
check "A: no job left in the queue" test -z "$(squeue -h 2>/dev/null)"
check "A: nothing left in the killed node" test -z "$(ip netns pids "${SLURM_NETNS[$killed]}")"
# A killed process may stay a zombie for a moment until its reaper gets to it: that is gone too.
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" != "Z" ]; }
left=""
for p in $(cat "$work/pids/pids.txt" 2>/dev/null); do
  if alive "$p"; then left="$left $p:$(tr '\0' ' ' < /proc/$p/cmdline 2>/dev/null)"; fi
done
check "A: no process of the corpus left running${left:+ (left:$left)}" test -z "$left"
tk_run cache list -d "$cache" > "$work/a_list.txt" 2>&1
check "A: the cache the nodes shared lists 5 successful builds" \
  test "$(grep -c successful "$work/a_list.txt")" -eq 5

# ---- B: one build, two jobs on two nodes at once -------------------------------------------------
slurm_restart_node "$killed" || echo "could not restart $killed" >&2
build="$(basename "$(ls -d "$cache"/a_linear_*/ | head -n 1)")"
hash="${build##*_}"
t0=$(date +%s)
# The two jobs start up to a second apart; a 3 s forward keeps the first one's build lock held
# when the second reaches it (with a 5-iteration build alone, the first could be done by then).
TK_SLOW_FORWARD_S=3 tk_run "$work/corpus/a_linear.py" "$work/corpus/a_linear.py::$hash" \
  -d "$cache" --use-slurm --rebuild always --timeout 60 --iterations 5 \
  > "$work/b_out.txt" 2> "$work/b_err.txt"
code=$?
echo "B: finished in $(( $(date +%s) - t0 )) s with exit code $code"
cat "$work/b_err.txt"
check "B: both inputs successful" test "$code" -eq 0
$py - "$cache" "$build" > "$work/b_checks.txt" 2>&1 <<'PY'
import glob, os, sys, yaml
cache, build = sys.argv[1], sys.argv[2]
problems = []
recs = [yaml.safe_load(open(p)) for p in glob.glob(os.path.join(cache, "inputs", "a_linear_*.yaml"))]
nodes = sorted(r["allocation"]["slurm_node"] for r in recs)
if nodes != ["n1", "n2"]:
    problems.append(f"the two jobs ran on {nodes}, expected n1 and n2")
state = yaml.safe_load(open(os.path.join(cache, build, build + "_state.yaml")))
if state["build_status"] != "successful":
    problems.append(f"build_status {state['build_status']}")
stats = yaml.safe_load(open(os.path.join(cache, build, "turnkey_stats.yaml")))
results = stats.get("results", [])
history = results[0].get("history", []) if len(results) == 1 else None
if history is None or len(history) != 2:
    problems.append(f"expected one result with 2 earlier runs (A, then one of B), got {results}")
print("jobs on", nodes, "; history of", 0 if history is None else len(history), "earlier runs")
for p in problems:
    print("problem:", p)
sys.exit(1 if problems else 0)
PY
b_ok=$?
cat "$work/b_checks.txt"
check "B: the jobs ran on both nodes, the build is intact and its history kept every run" \
  test "$b_ok" -eq 0
check "B: one job waited for the other's build lock" \
  grep -q "waiting for another turnkey process building $build" "$cache"/inputs/a_linear_*.log

# ---- C: a node that cannot write the cache dir ---------------------------------------------------
t0=$(date +%s)
tk_run "$work/corpus/b_linear.py" "$work/corpus/c_linear.py" -d "$cache" --use-slurm \
  --slurm-partition mixed --rebuild always --timeout 60 --iterations 5 \
  > "$work/c_out.txt" 2> "$work/c_err.txt"
code=$?
echo "C: finished in $(( $(date +%s) - t0 )) s with exit code $code"
cat "$work/c_err.txt"
check "C: both inputs successful (the one sent to n3 ran again on n2)" test "$code" -eq 0
check "C: n3 named once as unable to use the cache dir" \
  test "$(grep -c "node n3 cannot create files in the cache dir $cache" "$work/c_err.txt")" -eq 1
check "C: the input's record keeps the job n3 could not start" \
  bash -c "cat $cache/inputs/b_linear_*.yaml $cache/inputs/c_linear_*.yaml | grep -q 'reason: \"*JobLaunchFailure'"

# ---- D: no node left that can write the cache dir: node_failed -----------------------------------
tk_run "$work/corpus/d_linear.py" -d "$cache" --use-slurm --slurm-partition ro \
  --rebuild always --timeout 60 > "$work/d_out.txt" 2> "$work/d_err.txt"
code=$?
cat "$work/d_err.txt"
check "D: exit code 1" test "$code" -eq 1
check "D: status node_failed, saying why" \
  bash -c "grep -q '^status: \"node_failed\"' $cache/inputs/d_linear_*.yaml &&
           grep -q 'could not start on node n3' $cache/inputs/d_linear_*.yaml"
check "D: the summary counts it" grep -Eq '^  node_failed +1$' "$work/d_out.txt"
# A rerun runs it again (it never had a fair run), without --retry-failed.
tk_run "$work/corpus/d_linear.py" -d "$cache" --use-slurm --timeout 60 --iterations 5 \
  > "$work/d2_out.txt" 2> "$work/d2_err.txt"
code=$?
check "D: a rerun runs the node_failed input again, on a node that can serve it" \
  bash -c "test $code -eq 0 && ! grep -q 'earlier run' $work/d2_err.txt &&
           grep -q '^status: \"successful\"' $cache/inputs/d_linear_*.yaml"

# The job's own check, behind Slurm's: a job that started but cannot write the cache dir (here a
# read-only view of it, in a mount namespace of its own) says so and exits 3, which turnkey reads
# as "this node cannot serve" (tests/unit/test_slurm_jobs.cpp).
request="$(ls "$cache"/inputs/requests/*.json | head -n 1)"
unshare --mount --propagation private sh -c 'mount --bind -o ro "$1" "$1" && exec "$2" __isolate \
  --request "$3" --item "{\"given\": \"$4\", \"path\": \"$4\", \"hashes\": []}"' sh \
  "$cache" "$turnkey" "$request" "$work/corpus/d_linear.py" > /dev/null 2> "$work/ro.txt"
code=$?
check "a job whose node cannot write the cache dir: one line, exit 3" \
  bash -c "test $code -eq 3 && test \$(wc -l < $work/ro.txt) -eq 1 &&
           grep -q 'cannot write the cache dir $cache: Read-only file system' $work/ro.txt"

# ---- E: --slurm-nodes 1 ------------------------------------------------------------------------
: > "$work/queued.txt"
t0=$(date +%s)
tk_run "$work/corpus/b_linear.py" "$work/corpus/c_linear.py" "$work/corpus/d_linear.py" \
  -d "$cache" --use-slurm --slurm-nodes 1 --build-only --rebuild always --timeout 60 \
  > "$work/e_out.txt" 2> "$work/e_err.txt"
code=$?
echo "E: finished in $(( $(date +%s) - t0 )) s with exit code $code"
check "E: three build-only inputs successful" test "$code" -eq 0
check "E: never more than one job in the queue (most seen: $(sort -n "$work/queued.txt" | tail -n 1))" \
  test "$(sort -n "$work/queued.txt" | tail -n 1)" -le 1

# ---- F: a job that holds one CPU of a node benchmarks with one thread -----------------------------
tk_run "$work/corpus/b_linear.py" -d "$cache" --use-slurm --slurm-exclusive never --rebuild always \
  --timeout 60 --iterations 5 --json > "$work/f_out.txt" 2> "$work/f_err.txt"
code=$?
$py - "$cache" "$work/f_out.txt" > "$work/f_checks.txt" 2>&1 <<'PY'
import glob, json, os, sys, yaml
cache = sys.argv[1]
# --json: the input's builds come from the record its job wrote on the node.
def inputs(doc):
    if isinstance(doc, dict):
        if str(doc.get("input", "")).endswith("b_linear.py"):
            yield doc
        for v in doc.values():
            yield from inputs(v)
    elif isinstance(doc, list):
        for v in doc:
            yield from inputs(v)
found = list(inputs(json.load(open(sys.argv[2]))))
print("--json inputs:", found)
if len(found) != 1 or not found[0].get("builds"):
    sys.exit(1)
record = yaml.safe_load(open(glob.glob(os.path.join(cache, "inputs", "b_linear_*.yaml"))[0]))
build = record["builds"][0]["build"]
stats = yaml.safe_load(open(os.path.join(cache, build, "turnkey_stats.yaml")))
one = [r for r in stats["results"] if r["environment"].get("slurm_job_id") == record["allocation"]["slurm_job_id"]]
print("allocation", record["allocation"], "; results of this job:",
      [(r["threads"], r["environment"].get("slurm_cpus_on_node"), r["environment"].get("default_threads_basis")) for r in one])
ok = (record["allocation"].get("slurm_cpus_on_node") == 1 and len(one) == 1 and one[0]["threads"] == 1
      and one[0]["environment"].get("slurm_cpus_on_node") == 1
      and "Slurm" in one[0]["environment"].get("default_threads_basis", ""))
sys.exit(0 if ok else 1)
PY
f_ok=$?
cat "$work/f_checks.txt"
check "F: a job given 1 CPU (--slurm-exclusive never) benchmarks with 1 thread, saying why; --json names its build" \
  bash -c "test $code -eq 0 && test $f_ok -eq 0"

# ---- options Slurm refuses, options without --use-slurm ----------------------------------------
tk_run "$work/corpus/d_linear.py" -d "$cache" --use-slurm --slurm-partition nowhere \
  > /dev/null 2> "$work/bad.txt"
code=$?
check "a partition Slurm does not know: usage error before any job (exit 2)" \
  bash -c "test $code -eq 2 && grep -q 'Slurm refuses jobs of this run (sbatch .*--partition nowhere): .*nvalid partition' $work/bad.txt"
tk_run "$work/corpus/d_linear.py" -d "$cache" --slurm-nodes 2 > /dev/null 2> "$work/bad.txt"
code=$?
check "--slurm-nodes without --use-slurm: usage error" \
  bash -c "test $code -eq 2 && grep -q -- '--slurm-nodes needs --use-slurm' $work/bad.txt"

echo "whole test: $(( $(date +%s) - t_start )) s"
if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed; Slurm logs:" >&2
  tail -n 30 "$work"/cluster/log/*.log >&2
  exit 1
fi
echo "all multi-node Slurm checks passed"
