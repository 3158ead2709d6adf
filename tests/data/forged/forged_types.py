# A model message whose id is a string and whose input shape holds text.
import torch
from forge import raw

model = torch.nn.Linear(4, 2)
model(torch.ones(1, 4))
raw(b'{"v": 3, "type": "model", "id": "zero", "hash": "' + b"0" * 64 +
    b'", "inputs": [{"name": "x", "shape": ["a"], "dtype": "float32"}]}\n')
