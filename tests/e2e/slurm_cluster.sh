# Real Slurm clusters for tests, started without systemd (docs/corpus_runs.md): munged as user
# munge, slurmctld and slurmd with a slurm.conf, state and logs in a temp dir. Source this file,
# then either
#   slurm_start DIR        one node (this machine, its `slurmd -C` line); ports 16817/16818
# or
#   slurm_start_nodes DIR NODE...
#                          several nodes, each slurmd in its own network namespace on a bridge
#                          (`nsenter --net`: `ip netns exec` would remount /sys and hide the
#                          cgroup mounts slurmd needs), slurmctld on the host side of the
#                          bridge; ports 16827/16828. A NODE is a name (n1), or name:ro=PATH for
#                          a node whose slurmd (and so its jobs) sees PATH read-only (its own
#                          mount namespace). Partitions: `main` (default) with every node but
#                          the read-only ones, and those in $SLURM_EXTRA_PARTITIONS (lines of
#                          slurm.conf).
#                          SLURM_NETNS[name] is the node's namespace.
#   slurm_kill_node NAME   lose a node: kill every process in its namespace
#   slurm_restart_node NAME  start its slurmd again
# and
#   slurm_stop             stop everything (by pid file, then every process left in each
#                          namespace, then the namespaces and the bridge); safe to call twice.
# Both export SLURM_CONF and wait until every node is idle. Needs root (slurmd runs jobs as their
# user; munged must run as munge). Leftovers of a test that was killed (SIGKILL gives no trap) are
# removed by the next start: daemons through the registry below, namespaces and bridges by name
# (tkslurm-<pid>-<node>, tks<pid>br: the pid of the test's shell).

# The tests' own checks: check DESCRIPTION COMMAND... prints ok/FAIL and counts failures.
failures=0
check() {
  local what="$1"
  shift
  if "$@"; then
    echo "ok: $what"
  else
    echo "FAIL: $what" >&2
    failures=$((failures + 1))
  fi
}

declare -gA SLURM_NETNS=()
SLURM_TEST_DIR=""
SLURM_BRIDGE=""

slurm_have_binaries() {
  local b
  for b in munged slurmctld slurmd sbatch squeue scontrol scancel sinfo; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || return 1
  done
}

# Our own munged (its own socket, pid and key copy) so a munged of the machine is left alone.
slurm_start_munge() {
  local d="$1"
  mkdir -p "$d/munge"
  cp /etc/munge/munge.key "$d/munge/munge.key"
  chown -R munge:munge "$d/munge"
  chmod 0755 "$d/munge"
  chmod 0600 "$d/munge/munge.key"
  chmod 0755 "$d"
  runuser -u munge -- munged --key-file="$d/munge/munge.key" --socket="$d/munge/munge.socket" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" --seed-file="$d/munge/seed"
}

# The lines every test cluster shares; $1 dir, $2 SlurmctldHost, $3/$4 ports.
slurm_common_conf() {
  local d="$1"
  cat <<CONF
ClusterName=turnkeytest
SlurmctldHost=$2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$d/state
SlurmctldPidFile=$d/slurmctld.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmctldPort=$3
SlurmdPort=$4
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=300
KillWait=5
CONF
}

slurm_wait_idle() {  # slurm_wait_idle NODES: until sinfo shows that many nodes, all idle
  local i states
  for i in $(seq 1 150); do
    # One line per node and partition: count each node once.
    states="$(sinfo -h -N -o '%N %T' 2>/dev/null | sort -u | awk '{print $2}' | uniq -c |
              awk '{print $1, $2}')"
    if [ "$states" = "$1 idle" ]; then return 0; fi
    sleep 0.2
  done
  echo "slurm: the nodes did not become idle; see $SLURM_TEST_DIR/log" >&2
  sinfo -N >&2 || true
  return 1
}

slurm_start() {
  SLURM_TEST_DIR="$1"
  local d="$SLURM_TEST_DIR" node host
  mkdir -p "$d/state" "$d/spool" "$d/log"
  host="$(hostname -s)"
  node="$(slurmd -C | head -n 1)"
  slurm_sweep_stale
  slurm_register "$d"
  slurm_start_munge "$d" || return 1
  {
    slurm_common_conf "$d" "$host" 16817 16818
    cat <<CONF
SlurmdSpoolDir=$d/spool
SlurmdPidFile=$d/slurmd.pid
SlurmdLogFile=$d/log/slurmd.log
$node State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  } > "$d/slurm.conf"
  export SLURM_CONF="$d/slurm.conf"
  slurmctld -f "$SLURM_CONF" || return 1
  slurmd -f "$SLURM_CONF" || return 1
  slurm_wait_idle 1
}

# Each running test cluster: $SLURM_REGISTRY/<pid of the test's shell> holds its dir, so that
# the next test can stop what a killed test (SIGKILL: no trap) left running.
SLURM_REGISTRY=/run/turnkey-slurm-tests

slurm_register() {
  mkdir -p "$SLURM_REGISTRY" && echo "$1" > "$SLURM_REGISTRY/$$"
}

# Daemons, namespaces and bridges of earlier tests whose shell is gone (killed without its trap).
slurm_sweep_stale() {
  local ns owner br f
  for f in "$SLURM_REGISTRY"/*; do
    [ -f "$f" ] || continue
    owner="$(basename "$f")"
    if ! kill -0 "$owner" 2>/dev/null; then
      slurm_stop_daemons "$(cat "$f")"
      rm -f "$f"
    fi
  done
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E '^tkslurm-[0-9]+-'); do
    owner="${ns#tkslurm-}"
    owner="${owner%%-*}"
    if ! kill -0 "$owner" 2>/dev/null; then
      ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
      ip netns del "$ns" 2>/dev/null
    fi
  done
  for br in $(ip -o link show type bridge 2>/dev/null | awk -F': ' '{print $2}' |
              grep -E '^tks[0-9]+br$'); do
    owner="${br#tks}"
    owner="${owner%br}"
    kill -0 "$owner" 2>/dev/null || ip link del "$br" 2>/dev/null
  done
}

slurm_start_nodes() {
  SLURM_TEST_DIR="$1"
  shift
  local d="$SLURM_TEST_DIR" net="" spec name ro i ns veth addr main
  mkdir -p "$d/state" "$d/log"
  slurm_sweep_stale
  slurm_register "$d"
  # A /24 that no interface of this machine uses yet.
  for i in $(seq $(( $$ % 200 + 20 )) 254) $(seq 20 254); do
    if ! ip -4 -o addr show | grep -q " 10\.213\.$i\."; then net="10.213.$i"; break; fi
  done
  [ -n "$net" ] || { echo "slurm: no free 10.213.x.0/24 subnet" >&2; return 1; }
  SLURM_BRIDGE="tks$$br"
  ip link add "$SLURM_BRIDGE" type bridge || return 1
  ip addr add "$net.1/24" dev "$SLURM_BRIDGE" || return 1
  ip link set "$SLURM_BRIDGE" up || return 1
  slurm_start_munge "$d" || return 1
  {
    slurm_common_conf "$d" "$(hostname -s)($net.1)" 16827 16828
    cat <<CONF
SlurmdSpoolDir=$d/spool/%n
SlurmdPidFile=$d/slurmd-%n.pid
SlurmdLogFile=$d/log/slurmd-%n.log
# A node whose slurmd is gone is noticed in seconds (defaults: 300 s and 10 s).
SlurmdTimeout=2
MessageTimeout=2
CONF
    i=0
    for spec in "$@"; do
      i=$((i + 1))
      echo "NodeName=${spec%%:*} NodeAddr=$net.$((10 + i)) CPUs=$(nproc) RealMemory=1000 State=UNKNOWN"
    done
    main=""
    for spec in "$@"; do
      case "$spec" in *:ro=*) ;; *) main="$main${main:+,}${spec%%:*}" ;; esac
    done
    echo "PartitionName=main Nodes=$main Default=YES MaxTime=INFINITE State=UP"
    printf '%s\n' "${SLURM_EXTRA_PARTITIONS:-}"
  } > "$d/slurm.conf"
  export SLURM_CONF="$d/slurm.conf"
  slurmctld -f "$SLURM_CONF" || return 1
  i=0
  for spec in "$@"; do
    i=$((i + 1))
    name="${spec%%:*}"
    ro=""
    case "$spec" in *:ro=*) ro="${spec#*:ro=}" ;; esac
    ns="tkslurm-$$-$name"
    veth="tks$$v$i"
    addr="$net.$((10 + i))"
    ip netns add "$ns" || return 1
    SLURM_NETNS[$name]="$ns"
    ip link add "$veth" type veth peer name eth0 netns "$ns" || return 1
    ip link set "$veth" master "$SLURM_BRIDGE" up || return 1
    ip -n "$ns" addr add "$addr/24" dev eth0 || return 1
    ip -n "$ns" link set eth0 up || return 1
    ip -n "$ns" link set lo up || return 1
    mkdir -p "$d/spool/$name"
    if [ -n "$ro" ]; then
      mkdir -p "$ro"
      nsenter --net="/run/netns/$ns" unshare --mount --propagation private \
        sh -c 'mount --bind -o ro "$1" "$1" && exec slurmd -f "$2" -N "$3"' sh "$ro" \
        "$SLURM_CONF" "$name" || return 1
    else
      nsenter --net="/run/netns/$ns" slurmd -f "$SLURM_CONF" -N "$name" || return 1
    fi
  done
  slurm_wait_idle "$#"
}

# Kills every process of a node (slurmd, slurmstepd, the job and all it started): the node is
# lost, as when a machine goes down.
slurm_kill_node() {
  local ns="${SLURM_NETNS[$1]}" i pids
  [ -n "$ns" ] || return 1
  rm -f "$SLURM_TEST_DIR/slurmd-$1.pid"
  for i in $(seq 1 50); do
    pids="$(ip netns pids "$ns" 2>/dev/null)"
    [ -n "$pids" ] || return 0
    kill -9 $pids 2>/dev/null
    sleep 0.05
  done
  return 1
}

# Starts a killed node's slurmd again (in its namespace); waits until every node is idle.
slurm_restart_node() {
  local ns="${SLURM_NETNS[$1]}"
  [ -n "$ns" ] || return 1
  nsenter --net="/run/netns/$ns" slurmd -f "$SLURM_CONF" -N "$1" || return 1
  slurm_wait_idle "$(sinfo -h -N -o %N | sort -u | wc -l)"
}

# Stops the daemons whose pid files are in cluster dir $1.
slurm_stop_daemons() {
  local d="$1" f pid i
  for f in "$d"/slurmd*.pid "$d/slurmctld.pid" "$d/munge/munged.pid"; do
    [ -f "$f" ] || continue
    pid="$(cat "$f")"
    # Only the daemon the file names: a stale file's pid may belong to another process now.
    case "$(cat "/proc/$pid/comm" 2>/dev/null)" in
      slurmd | slurmctld | munged) ;;
      *) rm -f "$f"; continue ;;
    esac
    kill "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}

slurm_stop() {
  local d="${SLURM_TEST_DIR:-}" pid i ns
  [ -n "$d" ] || return 0
  slurm_stop_daemons "$d"
  # Whatever a node still runs (a job's processes whose slurmd is gone), then the node.
  for ns in "${SLURM_NETNS[@]}"; do
    for i in $(seq 1 50); do
      pid="$(ip netns pids "$ns" 2>/dev/null)"
      [ -n "$pid" ] || break
      kill -9 $pid 2>/dev/null
      sleep 0.05
    done
    ip netns del "$ns" 2>/dev/null
  done
  SLURM_NETNS=()
  if [ -n "$SLURM_BRIDGE" ]; then
    ip link del "$SLURM_BRIDGE" 2>/dev/null
    SLURM_BRIDGE=""
  fi
  rm -f "$SLURM_REGISTRY/$$"
}
