# labels: test_group::torch2
"""torchvision's resnet18 and vit_b_16 (random weights, batch 1): the torch-2 smoke of
tests/e2e/test_torch2.cpp (export with the installed torch.onnx, ONNX Runtime, correctness)."""
import torch
import torchvision

torch.manual_seed(0)
x = torch.rand(1, 3, 224, 224)
resnet18 = torchvision.models.resnet18(weights=None).eval()
vit_b_16 = torchvision.models.vit_b_16(weights=None).eval()
with torch.no_grad():
    resnet18(x)
    vit_b_16(x)
