"""build_model with build names: two models of one script, each in its own build directory.

    /usr/bin/python3 examples/build_api/build_name.py

Without build_name both builds would be named build_name_<hash8> (distinct by hash); with it
they land in <cache>/model_a and <cache>/model_b.
"""
import torch

from turnkeyml import build_model


class TwoLayer(torch.nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1 = torch.nn.Linear(width, width)
        self.fc2 = torch.nn.Linear(width, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


torch.manual_seed(0)
model_a, model_b = TwoLayer(16), TwoLayer(32)
inputs_a, inputs_b = {"x": torch.rand(1, 16)}, {"x": torch.rand(1, 32)}

state_a = build_model(model_a, inputs_a, build_name="model_a", monitor=False)
state_b = build_model(model_b, inputs_b, build_name="model_b", sequence="optimize-fp16",
                      monitor=False)
for state in (state_a, state_b):
    print("%s: %s, ONNX model %s" % (state["build_name"], state["build_status"],
                                     state["onnx_path"]))
