"""Two models whose graphs hold erfinv, which ONNX has no op for and torch 2.15's dynamo exporter
cannot translate (NotImplementedError): a tiny Gemma 3n text model, whose sparse activations
take the normal distribution's quantile of their target sparsity (prims.erf_inv of a constant),
and erfinv itself over its whole domain, tails and +-1 included. turnkey's own translation
(python/turnkeyml/discovery/translations.py) lets the dynamo exporter write both."""
import torch, transformers
torch.manual_seed(0)


class Erfinv(torch.nn.Module):
    def forward(self, x):
        return torch.erfinv(x)


config = transformers.Gemma3nTextConfig(
    vocab_size=128, vocab_size_per_layer_input=128, hidden_size=32, hidden_size_per_layer_input=8,
    intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
    head_dim=16, laurel_rank=4, layer_types=["sliding_attention", "full_attention"],
    num_kv_shared_layers=0, activation_sparsity_pattern=[0.95, 0.0])
model = transformers.Gemma3nTextModel(config).eval()
ids = torch.randint(0, 128, (1, 8))
x = torch.cat([torch.linspace(-1, 1, 2001), torch.tensor([0.9999999, -0.9999999])])
with torch.no_grad():
    model(input_ids=ids, attention_mask=torch.ones_like(ids))
    Erfinv()(x)
