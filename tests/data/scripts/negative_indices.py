# labels: test_group::correctness
"""Advanced indexing with negative indices: torch.onnx's TorchScript exporter writes it as
Reshape, Transpose, Concat and Gather, and warns that the graph then computes other values
("If indices include negative values, the exported graph will produce incorrect results").
A runtime's outputs differ from PyTorch's; the mismatch's line names the exporter's warning."""
import torch

torch.manual_seed(0)


class Pick(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(6, 6)

    def forward(self, x):
        y = self.a(x)
        rows = torch.tensor([-1, 0, -2])
        cols = torch.tensor([-1, 2, -3])
        return y[rows, cols] + y[rows][:, cols].sum(-1)


model = Pick()
model(torch.rand(4, 6))
