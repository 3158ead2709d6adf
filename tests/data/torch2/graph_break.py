"""A model whose forward has a graph break (a print between two layers): torch.compile makes two
graphs of it, and fullgraph=True refuses it."""
import torch

torch.manual_seed(0)


class Broken(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.a(x))
        print("between the layers")
        return self.b(y)


model = Broken()
model(torch.rand(2, 8))
