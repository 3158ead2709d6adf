"""One model called three times in a loop with the same input signature: one entry, executed 3x."""
import torch

torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
for step in range(3):
    out = net(torch.rand(2, 4))
print("loop done")
