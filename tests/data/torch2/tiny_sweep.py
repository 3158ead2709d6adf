# labels: test_group::torch2
"""A tiny conv net that reads --batch_size (turnkeyml.parser), for the dynamo exporter with
--sequence optimize-fp16 and a --batch-sizes sweep in tests/e2e/test_library_models.cpp."""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)
batch_size = parse(["batch_size"])[0]


class TinyConv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, images):
        return self.fc(torch.relu(self.conv(images)).mean((2, 3)))


model = TinyConv().eval()
with torch.no_grad():
    model(torch.rand(batch_size, 3, 16, 16))
