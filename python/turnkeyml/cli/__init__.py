"""Names the reference tool's documents give under `turnkey.cli` (spawn.DEFAULT_TIMEOUT_SECONDS).
turnkey's command line itself is C++ (src/cli/)."""
