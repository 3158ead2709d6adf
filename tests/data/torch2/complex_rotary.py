"""Rotary position embeddings in complex numbers, which torch 2.15's dynamo exporter carries as
real pairs but cannot unsqueeze ("No decompositions registered for the complex-valued input"):
a tiny DeepSeek V2 model (torch.polar frequencies, unsqueezed, times the queries as complex
numbers) and the same steps alone, unsqueezed at a dim counted from the end. turnkey's
translation (python/turnkeyml/discovery/translations.py) lets the dynamo exporter write both."""
import torch
import transformers

torch.manual_seed(0)


class ComplexRotary(torch.nn.Module):
    def forward(self, x, angles):
        turns = torch.polar(torch.ones_like(angles), angles).unsqueeze(-2)  # (b, s, 1, d/2)
        pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))  # (b, s, h, d/2)
        return torch.view_as_real(pairs * turns).flatten(-2)


config = transformers.DeepseekV2Config(
    vocab_size=64, hidden_size=32, intermediate_size=64, moe_intermediate_size=16,
    num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2, n_routed_experts=4,
    num_experts_per_tok=2, n_shared_experts=1, kv_lora_rank=8, q_lora_rank=8,
    qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=8, first_k_dense_replace=1)
model = transformers.DeepseekV2Model(config).eval()
ids = torch.randint(0, 64, (1, 8))
with torch.no_grad():
    model(input_ids=ids, attention_mask=torch.ones_like(ids))
    ComplexRotary()(torch.randn(2, 8, 3, 16), torch.rand(2, 8, 8) * 6.0)
