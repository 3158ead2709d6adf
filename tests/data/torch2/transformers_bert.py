# labels: test_group::torch2 author::huggingface
"""transformers' BertModel built from a configuration (random weights, no download), called as
the library's users call it: keyword arguments, an attention mask, a ModelOutput returned.

    python tests/data/torch2/transformers_bert.py [--batch_size N] [--max_seq_length N] [--base]

The default is a small BERT (2 layers, hidden 128) so the test suite stays fast; --base builds
bert-base-uncased's configuration (12 layers, hidden 768), transformers' BertConfig() defaults."""
import argparse

from turnkeyml.parser import parse
import torch
import transformers

torch.manual_seed(0)
batch_size, max_seq_length = parse(["batch_size", "max_seq_length"])
base = argparse.ArgumentParser(add_help=False)
base.add_argument("--base", action="store_true")
options, _ = base.parse_known_args()
small = dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=2, intermediate_size=512)
config = transformers.BertConfig(**({} if options.base else small))
model = transformers.BertModel(config).eval()

input_ids = torch.randint(0, config.vocab_size, (batch_size, max_seq_length))
attention_mask = torch.ones(batch_size, max_seq_length, dtype=torch.long)
with torch.no_grad():
    outputs = model(input_ids=input_ids, attention_mask=attention_mask)
print("last_hidden_state:", tuple(outputs.last_hidden_state.shape))
