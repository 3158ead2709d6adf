# Two models; the script's process writes when it ends (time.time(), into the file EXIT_NOTE
# names), for the test of when turnkey ends it (test_fixed_costs.cpp).
import atexit
import os
import time

import torch


def note_end():
    with open(os.environ["EXIT_NOTE"], "w") as f:
        f.write("%.6f" % time.time())


atexit.register(note_end)
torch.manual_seed(0)
first = torch.nn.Linear(8, 4)
second = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU())
x = torch.rand(1, 8)
first(x)
second(x)
