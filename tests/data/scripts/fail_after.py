"""Calls one model, then raises: the model is still reported (and built)."""
import torch

torch.manual_seed(0)
found_model = torch.nn.Linear(4, 2)
found_model(torch.rand(1, 4))
print("fail_after: about to fail")
ratio = 1 / 0
