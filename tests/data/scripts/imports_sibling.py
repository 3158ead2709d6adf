"""Imports its model class from a module in its own folder, and traces a model itself: the
calls torch.jit.trace makes are not executions."""
import io

import torch

from helpers.sibling_models import SiblingNet

torch.manual_seed(0)
sibling = SiblingNet()
x = torch.rand(2, 3)
traced = torch.jit.trace(sibling, x)
torch.onnx.export(sibling, (x,), io.BytesIO())
sibling(x)
print("imports_sibling", __name__, __file__.endswith("imports_sibling.py"))
