# labels: test_group::correctness author::turnkey
"""Random tanh networks in their chaotic regime (weights of gain 3): each layer multiplies a
rounding error by about 1.3, so float32 arithmetic itself drifts from the float64 result as they
deepen. `Drifting` (40 layers): PyTorch's own float32 outputs are a few percent from its float64
ones, yet still resemble them (cosine > 0.999). `Lost` (56 layers): they no longer resemble them
(cosine ~0.8): float32 cannot compute this model."""
import torch

torch.manual_seed(0)


class Chaotic(torch.nn.Module):
    def __init__(self, depth):
        super().__init__()
        layers = []
        for _ in range(depth):
            linear = torch.nn.Linear(64, 64, bias=False)
            torch.nn.init.normal_(linear.weight, std=3.0 / 8)
            layers += [linear, torch.nn.Tanh()]
        self.body = torch.nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


class Drifting(Chaotic):
    def __init__(self):
        super().__init__(40)


class Lost(Chaotic):
    def __init__(self):
        super().__init__(56)


x = torch.randn(64, 64)
if __name__ == "__main__":  # amplified_miscompiled.py imports the networks
    drifting = Drifting().eval()
    lost = Lost().eval()
    with torch.no_grad():
        drifting(x)
        lost(x)
