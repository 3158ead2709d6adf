"""A script named like a library turnkey uses (onnx): the export must use the real library and
must not import, and so run, this script a second time."""
import torch

print("shadow script body runs as", __name__)
torch.manual_seed(0)
shadow_model = torch.nn.Linear(2, 2)
shadow_model(torch.rand(1, 2))
