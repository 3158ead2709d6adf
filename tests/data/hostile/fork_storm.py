# Every process forks as long as it can (at most 2**10 processes), then sleeps.
import time

import os


def note_pid(pid=None):
    folder = os.environ.get("HOSTILE_PID_DIR")
    if folder:
        with open(os.path.join(folder, "pids.txt"), "a") as f:
            f.write("%d\n" % (pid or os.getpid()))

note_pid()
for _ in range(10):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        note_pid()
time.sleep(600)
