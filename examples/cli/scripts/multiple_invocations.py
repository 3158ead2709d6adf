"""
One model called with inputs of two shapes: turnkey reports one entry per input signature
("With input shape 1 (executed 2x)", "With input shape 2 (executed 1x)"), each with its own hash.

    turnkey scripts/multiple_invocations.py
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


input_features = 12
output_features = 5

pytorch_model = SmallModel(input_features, output_features)

# Two calls with a batch of one share a signature; the batch of two is a second one.
for batch_size in (1, 1, 2):
    inputs = {"x": torch.rand(batch_size, input_features)}
    pytorch_outputs = pytorch_model(**inputs)
    print(f"batch of {batch_size}: pytorch_outputs: {pytorch_outputs}")
