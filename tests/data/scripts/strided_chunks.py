# labels: test_group::exporter_fixes author::turnkey
"""Overlapping chunks made with as_strided over a tensor that is not row-major in memory, as
Longformer chunks its queries and keys: at batch size 1 the reshape after its transposes is a
view, whose storage as_strided reads, while the TorchScript exporter's own symbolic read the
tensor in its logical order (Longformer: max rel error 0.03 at width 768). The sequence is
padded to whole windows by an amount computed from its length, as Longformer pads, which leaves
the trace without static sizes. turnkey's exporter fix as_strided_memory_order puts the axes in
memory order first."""
import torch

torch.manual_seed(0)


class OverlappingChunks(torch.nn.Module):
    def __init__(self, heads=4, head=8, window=8):
        super().__init__()
        self.heads, self.head, self.window = heads, head, window
        self.project = torch.nn.Linear(heads * head, heads * head)

    def forward(self, x):  # (length, batch 1, width)
        length, batch, _ = x.shape
        padding = (2 * self.window - length % (2 * self.window)) % (2 * self.window)
        x = torch.nn.functional.pad(self.project(x), (0, 0, 0, 0, 0, padding))
        length = x.size(0)
        q = x.view(length, batch, self.heads, self.head).transpose(0, 1)
        q = q.transpose(1, 2).reshape(batch * self.heads, length, self.head)
        q = q.view(q.size(0), length // (2 * self.window), 2 * self.window, self.head)
        size, stride = list(q.size()), list(q.stride())
        size[1], stride[1] = size[1] * 2 - 1, stride[1] // 2
        return q.as_strided(size=size, stride=stride).sum(-1)


model = OverlappingChunks().eval()
with torch.no_grad():
    model(torch.randn(40, 1, 32))
