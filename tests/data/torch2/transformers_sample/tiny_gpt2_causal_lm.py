# labels: test_group::transformers_sample name::tiny_gpt2_causal_lm author::huggingface task::Natural_Language_Processing model_type::gpt2 license::apache-2.0
"""
transformers.GPT2LMHeadModel(transformers.GPT2Config(...)):
a tiny configuration of the corpus's class, random
weights, no download (the CI sample of models/transformers, docs/corpus.md).

The script is a models/transformers script with a smaller configuration: the same template and
the same inputs (turnkeyml.corpus_inputs), so the CI run meets the corpus's code paths.
"""
from turnkeyml.parser import parse
from turnkeyml.corpus_inputs import transformers_inputs
import torch
import transformers

torch.manual_seed(0)

batch_size, max_seq_length = parse(["batch_size", "max_seq_length"])

config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=1000, n_positions=128)
model = transformers.GPT2LMHeadModel(config)
model.eval()
inputs = transformers_inputs(model, batch_size, max_seq_length)

with torch.no_grad():
    outputs = model(**inputs)
print("GPT2LMHeadModel:", type(outputs).__name__)
