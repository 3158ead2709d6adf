"""Writes sample.onnx beside this file: the ONNX file the documents benchmark
(`turnkey examples/cli/onnx/sample.onnx`, `turnkey -i examples/cli/onnx/sample.onnx load-onnx
benchmark`), and sample_inputs.npz: a batch of 4 inputs `x` and the model's outputs `y` for them,
the documents' `--input-data` example (docs/measurement.md).

A small fully connected network (Linear 10 -> 16, ReLU, Linear 16 -> 5) exported with a symbolic
batch dimension, as ONNX files from elsewhere usually have: turnkey benchmarks it with batch 1 and
says so (or with `--input-shapes x:8x10`). Weights come from torch.manual_seed(0).

Run with the interpreter that has torch (Debian 12: /usr/bin/python3, torch 1.13):

    /usr/bin/python3 examples/cli/onnx/make_sample.py

The committed sample.onnx was made so; under the same torch version the bytes are the same (the
.npz holds the time it was written, so its bytes differ, not its arrays).
"""
import os

import numpy as np
import torch

torch.manual_seed(0)

model = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 5))
model.eval()
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sample.onnx")
torch.onnx.export(model, (torch.rand(1, 10),), path, input_names=["x"], output_names=["y"],
                  dynamic_axes={"x": {0: "batch"}, "y": {0: "batch"}}, opset_version=17)
print(f"wrote {path}")

torch.manual_seed(1)
x = torch.rand(4, 10)
with torch.no_grad():
    y = model(x)
inputs = os.path.join(os.path.dirname(path), "sample_inputs.npz")
np.savez(inputs, x=x.numpy(), y=y.numpy())
print(f"wrote {inputs}")
