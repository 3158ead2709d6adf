# labels: test_group::b
"""
A model built from two sub-modules, `fc` and `fc2`, each called twice per forward pass.

By default turnkey reports only the top-level model, `pytorch_model`. With `--max-depth 1` it
also reports, exports and benchmarks the sub-modules it calls:

    turnkey scripts/max_depth.py --max-depth 1
"""
import torch

torch.manual_seed(0)


class TwoLayerModel(torch.nn.Module):
    """Two fully connected layers, applied to the input and to its mirror image."""

    def __init__(self, input_features, output_features):
        super().__init__()
        self.fc = torch.nn.Linear(input_features, output_features)
        self.fc2 = torch.nn.Linear(output_features, output_features)

    def forward(self, x):
        forward_pass = self.fc2(self.fc(x))
        mirrored_pass = self.fc2(self.fc(torch.flip(x, dims=[-1])))
        return forward_pass + mirrored_pass


input_features = 10
output_features = 5

pytorch_model = TwoLayerModel(input_features, output_features)
inputs = {"x": torch.rand(input_features)}

pytorch_outputs = pytorch_model(**inputs)

print(f"pytorch_outputs: {pytorch_outputs}")
