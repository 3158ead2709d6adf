# labels: test_group::plugins author::turnkey
"""A model that gives back its input: the test plugin, which copies its inputs to its outputs,
computes it exactly (unless told to drift: tests/plugins/test_plugin.c)."""
import torch


class Passthrough(torch.nn.Module):
    def forward(self, x):
        return x * 1.0


torch.manual_seed(0)
model = Passthrough()
model(torch.randn(4, 8))
