# A well-behaved script: a tiny convolution.
import torch

torch.manual_seed(0)

model = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU())
model(torch.randn(1, 3, 8, 8))
