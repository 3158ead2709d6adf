# Discovery warnings are allowed, but not without bound: 3000 of 60 KB each (180 MB), then a model.
import json

import torch
from forge import raw

warning = json.dumps({"v": 3, "type": "warning", "message": "W" * 60000}).encode() + b"\n"
for _ in range(3000):
    raw(warning)
model = torch.nn.Linear(4, 2)
model(torch.ones(1, 4))
