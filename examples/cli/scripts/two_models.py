# labels: test_group::b
"""
Two models in one script: turnkey discovers, names and benchmarks each of them
(`pytorch_model` and `another_pytorch_model`).

    turnkey scripts/two_models.py
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


# A first model: 10 features in, 5 out
pytorch_model = SmallModel(10, 5)
inputs = {"x": torch.rand(10)}
pytorch_outputs = pytorch_model(**inputs)

# A second, larger instance of the same class: 50 features in, 10 out
another_pytorch_model = SmallModel(50, 10)
more_inputs = {"x": torch.rand(50)}
more_pytorch_outputs = another_pytorch_model(**more_inputs)

print(f"pytorch_outputs: {pytorch_outputs}")
print(f"more_pytorch_outputs: {more_pytorch_outputs}")
