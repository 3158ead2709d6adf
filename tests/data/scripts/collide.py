"""A tiny model; the tests copy this file under names that sanitize alike."""
import torch

torch.manual_seed(0)
collide_model = torch.nn.Linear(2, 2)
collide_model(torch.rand(1, 2))
