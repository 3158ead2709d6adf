"""A first model runs fine; a second one raises inside its forward (shape mismatch)."""
import torch

torch.manual_seed(0)
good_model = torch.nn.Linear(4, 2)
good_model(torch.rand(1, 4))
bad_model = torch.nn.Linear(5, 2)
bad_model(torch.rand(1, 4))
print("never printed")
