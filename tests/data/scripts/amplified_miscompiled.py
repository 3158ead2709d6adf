# labels: test_group::correctness author::turnkey
"""The `Drifting` network of amplified_rounding.py (40 chaotic tanh layers: PyTorch's own float32
outputs a few percent from its float64 ones) with an export error: while torch.onnx exports it,
its 11th layer's weights are off by a relative 1e-3 (a constant written wrong). The model
amplifies rounding, but the error is far beyond it: a mismatch, not rounding."""
import torch

from amplified_rounding import Chaotic, x  # the generator where Drifting() would draw


class Miscompiled(Chaotic):
    def __init__(self):
        super().__init__(40)

    def forward(self, x):
        for i, layer in enumerate(self.body):
            if i == 20 and torch.onnx.is_in_onnx_export():
                x = torch.nn.functional.linear(x, layer.weight * (1 + 1e-3))
            else:
                x = layer(x)
        return x


miscompiled = Miscompiled().eval()
with torch.no_grad():
    miscompiled(x)
