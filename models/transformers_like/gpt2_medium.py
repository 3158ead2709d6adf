# labels: test_group::transformers_like name::gpt2_medium author::openai task::Natural_Language_Processing license::mit
"""
GPT-2 medium (Radford et al. 2019, "Language Models are Unsupervised Multitask Learners";
configuration of https://huggingface.co/gpt2-medium): decoder-only, 24 layers, hidden 1024, 16
heads, feed-forward 4096, GELU (tanh approximation), pre-LayerNorm (eps 1e-5) with a final
LayerNorm, vocabulary 50257, 1024 learned positions, causal self-attention, language-model head
tied to the token embedding.

Re-implemented from torch.nn modules (nn.TransformerEncoderLayer with norm_first and a causal
mask is GPT-2's block), random weights: the architecture and sizes of the published model
(about 355M parameters), not its weights.
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

batch_size, max_seq_length = parse(["batch_size", "max_seq_length"])

CONFIG = dict(vocab_size=50257, hidden=1024, layers=24, heads=16, max_positions=1024)


class GPT2LMHeadModel(torch.nn.Module):
    def __init__(self, vocab_size, hidden, layers, heads, max_positions, dropout=0.1):
        super().__init__()
        self.wte = torch.nn.Embedding(vocab_size, hidden)
        self.wpe = torch.nn.Embedding(max_positions, hidden)
        self.dropout = torch.nn.Dropout(dropout)
        block = torch.nn.TransformerEncoderLayer(
            hidden, heads, 4 * hidden, dropout, activation=torch.nn.GELU(approximate="tanh"),
            layer_norm_eps=1e-5, batch_first=True, norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(block, layers, norm=torch.nn.LayerNorm(hidden),
                                                  enable_nested_tensor=False)
        self.lm_head = torch.nn.Linear(hidden, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied, as in GPT-2

    def forward(self, input_ids):
        length = input_ids.shape[1]
        positions = torch.arange(length, device=input_ids.device).unsqueeze(0)
        x = self.dropout(self.wte(input_ids) + self.wpe(positions))
        causal = torch.triu(torch.full((length, length), float("-inf"), device=x.device), 1)
        return self.lm_head(self.blocks(x, mask=causal))


model = GPT2LMHeadModel(**CONFIG)
model.eval()
inputs = {"input_ids": torch.randint(0, CONFIG["vocab_size"], (batch_size, max_seq_length))}

with torch.no_grad():
    logits = model(**inputs)
print("parameters: %.1fM" % (sum(p.numel() for p in model.parameters()) / 1e6))
print("logits:", tuple(logits.shape))
