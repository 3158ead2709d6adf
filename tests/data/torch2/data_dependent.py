"""A forward whose branch depends on its input's values: torch.export (the dynamo exporter)
cannot trace it (a guard on data-dependent values), the TorchScript exporter traces the branch
the example takes. --exporter auto falls back and says why."""
import torch

torch.manual_seed(0)


class Branchy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(6, 6)
        self.b = torch.nn.Linear(6, 3)

    def forward(self, x):
        y = self.a(x)
        if int(y.argmax()) % 2 == 0:  # a Python int of a tensor value: no graph holds it
            y = y * 2
        return self.b(torch.relu(y))


model = Branchy()
model(torch.rand(1, 6))
