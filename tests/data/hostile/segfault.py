# Reads address 0: the interpreter dies with SIGSEGV.
import ctypes

import os


def note_pid(pid=None):
    folder = os.environ.get("HOSTILE_PID_DIR")
    if folder:
        with open(os.path.join(folder, "pids.txt"), "a") as f:
            f.write("%d\n" % (pid or os.getpid()))

note_pid()
ctypes.string_at(0)
