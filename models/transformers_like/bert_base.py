# labels: test_group::transformers_like name::bert_base author::google task::Natural_Language_Processing license::mit
"""
BERT-base (Devlin et al. 2018, https://arxiv.org/abs/1810.04805; configuration of
https://huggingface.co/bert-base-uncased): 12 layers, hidden 768, 12 heads, feed-forward 3072,
vocabulary 30522, 512 positions, 2 token types, GELU, post-LayerNorm (eps 1e-12), tanh pooler.

Re-implemented from torch.nn modules (nn.Embedding + nn.TransformerEncoder), random weights: the
architecture and sizes of the published model (about 110M parameters), not its weights.
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

batch_size, max_seq_length = parse(["batch_size", "max_seq_length"])

CONFIG = dict(vocab_size=30522, hidden=768, layers=12, heads=12, ffn=3072, max_positions=512,
              type_vocab_size=2, eps=1e-12)


class BertModel(torch.nn.Module):
    def __init__(self, vocab_size, hidden, layers, heads, ffn, max_positions, type_vocab_size,
                 eps, dropout=0.1):
        super().__init__()
        self.word_embeddings = torch.nn.Embedding(vocab_size, hidden, padding_idx=0)
        self.position_embeddings = torch.nn.Embedding(max_positions, hidden)
        self.token_type_embeddings = torch.nn.Embedding(type_vocab_size, hidden)
        self.embedding_norm = torch.nn.LayerNorm(hidden, eps=eps)
        self.dropout = torch.nn.Dropout(dropout)
        layer = torch.nn.TransformerEncoderLayer(hidden, heads, ffn, dropout, activation="gelu",
                                                 layer_norm_eps=eps, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pooler = torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.Tanh())

    def forward(self, input_ids, attention_mask, token_type_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        x = (self.word_embeddings(input_ids) + self.position_embeddings(positions)
             + self.token_type_embeddings(token_type_ids))
        x = self.dropout(self.embedding_norm(x))
        x = self.encoder(x, src_key_padding_mask=attention_mask == 0)
        return x, self.pooler(x[:, 0])


model = BertModel(**CONFIG)
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
