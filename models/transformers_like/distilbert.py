# labels: test_group::transformers_like name::distilbert author::huggingface task::Natural_Language_Processing license::mit
"""
DistilBERT-base (Sanh et al. 2019, https://arxiv.org/abs/1910.01108; configuration of
https://huggingface.co/distilbert-base-uncased): BERT-base halved in depth, 6 layers, hidden 768,
12 heads, feed-forward 3072, vocabulary 30522, 512 positions, no token types, no pooler, GELU,
post-LayerNorm (eps 1e-12).

Re-implemented from torch.nn modules (nn.Embedding + nn.TransformerEncoder), random weights: the
architecture and sizes of the published model (about 66M parameters), not its weights.
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

batch_size, max_seq_length = parse(["batch_size", "max_seq_length"])

CONFIG = dict(vocab_size=30522, hidden=768, layers=6, heads=12, ffn=3072, max_positions=512,
              eps=1e-12)


class DistilBertModel(torch.nn.Module):
    def __init__(self, vocab_size, hidden, layers, heads, ffn, max_positions, eps, dropout=0.1):
        super().__init__()
        self.word_embeddings = torch.nn.Embedding(vocab_size, hidden, padding_idx=0)
        self.position_embeddings = torch.nn.Embedding(max_positions, hidden)
        self.embedding_norm = torch.nn.LayerNorm(hidden, eps=eps)
        self.dropout = torch.nn.Dropout(dropout)
        layer = torch.nn.TransformerEncoderLayer(hidden, heads, ffn, dropout, activation="gelu",
                                                 layer_norm_eps=eps, batch_first=True)
        self.transformer = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, input_ids, attention_mask):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        x = self.word_embeddings(input_ids) + self.position_embeddings(positions)
        x = self.dropout(self.embedding_norm(x))
        return self.transformer(x, src_key_padding_mask=attention_mask == 0)


model = DistilBertModel(**CONFIG)
model.eval()
inputs = {
    "input_ids": torch.randint(0, CONFIG["vocab_size"], (batch_size, max_seq_length)),
    "attention_mask": torch.ones(batch_size, max_seq_length, dtype=torch.int64),
}

with torch.no_grad():
    hidden_states = model(**inputs)
print("parameters: %.1fM" % (sum(p.numel() for p in model.parameters()) / 1e6))
print("last hidden state:", tuple(hidden_states.shape))
