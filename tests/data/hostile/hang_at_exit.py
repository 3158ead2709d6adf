# Its model runs, then the process never exits: an atexit handler sleeps and SIGTERM is ignored.
import atexit
import os
import signal
import time

import torch


def note_pid(pid=None):
    folder = os.environ.get("HOSTILE_PID_DIR")
    if folder:
        with open(os.path.join(folder, "pids.txt"), "a") as f:
            f.write("%d\n" % (pid or os.getpid()))

note_pid()
signal.signal(signal.SIGTERM, signal.SIG_IGN)
atexit.register(lambda: time.sleep(100000))
model = torch.nn.Linear(4, 2)
model(torch.ones(1, 4))
