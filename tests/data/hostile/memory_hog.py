# Allocates (and touches) memory until something stops it.

from pids import note_pid

note_pid()
chunks = []
while True:
    chunks.append(b"x" * (32 << 20))
