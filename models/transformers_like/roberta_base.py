# labels: test_group::transformers_like name::roberta_base author::facebook task::Natural_Language_Processing license::mit
"""
RoBERTa-base (Liu et al. 2019, https://arxiv.org/abs/1907.11692; configuration of
https://huggingface.co/roberta-base): BERT-base's encoder (12 layers, hidden 768, 12 heads,
feed-forward 3072, GELU, post-LayerNorm with eps 1e-5) with the byte-level BPE vocabulary of
50265 tokens, 514 positions counted from padding_idx + 1, one token type, tanh pooler.

Re-implemented from torch.nn modules (nn.Embedding + nn.TransformerEncoder), random weights: the
architecture and sizes of the published model (about 125M parameters), not its weights.
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

batch_size, max_seq_length = parse(["batch_size", "max_seq_length"])

CONFIG = dict(vocab_size=50265, hidden=768, layers=12, heads=12, ffn=3072, max_positions=514,
              eps=1e-5, padding_idx=1)


class RobertaModel(torch.nn.Module):
    def __init__(self, vocab_size, hidden, layers, heads, ffn, max_positions, eps, padding_idx,
                 dropout=0.1):
        super().__init__()
        self.padding_idx = padding_idx
        self.word_embeddings = torch.nn.Embedding(vocab_size, hidden, padding_idx=padding_idx)
        self.position_embeddings = torch.nn.Embedding(max_positions, hidden,
                                                      padding_idx=padding_idx)
        self.token_type_embeddings = torch.nn.Embedding(1, hidden)
        self.embedding_norm = torch.nn.LayerNorm(hidden, eps=eps)
        self.dropout = torch.nn.Dropout(dropout)
        layer = torch.nn.TransformerEncoderLayer(hidden, heads, ffn, dropout, activation="gelu",
                                                 layer_norm_eps=eps, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pooler = torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.Tanh())

    def forward(self, input_ids, attention_mask):
        # Positions start after the padding index and skip padding tokens, as in fairseq.
        not_padding = (input_ids != self.padding_idx).long()
        positions = torch.cumsum(not_padding, dim=1) * not_padding + self.padding_idx
        x = (self.word_embeddings(input_ids) + self.position_embeddings(positions)
             + self.token_type_embeddings(torch.zeros_like(input_ids)))
        x = self.dropout(self.embedding_norm(x))
        x = self.encoder(x, src_key_padding_mask=attention_mask == 0)
        return x, self.pooler(x[:, 0])


model = RobertaModel(**CONFIG)
model.eval()
inputs = {
    # Ids 0-3 are <s>, <pad>, </s>, <unk>: draw ordinary tokens.
    "input_ids": torch.randint(4, CONFIG["vocab_size"], (batch_size, max_seq_length)),
    "attention_mask": torch.ones(batch_size, max_seq_length, dtype=torch.int64),
}

with torch.no_grad():
    sequence_output, pooled_output = model(**inputs)
print("parameters: %.1fM" % (sum(p.numel() for p in model.parameters()) / 1e6))
print("sequence output:", tuple(sequence_output.shape),
      "pooled output:", tuple(pooled_output.shape))
