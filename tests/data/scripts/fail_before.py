"""Raises before calling any model."""
import torch

torch.manual_seed(0)
model = torch.nn.Linear(2, 2)
raise RuntimeError("fail_before: broken configuration")
