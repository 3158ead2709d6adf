"""Attention projection that zeroes part of a copied bias in place, as torchvision's Swin V2
does with the key bias (`qkv_bias[length:2 * length].zero_()`): traced, that is aten::zero,
which torch 1.13's ONNX exporter has no symbolic for."""
import torch

torch.manual_seed(0)


class ZeroKeyBias(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.qkv = torch.nn.Linear(dim, 3 * dim)

    def forward(self, x):
        bias = self.qkv.bias.clone()
        length = bias.numel() // 3
        bias[length:2 * length].zero_()
        qkv = torch.nn.functional.linear(x, self.qkv.weight, bias)
        q, k, v = qkv.chunk(3, dim=-1)
        attention = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        return attention @ v


model = ZeroKeyBias(16)
with torch.no_grad():
    print(model(torch.rand(2, 5, 16)).shape)
