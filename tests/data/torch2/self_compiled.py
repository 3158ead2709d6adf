"""A script that compiles and exports its model itself (torch.compile, torch.export,
torch.onnx.export's default dynamo exporter): discovery lists the model once, as the module
inside the compile wrapper, with the script's real inputs, never the fake or symbolic calls the
tracers make."""
import os
import sys
import tempfile

import torch

torch.manual_seed(0)


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(10, 5)

    def forward(self, x):
        return torch.relu(self.fc(x))


model = Small()
x = torch.rand(3, 10)
exported = torch.export.export(model, (x,))
with tempfile.TemporaryDirectory() as d:
    if "--no-onnx" not in sys.argv:
        torch.onnx.export(model, (x,), os.path.join(d, "small.onnx"))
compiled = torch.compile(model, backend="eager")
print(compiled(x).shape)
