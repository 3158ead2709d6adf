"""Models built inside functions and held in a dict and in a list, called with keyword and dict
inputs, one returning a tuple. Expected names: models['encoder'], layers[1], decoder (a local of
run()), and a model built and called inside a function with no name (its class name)."""
import torch

torch.manual_seed(0)


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 4)

    def forward(self, x, scale=None):
        y = self.fc(x)
        return (y, y * 2) if scale is None else (y * scale["s"], y)


class Decoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, features):
        return self.fc(features["a"] + features["b"][0] + features["b"][1])


class Tiny(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.fc = torch.nn.Linear(n, 2)

    def forward(self, x):
        return self.fc(x)


def build_models():
    return {"encoder": Encoder()}


def run(models, layers):
    x = torch.rand(1, 6)
    y, _ = models["encoder"](x=x, scale={"s": torch.rand(1, 4)})
    decoder = Decoder()
    out = decoder({"a": y, "b": [y, y]})
    return layers[1](out)


models = build_models()
layers = [Tiny(5), Tiny(3)]
result = run(models, layers)
torch.manual_seed(1)
anonymous = Tiny(7)(torch.rand(2, 7))  # nothing holds this model
print("containers done", tuple(result.shape), tuple(anonymous.shape))
