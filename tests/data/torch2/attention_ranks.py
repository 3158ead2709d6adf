"""Attention of other ranks than 4, which torch takes and torch 2.15's dynamo exporter cannot
translate ("AssertionError: only 4D query, key, and value are supported"): a tiny timm Hiera,
which attends within mask units (5-D query, key and value), and scaled_dot_product_attention
itself on 3-D and 5-D tensors with a boolean mask, a float mask that broadcasts, causal masking
and a given scale. turnkey's translation (python/turnkeyml/discovery/translations.py) folds the
leading dims for torchlib's 4-D translation, so the dynamo exporter writes all of them."""
import timm.models.hiera
import torch
import torch.nn.functional as F
torch.manual_seed(0)


class AttentionRanks(torch.nn.Module):
    def forward(self, q3, k3, v3, q5, k5, v5):
        keep = torch.ones(q3.shape[-2], k3.shape[-2], dtype=torch.bool).triu(1).logical_not()
        bias = torch.linspace(-1.0, 1.0, q5.shape[-2] * k5.shape[-2]).reshape(q5.shape[-2], -1)
        return (F.scaled_dot_product_attention(q3, k3, v3, attn_mask=keep),
                F.scaled_dot_product_attention(q5, k5, v5, attn_mask=bias),
                F.scaled_dot_product_attention(q5, k5, v5, is_causal=True, scale=0.3))


hiera = timm.models.hiera.Hiera(
    img_size=(64, 64), embed_dim=8, num_heads=1, num_classes=10, stages=(1, 1, 1, 1),
    abs_win_pos_embed=True, global_pos_size=(4, 4), init_values=1e-5).eval()
q3, k3 = torch.randn(2, 6, 8), torch.randn(2, 6, 8)
v3 = torch.randn(2, 6, 5)
q5, k5 = torch.randn(2, 3, 4, 6, 8), torch.randn(2, 3, 4, 6, 8)
v5 = torch.randn(2, 3, 4, 6, 5)
with torch.no_grad():
    hiera(torch.rand(1, 3, 64, 64))
    AttentionRanks()(q3, k3, v3, q5, k5, v5)
