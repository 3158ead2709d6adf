# labels: test_group::selftest name::two_inputs author::turnkey task::Test license::mit
"""
A model with two inputs of different shapes: each goes through its own Linear layer, the results
are concatenated and mixed by a third. Random weights. Written for turnkey's selftest corpus.
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

batch_size = parse(["batch_size"])[0]


class TwoInputs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc_a = torch.nn.Linear(16, 8)
        self.fc_b = torch.nn.Linear(24, 8)
        self.mix = torch.nn.Linear(16, 4)

    def forward(self, a, b):
        return self.mix(torch.cat([torch.relu(self.fc_a(a)), torch.relu(self.fc_b(b))], dim=1))


model = TwoInputs()
model.eval()
inputs = {"a": torch.rand(batch_size, 16), "b": torch.rand(batch_size, 24)}

with torch.no_grad():
    out = model(**inputs)
print("output shape:", tuple(out.shape))
