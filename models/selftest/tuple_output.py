# labels: test_group::selftest name::tuple_output author::turnkey task::Test license::mit
"""
A model that returns a tuple of two tensors: a shared Linear trunk with a classification head
(logits) and a regression head (one value per sample). Random weights. Written for turnkey's
selftest corpus.
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

batch_size = parse(["batch_size"])[0]


class TwoHeads(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.trunk = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU())
        self.classify = torch.nn.Linear(64, 10)
        self.regress = torch.nn.Linear(64, 1)

    def forward(self, x):
        features = self.trunk(x)
        return self.classify(features), self.regress(features)


model = TwoHeads()
model.eval()
inputs = {"x": torch.rand(batch_size, 32)}

with torch.no_grad():
    logits, value = model(**inputs)
print("output shapes:", tuple(logits.shape), tuple(value.shape))
