"""One tensor clipped, then clipped again by three projections with bounds of their own (Gemma 4
audio's clipped linears: each clamps its input between two buffers). onnxscript's optimizer fuses
each pair of clips into one and names the fused bounds after the tensor clipped, so the second and
third pairs' bounds are values no node makes and no initializer holds: the file is refused ("Nodes
in a graph must be topologically sorted, however input 'clamp_min_1' ..."). turnkey's mend
(python/turnkeyml/discovery/translations.py) writes them as the initializers they stand for."""
import torch
torch.manual_seed(0)


class ClippedLinear(torch.nn.Module):
    def __init__(self, low, high):
        super().__init__()
        self.linear = torch.nn.Linear(8, 8)
        self.register_buffer("input_min", torch.tensor(low))
        self.register_buffer("input_max", torch.tensor(high))

    def forward(self, x):
        return self.linear(torch.clamp(x, self.input_min, self.input_max))


class SharedClips(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.q = ClippedLinear(-float("inf"), float("inf"))
        self.k = ClippedLinear(-0.5, 0.5)
        self.v = ClippedLinear(0.0, 1.5)

    def forward(self, x):
        h = torch.clamp(x * 2, -1.0, 1.0)
        return self.q(h) + self.k(h) * self.v(h)


with torch.no_grad():
    SharedClips().eval()(torch.randn(2, 8))
