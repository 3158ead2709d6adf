"""Calls a model, then leaves with os._exit(0): no atexit, no finally, no SystemExit."""
import os
import sys

import torch

torch.manual_seed(0)
hard_model = torch.nn.Linear(4, 2)
hard_model(torch.rand(1, 4))
print("hard_exit: leaving")
sys.stdout.flush()
os._exit(0)
