# Three children of 450 MB each: no single process is large, together they are.
import time

import os


def note_pid(pid=None):
    folder = os.environ.get("HOSTILE_PID_DIR")
    if folder:
        with open(os.path.join(folder, "pids.txt"), "a") as f:
            f.write("%d\n" % (pid or os.getpid()))

note_pid()
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        note_pid()
        block = b"x" * (450 << 20)
        time.sleep(600)
        os._exit(0)
time.sleep(600)
