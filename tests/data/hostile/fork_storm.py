# Every process forks as long as it can (at most 2**10 processes), then sleeps.
import time

import os

from pids import note_pid

note_pid()
for _ in range(10):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        note_pid()
time.sleep(600)
