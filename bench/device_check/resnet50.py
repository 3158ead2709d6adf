# labels: test_group::device_check
"""torchvision's ResNet-50 with random weights (no download), batch 1 at 224x224: the device
check's convolution model (bench/device-check). `model` and `inputs` are what bare_loop.py
times."""
import torch
import torchvision

torch.manual_seed(0)
model = torchvision.models.resnet50(weights=None).eval()
inputs = {"x": torch.rand(1, 3, 224, 224)}
outputs = model(**inputs)
print(f"resnet50 logits: {tuple(outputs.shape)}")
