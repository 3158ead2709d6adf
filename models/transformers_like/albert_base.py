# labels: test_group::transformers_like name::albert_base author::google task::Natural_Language_Processing license::mit
"""
ALBERT-base-like (Lan et al. 2019, https://arxiv.org/abs/1909.11942; configuration of
https://huggingface.co/albert-base-v2): factorized embeddings (vocabulary 30000 of size 128,
projected to hidden 768) and one transformer layer (12 heads, feed-forward 3072, post-LayerNorm,
eps 1e-12) whose parameters are shared by all 12 layers; 512 positions, 2 token types, tanh
pooler. Differs from the published model in its activation: exact GELU instead of the tanh
approximation ("gelu_new").

Re-implemented from torch.nn modules (nn.Embedding + one nn.TransformerEncoderLayer applied 12
times), random weights: the architecture and sizes of the published model (about 12M
parameters), not its weights.
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

batch_size, max_seq_length = parse(["batch_size", "max_seq_length"])

CONFIG = dict(vocab_size=30000, embedding_size=128, hidden=768, layers=12, heads=12, ffn=3072,
              max_positions=512, type_vocab_size=2, eps=1e-12)


class AlbertModel(torch.nn.Module):
    def __init__(self, vocab_size, embedding_size, hidden, layers, heads, ffn, max_positions,
                 type_vocab_size, eps, dropout=0.0):
        super().__init__()
        self.layers = layers
        self.word_embeddings = torch.nn.Embedding(vocab_size, embedding_size, padding_idx=0)
        self.position_embeddings = torch.nn.Embedding(max_positions, embedding_size)
        self.token_type_embeddings = torch.nn.Embedding(type_vocab_size, embedding_size)
        self.embedding_norm = torch.nn.LayerNorm(embedding_size, eps=eps)
        self.embedding_projection = torch.nn.Linear(embedding_size, hidden)
        self.shared_layer = torch.nn.TransformerEncoderLayer(
            hidden, heads, ffn, dropout, activation="gelu", layer_norm_eps=eps, batch_first=True)
        self.pooler = torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.Tanh())

    def forward(self, input_ids, attention_mask, token_type_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        x = (self.word_embeddings(input_ids) + self.position_embeddings(positions)
             + self.token_type_embeddings(token_type_ids))
        x = self.embedding_projection(self.embedding_norm(x))
        padding = attention_mask == 0
        for _ in range(self.layers):
            x = self.shared_layer(x, src_key_padding_mask=padding)
        return x, self.pooler(x[:, 0])


model = AlbertModel(**CONFIG)
model.eval()
inputs = {
    "input_ids": torch.randint(0, CONFIG["vocab_size"], (batch_size, max_seq_length)),
    "attention_mask": torch.ones(batch_size, max_seq_length, dtype=torch.int64),
    "token_type_ids": torch.zeros(batch_size, max_seq_length, dtype=torch.int64),
}

with torch.no_grad():
    sequence_output, pooled_output = model(**inputs)
print("parameters: %.1fM" % (sum(p.numel() for p in model.parameters()) / 1e6))
print("sequence output:", tuple(sequence_output.shape),
      "pooled output:", tuple(pooled_output.shape))
