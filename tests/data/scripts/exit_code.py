"""Calls a model, then sys.exit(3)."""
import sys

import torch

torch.manual_seed(0)
exiting_model = torch.nn.Linear(4, 2)
exiting_model(torch.rand(1, 4))
sys.exit(3)
