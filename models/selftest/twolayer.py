# labels: test_group::selftest name::twolayer author::turnkey task::Test license::mit
"""
Two fully connected layers with a ReLU between them (a multi-layer perceptron), random weights.
Written for turnkey's selftest corpus.
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

batch_size = parse(["batch_size"])[0]


class TwoLayer(torch.nn.Module):
    def __init__(self, in_features, hidden_features, out_features):
        super().__init__()
        self.fc1 = torch.nn.Linear(in_features, hidden_features)
        self.relu = torch.nn.ReLU()
        self.fc2 = torch.nn.Linear(hidden_features, out_features)

    def forward(self, x):
        return self.fc2(self.relu(self.fc1(x)))


model = TwoLayer(64, 128, 10)
model.eval()
inputs = {"x": torch.rand(batch_size, 64)}

with torch.no_grad():
    out = model(**inputs)
print("output shape:", tuple(out.shape))
