# labels: test_group::selftest name::linear author::turnkey task::Test license::mit
"""
One fully connected layer, nn.Linear(10, 5), random weights. Written for turnkey's selftest corpus.
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

batch_size = parse(["batch_size"])[0]


class Linear(torch.nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.fc = torch.nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.fc(x)


model = Linear(10, 5)
model.eval()
inputs = {"x": torch.rand(batch_size, 10)}

with torch.no_grad():
    out = model(**inputs)
print("output shape:", tuple(out.shape))
