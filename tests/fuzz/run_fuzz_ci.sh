#!/usr/bin/env bash
# The fuzz CTest's short run of one libFuzzer program (docs/reliability.md): a fixed seed and a
# fixed number of executions over the kept inputs, new inputs into a temporary folder (the kept
# ones stay as committed). Exit 77 (CTest: skipped, with the reason on one line) when the program
# is not built: scripts/setup-fuzz builds build-fuzz/ (scripts/test runs it).
#   run_fuzz_ci.sh RUNS PROGRAM KEPT_DIR...   (TURNKEY_FUZZ_RUNS, when set, replaces RUNS)
set -euo pipefail
runs="${TURNKEY_FUZZ_RUNS:-$1}"; program="$2"; shift 2
if [ ! -x "$program" ]; then
  echo "skipped: $program is not built (scripts/setup-fuzz installs clang and builds build-fuzz/)"
  exit 77
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export TMPDIR="$work"
mkdir "$work/new"
"$program" -seed=1 -runs="$runs" -timeout=20 -rss_limit_mb=2048 \
  -max_len=65536 -print_final_stats=1 -error_exitcode=1 -timeout_exitcode=1 \
  -artifact_prefix="$PWD/" "$work/new" "$@"
