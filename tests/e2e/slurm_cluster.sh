# A real one-node Slurm cluster for tests, started without systemd (docs/corpus_runs.md):
# munged as user munge, slurmctld and slurmd with a slurm.conf whose node line comes from
# `slurmd -C`, state and logs in a temp dir. Source this file, then:
#   slurm_start DIR   start the daemons, export SLURM_CONF, wait until the node is idle
#   slurm_stop        stop them again (by pid file); safe to call twice
# Needs root (slurmd runs jobs as their user; munged must run as munge).

slurm_have_binaries() {
  local b
  for b in munged slurmctld slurmd sbatch scontrol scancel sinfo; do
    command -v "$b" >/dev/null 2>&1 || [ -x "/usr/sbin/$b" ] || return 1
  done
}

slurm_start() {
  SLURM_TEST_DIR="$1"
  local d="$SLURM_TEST_DIR" node host
  mkdir -p "$d/state" "$d/spool" "$d/log"
  host="$(hostname -s)"
  node="$(slurmd -C | head -n 1)"
  # Our own munged (its own socket, pid and key copy) so a munged of the machine is left alone.
  mkdir -p "$d/munge"
  cp /etc/munge/munge.key "$d/munge/munge.key"
  chown -R munge:munge "$d/munge"
  chmod 0755 "$d/munge"
  chmod 0600 "$d/munge/munge.key"
  chmod 0755 "$d"
  runuser -u munge -- munged --key-file="$d/munge/munge.key" --socket="$d/munge/munge.socket" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" --seed-file="$d/munge/seed" \
    || return 1
  cat > "$d/slurm.conf" <<CONF
ClusterName=turnkeytest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$d/munge/munge.socket
CredType=cred/munge
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
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
$node State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF="$d/slurm.conf"
  slurmctld -f "$SLURM_CONF" || return 1
  slurmd -f "$SLURM_CONF" || return 1
  local i
  for i in $(seq 1 100); do
    if [ "$(sinfo -h -o %T 2>/dev/null | head -n 1)" = "idle" ]; then return 0; fi
    sleep 0.2
  done
  echo "slurm_start: the node did not become idle; see $d/log" >&2
  sinfo >&2 || true
  return 1
}

slurm_stop() {
  local d="${SLURM_TEST_DIR:-}" f pid i
  [ -n "$d" ] || return 0
  for f in "$d/slurmd.pid" "$d/slurmctld.pid" "$d/munge/munged.pid"; do
    [ -f "$f" ] || continue
    pid="$(cat "$f")"
    [ -n "$pid" ] || continue
    kill "$pid" 2>/dev/null || true
    for i in $(seq 1 50); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$f"
  done
}
