"""Calls a model, then dies from a signal (as a crash in native code would): the model found so
far is still reported; it cannot be built, since its process is gone."""
import os
import signal

import torch

torch.manual_seed(0)
doomed = torch.nn.Linear(4, 2)
doomed(torch.rand(1, 4))
print("killed: about to die", flush=True)
os.kill(os.getpid(), signal.SIGKILL)
