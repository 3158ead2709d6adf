#!/usr/bin/env bash
# The overhead gap on nvidia, taken apart in one device call (docs/gpu.md, "The gap on
# resnet50"): GPU clocks logged throughout; gap_probe.py (bare loop and turnkey's own loop
# interleaved in one process, eager and compiled); then turnkey and the bare loop alternated as
# separate processes, each under runnable.py (which threads compete with them). From the
# repository root with the pack made (bench/device-check pack):
#   bash bench/device_check/gap.sh [SCRIPT]      (default bench/device_check/resnet50.py)
# Writes to $OUT (or /tmp/gap): gap.log, clocks.csv, cpu.txt, the turnkey runs' stats.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
out="${OUT:-/tmp/gap}"
mkdir -p "$out"
script="${1:-$root/bench/device_check/resnet50.py}"
py="${TURNKEY_PYTHON:-python3}"
here="$root/bench/device_check"
log="$out/gap.log"
export HF_HUB_OFFLINE=1
step() { echo "==== $*" | tee -a "$log"; }

{ lscpu | head -20; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>&1;
  nvidia-smi -q -d CLOCK,PERFORMANCE 2>&1 | head -60; } > "$out/cpu.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,pstate,utilization.gpu \
  --format=csv -lms 100 > "$out/clocks.csv" 2>&1 &
clocks=$!
trap 'kill $clocks 2>/dev/null' EXIT

step "gap_probe eager"
timeout 120 "$py" "$here/gap_probe.py" "$script" --rounds 4 2>&1 | grep -v Warning | tee -a "$log"
step "gap_probe compiled"
timeout 150 "$py" "$here/gap_probe.py" "$script" --compile --rounds 3 2>&1 | grep "GAP\|Error" | tee -a "$log"
for round in 1 2; do
  step "turnkey torch-eager, round $round"
  timeout 90 "$py" "$here/runnable.py" -- "$root/.gpu-pack/turnkey" "$script" \
    --runtime torch-eager --device nvidia --iterations 1000 -d "$out/cache$round" \
    > "$out/turnkey$round.log" 2>&1
  grep -E "RUNNABLE|Latency \(ms\)|Warning|Status" "$out/turnkey$round.log" | tee -a "$log"
  step "bare loop, round $round"
  timeout 90 "$py" "$here/runnable.py" -- "$py" "$here/bare_loop.py" "$script" --iterations 1000 \
    2>&1 | grep -E "RUNNABLE|BARE_LOOP" | tee -a "$log"
done
find "$out"/cache* -name 'turnkey_stats.yaml' -exec cat {} + > "$out/stats.yaml" 2>/dev/null
find "$out"/cache* -name 'samples_*' -exec cp {} "$out/" \; 2>/dev/null
rm -rf "$out"/cache*
step "done"
