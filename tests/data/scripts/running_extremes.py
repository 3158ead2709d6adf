# labels: test_group::exporter_fixes author::turnkey
"""torch.cummax, torch.cummin and torch.isin, as Grounding DINO builds its text mask (each
token's previous and next special token): no exporter translates cummax or cummin (torch 2.15's
torchlib raises NotImplementedError; the TorchScript exporter has no symbolic) nor, in the
TorchScript exporter, isin. turnkey writes them (python/turnkeyml/discovery/exporter_fixes.py:
aten_cummax, aten_cummin, aten_isin, and the dynamo translations): values and indices, ties
(rounded values) resolved to the last index as torch does."""
import torch

torch.manual_seed(0)


class RunningExtremes(torch.nn.Module):
    def forward(self, x, ids):
        highest, where_highest = torch.cummax(x, dim=1)
        lowest, where_lowest = torch.cummin(x, dim=-1)
        special = torch.isin(ids, torch.tensor([0, 2]))
        previous = torch.cummax(torch.where(special, torch.arange(ids.shape[-1]), -1), dim=-1)
        return highest, where_highest, lowest, where_lowest, special, previous[0], previous[1]


model = RunningExtremes().eval()
with torch.no_grad():
    model(torch.randn(2, 7, 3).round(), torch.randint(0, 4, (2, 9)))
