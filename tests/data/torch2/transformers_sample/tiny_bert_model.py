# labels: test_group::transformers_sample name::tiny_bert_model author::huggingface task::Natural_Language_Processing model_type::bert license::apache-2.0
"""
transformers.BertModel(transformers.BertConfig(...)):
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

config = transformers.BertConfig(
    num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128,
    vocab_size=1000
)
model = transformers.BertModel(config)
model.eval()
inputs = transformers_inputs(model, batch_size, max_seq_length)

with torch.no_grad():
    outputs = model(**inputs)
print("BertModel:", type(outputs).__name__)
