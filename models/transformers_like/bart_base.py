# labels: test_group::transformers_like name::bart_base author::facebook task::Natural_Language_Processing license::mit
"""
BART-base (Lewis et al. 2019, https://arxiv.org/abs/1910.13461; configuration of
https://huggingface.co/facebook/bart-base): encoder-decoder, 6 encoder and 6 decoder layers,
d_model 768, 12 heads, feed-forward 3072, GELU, post-LayerNorm, a LayerNorm on the embeddings,
vocabulary 50265 shared by encoder, decoder and the tied language-model head, 1024 learned
positions (offset by 2, as in fairseq), final logits bias.

Re-implemented from torch.nn modules (nn.Embedding + nn.Transformer with BART's post-norm layers
and no final encoder/decoder norms), random weights: the architecture and sizes of the published
model (about 140M parameters), not its weights.
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

batch_size, max_seq_length = parse(["batch_size", "max_seq_length"])

CONFIG = dict(vocab_size=50265, d_model=768, layers=6, heads=12, ffn=3072, max_positions=1024,
              padding_idx=1)
POSITION_OFFSET = 2


class BartModel(torch.nn.Module):
    def __init__(self, vocab_size, d_model, layers, heads, ffn, max_positions, padding_idx,
                 dropout=0.1):
        super().__init__()
        self.shared = torch.nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)
        self.encoder_positions = torch.nn.Embedding(max_positions + POSITION_OFFSET, d_model)
        self.decoder_positions = torch.nn.Embedding(max_positions + POSITION_OFFSET, d_model)
        self.encoder_embedding_norm = torch.nn.LayerNorm(d_model)
        self.decoder_embedding_norm = torch.nn.LayerNorm(d_model)
        self.dropout = torch.nn.Dropout(dropout)
        encoder_layer = torch.nn.TransformerEncoderLayer(d_model, heads, ffn, dropout,
                                                         activation="gelu", batch_first=True)
        decoder_layer = torch.nn.TransformerDecoderLayer(d_model, heads, ffn, dropout,
                                                         activation="gelu", batch_first=True)
        self.transformer = torch.nn.Transformer(
            d_model, heads, batch_first=True,
            custom_encoder=torch.nn.TransformerEncoder(encoder_layer, layers,
                                                       enable_nested_tensor=False),
            custom_decoder=torch.nn.TransformerDecoder(decoder_layer, layers))
        self.lm_head = torch.nn.Linear(d_model, vocab_size, bias=False)
        self.lm_head.weight = self.shared.weight  # tied, as in BART
        self.register_buffer("final_logits_bias", torch.zeros(1, vocab_size))

    def embed(self, ids, positions, norm):
        offsets = torch.arange(ids.shape[1], device=ids.device) + POSITION_OFFSET
        return self.dropout(norm(self.shared(ids) + positions(offsets)))

    def forward(self, input_ids, attention_mask, decoder_input_ids):
        source = self.embed(input_ids, self.encoder_positions, self.encoder_embedding_norm)
        target = self.embed(decoder_input_ids, self.decoder_positions,
                            self.decoder_embedding_norm)
        length = decoder_input_ids.shape[1]
        causal = torch.triu(torch.full((length, length), float("-inf"),
                                       device=input_ids.device), 1)
        padding = attention_mask == 0
        hidden = self.transformer(source, target, tgt_mask=causal, src_key_padding_mask=padding,
                                  memory_key_padding_mask=padding)
        return self.lm_head(hidden) + self.final_logits_bias


model = BartModel(**CONFIG)
model.eval()
inputs = {
    # Ids 0-3 are <s>, <pad>, </s>, <unk>: draw ordinary tokens.
    "input_ids": torch.randint(4, CONFIG["vocab_size"], (batch_size, max_seq_length)),
    "attention_mask": torch.ones(batch_size, max_seq_length, dtype=torch.int64),
    "decoder_input_ids": torch.randint(4, CONFIG["vocab_size"], (batch_size, max_seq_length)),
}

with torch.no_grad():
    logits = model(**inputs)
print("parameters: %.1fM" % (sum(p.numel() for p in model.parameters()) / 1e6))
print("logits:", tuple(logits.shape))
