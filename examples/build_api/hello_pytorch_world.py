"""Hello ** PyTorch ** World! build_model() as the Tools User Guide shows it:

    /usr/bin/python3 examples/build_api/hello_pytorch_world.py

Builds a small PyTorch model into an fp32 ONNX file in the build cache (~/.cache/turnkey, or
TURNKEY_CACHE_DIR) and prints where it went. build_model() builds and does not benchmark; see
examples/api/ for benchmark_model().
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


input_size, output_size = 10, 5
pytorch_model = SmallModel(input_size, output_size)
inputs = {"x": torch.rand(input_size)}

state = build_model(pytorch_model, inputs, sequence="onnx-fp32")  # export as an fp32 ONNX file

print("Build %s: %s" % (state["build_name"], state["build_status"]))
print("ONNX file: %s" % state["onnx_path"])
