# labels: test_group::b author::bob
"""Labelled script (test_group b, author bob)."""
import torch

torch.manual_seed(0)
label_b_model = torch.nn.Linear(2, 3)
label_b_model(torch.rand(1, 2))
print("label_b ran")
