# Runs its model, then leaves at once, skipping every cleanup.
import torch

torch.manual_seed(0)

import os

from pids import note_pid

note_pid()
model = torch.nn.Linear(4, 2)
model(torch.randn(1, 4))
os._exit(5)
