"""A text model: int64 token ids into an embedding, a bool attention mask given as keyword, and
a forward that returns a dict."""
import torch

torch.manual_seed(0)


class TinyText(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(20, 8)
        self.out = torch.nn.Linear(8, 3)

    def forward(self, input_ids, attention_mask=None):
        h = self.emb(input_ids)
        if attention_mask is not None:
            h = h * attention_mask.unsqueeze(-1).to(h.dtype)
        pooled = h.mean(dim=1)
        return {"logits": self.out(pooled), "hidden": h}


text_model = TinyText()
ids = torch.randint(0, 20, (2, 5), dtype=torch.int64)
mask = torch.ones(2, 5, dtype=torch.bool)
mask[1, 3:] = False
result = text_model(ids, attention_mask=mask)
print("dict_output", sorted(result))
