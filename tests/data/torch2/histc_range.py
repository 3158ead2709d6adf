"""torch.histc over the data's own range (min == max, as by default), which torch 2.15's dynamo
exporter cannot translate (torchlib raises NotImplementedError): a tiny HunYuan-MoE V1 model of
one expert (its default), whose experts kernel counts each expert's tokens with
histc(min=0, max=num_experts - 1), and histc itself on values that spread, that are all equal
(torch counts them in a range of one below to one above) and that are whole numbers landing on
bin edges. turnkey's translation (python/turnkeyml/discovery/translations.py) lets the dynamo
exporter write both."""
import torch
import transformers

torch.manual_seed(0)


class Histograms(torch.nn.Module):
    def forward(self, spread, equal, whole):
        return (torch.histc(spread, bins=7), torch.histc(equal, bins=3),
                torch.histc(whole, bins=4), torch.histc(spread, bins=5, min=-1.0, max=1.0))


config = transformers.HunYuanMoEV1Config(
    vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
    num_attention_heads=2, num_key_value_heads=2, head_dim=16, moe_topk=1)
model = transformers.HunYuanMoEV1Model(config).eval()
ids = torch.randint(0, 64, (1, 8))
with torch.no_grad():
    model(input_ids=ids, attention_mask=torch.ones_like(ids))
    Histograms()(torch.randn(64), torch.full((2, 5), 3.5), torch.randint(0, 4, (32,)).float())
