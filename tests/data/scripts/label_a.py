# labels: test_group::a,b author::alice
"""Labelled script (test_group a and b, author alice)."""
import torch

torch.manual_seed(0)
label_a_model = torch.nn.Linear(2, 2)
label_a_model(torch.rand(1, 2))
print("label_a ran")
