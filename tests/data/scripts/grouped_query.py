# labels: test_group::exporter_fixes author::turnkey
"""Grouped-query attention as transformers 5 asks torch for it (keys and values of fewer heads
than the queries, no mask: scaled_dot_product_attention with enable_gqa=True). The TorchScript
exporter's own symbolic refuses enable_gqa; turnkey's exporter fix repeats the keys' and values'
heads first (python/turnkeyml/discovery/exporter_fixes.py, sdpa_grouped_query). Needs torch >=
2.5."""
import torch

torch.manual_seed(0)


class GroupedQueryAttention(torch.nn.Module):
    def __init__(self, width=32, heads=8, kv_heads=2):
        super().__init__()
        self.heads, self.kv_heads, self.head = heads, kv_heads, width // heads
        self.q = torch.nn.Linear(width, heads * self.head)
        self.kv = torch.nn.Linear(width, 2 * kv_heads * self.head)

    def forward(self, x):
        b, n, _ = x.shape
        q = self.q(x).view(b, n, self.heads, self.head).transpose(1, 2)
        k, v = self.kv(x).view(b, n, 2, self.kv_heads, self.head).permute(2, 0, 3, 1, 4)
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                               enable_gqa=True)
        return out.transpose(1, 2).reshape(b, n, -1)


model = GroupedQueryAttention().eval()
with torch.no_grad():
    model(torch.randn(2, 6, 32))
