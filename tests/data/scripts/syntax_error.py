"""Does not compile."""
import torch

model = torch.nn.Linear(2, 2)
def broken(:
    pass
