# Starts two processes that outlive it: a plain child and a daemon in its own session.
import subprocess

import torch

torch.manual_seed(0)

import os


def note_pid(pid=None):
    folder = os.environ.get("HOSTILE_PID_DIR")
    if folder:
        with open(os.path.join(folder, "pids.txt"), "a") as f:
            f.write("%d\n" % (pid or os.getpid()))

note_pid()
child = subprocess.Popen(["sleep", "300"])
note_pid(child.pid)
daemon = subprocess.Popen(["sleep", "301"], start_new_session=True)
note_pid(daemon.pid)
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh())
model(torch.randn(2, 8))
