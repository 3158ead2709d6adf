# Writes about 6 MB to stdout and stderr, then behaves.
import sys

import torch

torch.manual_seed(0)

line = "noise " * 20 + "\n"
for i in range(25000):
    sys.stdout.write(line)
    if i % 10 == 0:
        sys.stderr.write(line)
model = torch.nn.Linear(6, 3)
model(torch.randn(1, 6))
