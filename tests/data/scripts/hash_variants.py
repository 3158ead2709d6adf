"""Hash cases. `same_as_hello` is hello_world.py's model (same class code, seed, weights, input):
its hash equals hello_world's. Every other model differs from it in exactly one thing."""
import copy

import torch

torch.manual_seed(0)


class SmallModel(torch.nn.Module):
    """One fully connected layer."""

    def __init__(self, input_features, output_features):
        super().__init__()
        self.fc = torch.nn.Linear(input_features, output_features)

    def forward(self, x):
        return self.fc(x)


class PlusOne(SmallModel):
    def forward(self, x):
        return self.fc(x) + 1


class PlusTwo(SmallModel):
    def forward(self, x):
        return self.fc(x) + 2


same_as_hello = SmallModel(10, 5)
torch.manual_seed(1)
reseeded = SmallModel(10, 5)  # other weights
plus_one = PlusOne(10, 5)
plus_two = PlusTwo(10, 5)
plus_two.load_state_dict(plus_one.state_dict())  # same weights, other forward code
twin = copy.deepcopy(same_as_hello)  # another object with the same content

x = torch.rand(10)
for model in (same_as_hello, reseeded, plus_one, plus_two, twin):
    model(x)
same_as_hello(torch.rand(2, 10))  # other input shape
print("hash_variants done")
