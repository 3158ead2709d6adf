# labels: test_group::transformers_like name::t5_small author::google task::Natural_Language_Processing license::mit
"""
T5-small-like encoder-decoder (Raffel et al. 2019, https://arxiv.org/abs/1910.10683;
configuration of https://huggingface.co/t5-small): 6 encoder and 6 decoder layers, d_model 512,
8 heads, feed-forward 2048, ReLU, pre-LayerNorm, vocabulary 32128 shared by encoder, decoder and
the tied language-model head, no absolute positions: a learned relative position bias (32
buckets, max distance 128; bidirectional in the encoder, causal in the decoder) computed once and
added to the attention scores of every layer. Differs from the published model in its norms and
projections: nn.LayerNorm and biased linear layers where T5 has RMSNorm and no biases.

Re-implemented from torch.nn modules (nn.Transformer; the relative position bias travels as a
per-head float attention mask), random weights: the architecture and sizes of the published
model (about 60M parameters), not its weights.
"""
import math

from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

batch_size, max_seq_length = parse(["batch_size", "max_seq_length"])

CONFIG = dict(vocab_size=32128, d_model=512, layers=6, heads=8, ffn=2048, buckets=32,
              max_distance=128)


def relative_position_bucket(relative_position, bidirectional, buckets, max_distance):
    """T5's bucketing: exact buckets for small distances, logarithmic ones up to max_distance."""
    result = torch.zeros_like(relative_position)
    if bidirectional:
        buckets //= 2
        result += (relative_position > 0).long() * buckets
        distance = relative_position.abs()
    else:
        distance = -torch.clamp(relative_position, max=0)
    exact = buckets // 2
    is_small = distance < exact
    large = exact + (torch.log(distance.float().clamp(min=1) / exact)
                     / math.log(max_distance / exact) * (buckets - exact)).long()
    large = torch.clamp(large, max=buckets - 1)
    return result + torch.where(is_small, distance, large)


class RelativePositionBias(torch.nn.Module):
    def __init__(self, heads, buckets, max_distance, bidirectional):
        super().__init__()
        self.heads, self.buckets, self.max_distance = heads, buckets, max_distance
        self.bidirectional = bidirectional
        self.bias = torch.nn.Embedding(buckets, heads)

    def forward(self, query_length, key_length, batch_size, device):
        """A float mask (batch * heads, query_length, key_length) for nn.MultiheadAttention."""
        context = torch.arange(query_length, device=device)[:, None]
        memory = torch.arange(key_length, device=device)[None, :]
        bucket = relative_position_bucket(memory - context, self.bidirectional, self.buckets,
                                          self.max_distance)
        bias = self.bias(bucket).permute(2, 0, 1)  # heads, query, key
        return bias.repeat(batch_size, 1, 1)


class T5Model(torch.nn.Module):
    def __init__(self, vocab_size, d_model, layers, heads, ffn, buckets, max_distance,
                 dropout=0.1):
        super().__init__()
        self.shared = torch.nn.Embedding(vocab_size, d_model)
        self.encoder_bias = RelativePositionBias(heads, buckets, max_distance, bidirectional=True)
        self.decoder_bias = RelativePositionBias(heads, buckets, max_distance, bidirectional=False)
        self.dropout = torch.nn.Dropout(dropout)
        self.transformer = torch.nn.Transformer(d_model, heads, layers, layers, ffn, dropout,
                                                activation="relu", batch_first=True,
                                                norm_first=True)
        self.lm_head = torch.nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.shared.weight  # tied, as in T5
        self.d_model = d_model

    def forward(self, input_ids, decoder_input_ids):
        batch, source_length = input_ids.shape
        target_length = decoder_input_ids.shape[1]
        source = self.dropout(self.shared(input_ids))
        target = self.dropout(self.shared(decoder_input_ids))
        src_mask = self.encoder_bias(source_length, source_length, batch, input_ids.device)
        causal = torch.triu(torch.full((target_length, target_length), float("-inf"),
                                       device=input_ids.device), 1)
        tgt_mask = self.decoder_bias(target_length, target_length, batch, input_ids.device) + causal
        hidden = self.transformer(source, target, src_mask=src_mask, tgt_mask=tgt_mask)
        return self.lm_head(hidden * self.d_model ** -0.5)  # T5 rescales before the tied head


model = T5Model(**CONFIG)
model.eval()
inputs = {
    "input_ids": torch.randint(0, CONFIG["vocab_size"], (batch_size, max_seq_length)),
    "decoder_input_ids": torch.randint(0, CONFIG["vocab_size"], (batch_size, max_seq_length)),
}

with torch.no_grad():
    logits = model(**inputs)
print("parameters: %.1fM" % (sum(p.numel() for p in model.parameters()) / 1e6))
print("logits:", tuple(logits.shape))
