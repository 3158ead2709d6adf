# A classifier whose head is zero-initialised (as torchvision's ViTs are): with these weights its
# output is exactly 0, so comparing outputs checks nothing (issue 18).
import torch


class ZeroHead(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(8, 16)
        self.act = torch.nn.ReLU()
        self.head = torch.nn.Linear(16, 4)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    def forward(self, x):
        return self.head(self.act(self.body(x)))


torch.manual_seed(0)
model = ZeroHead().eval()
model(torch.randn(2, 8))
