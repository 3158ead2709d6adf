# Bytes that are not JSON (nor UTF-8) on the event pipe.
import torch
from forge import raw

model = torch.nn.Linear(4, 2)
model(torch.ones(1, 4))
raw(b"\xff\xfe{not json\x07\n")
