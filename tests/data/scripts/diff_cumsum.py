# labels: test_group::exporter_fixes author::turnkey
"""torch.diff and a cumulative sum of booleans, as Pocket TTS's audio tokenizer finds and counts
its frames' boundaries: the TorchScript exporter has no symbolic for aten::diff, and writes
CumSum over booleans, which ONNX refuses (and over narrower integers in their own type, where
torch sums them as int64). turnkey's exporter fixes aten_diff and cumsum_integer_sum
(python/turnkeyml/discovery/exporter_fixes.py) write both."""
import torch

torch.manual_seed(0)


class Boundaries(torch.nn.Module):
    def forward(self, x, ids):
        slope = torch.diff(x, n=2, dim=1, append=x[:, -1:])  # float, twice, with an append
        changes = torch.diff(ids, dim=-1, prepend=ids[:, :1]) != 0  # int64 with a prepend
        flips = torch.diff(changes, dim=-1)  # booleans: torch compares them
        segment = torch.cumsum(changes, dim=-1)  # booleans summed as int64
        return slope, segment, flips, torch.cumsum(flips.int(), dim=-1)


model = Boundaries().eval()
with torch.no_grad():
    model(torch.randn(2, 16), torch.randint(0, 3, (2, 16)))
