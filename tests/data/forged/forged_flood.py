# One line of 24 MiB without a newline: the core refuses it at 16 MiB, unread beyond.
import torch
from forge import raw

model = torch.nn.Linear(4, 2)
model(torch.ones(1, 4))
chunk = b"x" * (1 << 20)
for _ in range(24):
    raw(chunk)
raw(b"\n")
