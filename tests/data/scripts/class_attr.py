"""Models held only as attributes: of a class (Registry.model) and of a plain object
(pipeline.head)."""
import torch

torch.manual_seed(0)


class Registry:
    model = torch.nn.Linear(3, 2)


class Pipeline:
    def __init__(self):
        self.head = torch.nn.Linear(2, 5)

    def run(self, x):
        return self.head(Registry.model(x))


pipeline = Pipeline()
print("class_attr", tuple(pipeline.run(torch.rand(1, 3)).shape))
