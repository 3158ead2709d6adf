"""No labels pragma; mentions test_group::a only in a docstring, which is not a pragma."""
import torch

torch.manual_seed(0)
unlabelled = torch.nn.Linear(2, 4)
unlabelled(torch.rand(1, 2))
print("label_none ran")
