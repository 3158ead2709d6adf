# A well-behaved script: one tiny model, called once.
import torch

torch.manual_seed(0)

model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.ReLU())
model(torch.randn(1, 16))
