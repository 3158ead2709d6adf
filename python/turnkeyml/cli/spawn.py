"""`turnkey.cli.spawn.DEFAULT_TIMEOUT_SECONDS`, as the reference tool's documents name it: the
per-input timeout of --process-isolation and --use-slurm runs when neither --timeout nor
TURNKEY_TIMEOUT_SECONDS is given (docs/corpus_runs.md; the C++ core holds the same default)."""

DEFAULT_TIMEOUT_SECONDS = 3600
