"""One model, two ways: `turnkey twin.py` discovers the call; `python twin.py CACHE` builds it
with the Python API. Both must name the same build (tests/python/test_api.py)."""
import sys

import torch


class Twin(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 3)

    def forward(self, x, scale=None):
        return self.fc(x) * 2


torch.manual_seed(0)
twin = Twin()
inputs = {"x": torch.ones(1, 6)}
if len(sys.argv) > 1:
    from turnkeyml import build_model

    state = build_model(twin, inputs, cache_dir=sys.argv[1])
    print("BUILD %s" % state["build_name"])
else:
    twin(**inputs)
