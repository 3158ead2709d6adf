"""build_model(monitor=False): the same build without the progress monitor on the terminal.

    /usr/bin/python3 examples/build_api/no_monitor.py
"""
import torch

from turnkeyml import build_model

torch.manual_seed(0)


class SmallModel(torch.nn.Module):
    def __init__(self, input_size, output_size):
        super().__init__()
        self.fc = torch.nn.Linear(input_size, output_size)

    def forward(self, x):
        return self.fc(x)


model = SmallModel(10, 5)
state = build_model(model, {"x": torch.rand(10)}, monitor=False)
print("Build %s: %s, ONNX file %s" % (state["build_name"], state["build_status"],
                                      state["onnx_path"]))
