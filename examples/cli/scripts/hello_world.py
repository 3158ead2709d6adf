# labels: test_group::a
"""
The smallest turnkey example: one PyTorch model, called once.

turnkey discovers `pytorch_model` when the script calls it, then exports and benchmarks it:

    turnkey scripts/hello_world.py
"""
import torch

torch.manual_seed(0)


class SmallModel(torch.nn.Module):
    """One fully connected layer."""

    def __init__(self, input_features, output_features):
        super().__init__()
        self.fc = torch.nn.Linear(input_features, output_features)

    def forward(self, x):
        return self.fc(x)


input_features = 10
output_features = 5

pytorch_model = SmallModel(input_features, output_features)
inputs = {"x": torch.rand(input_features)}

pytorch_outputs = pytorch_model(**inputs)

print(f"pytorch_outputs: {pytorch_outputs}")
