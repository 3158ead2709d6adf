# labels: test_group::torch2
"""A model whose input and output are plain @dataclass objects (not dicts): turnkey walks them
by field (inputs `batch.images`, `batch.scale`; outputs `output.logits`, `output.features`)."""
import dataclasses

import torch

torch.manual_seed(0)


@dataclasses.dataclass
class Batch:
    images: torch.Tensor
    scale: float


@dataclasses.dataclass(frozen=True)
class Prediction:
    logits: torch.Tensor
    features: torch.Tensor


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.body = torch.nn.Linear(12, 6)
        self.head = torch.nn.Linear(6, 3)

    def forward(self, batch):
        features = torch.tanh(self.body(batch.images * batch.scale))
        return Prediction(logits=self.head(features), features=features)


model = Classifier().eval()
with torch.no_grad():
    out = model(Batch(images=torch.rand(2, 12), scale=0.5))
print("logits:", tuple(out.logits.shape))
