"""Two top-level models that share one sub-module object (`body`)."""
import torch

torch.manual_seed(0)


class Head(torch.nn.Module):
    def __init__(self, body, extra):
        super().__init__()
        self.body = body
        self.extra = torch.nn.Linear(4, extra)

    def forward(self, x):
        return self.extra(self.body(x))


body = torch.nn.Linear(4, 4)
first = Head(body, 2)
second = Head(body, 3)
x = torch.rand(1, 4)
print("shared", tuple(first(x).shape), tuple(second(x).shape))
