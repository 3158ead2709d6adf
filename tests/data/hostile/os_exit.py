# Runs its model, then leaves at once, skipping every cleanup.
import torch

torch.manual_seed(0)

import os


def note_pid(pid=None):
    folder = os.environ.get("HOSTILE_PID_DIR")
    if folder:
        with open(os.path.join(folder, "pids.txt"), "a") as f:
            f.write("%d\n" % (pid or os.getpid()))

note_pid()
model = torch.nn.Linear(4, 2)
model(torch.randn(1, 4))
os._exit(5)
