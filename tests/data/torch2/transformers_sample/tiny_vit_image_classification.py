# labels: test_group::transformers_sample name::tiny_vit_image_classification author::huggingface task::Computer_Vision model_type::vit license::apache-2.0
"""
transformers.ViTForImageClassification(transformers.ViTConfig(...)):
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

config = transformers.ViTConfig(
    num_hidden_layers=2, hidden_size=64, num_attention_heads=2, intermediate_size=128,
    image_size=64, patch_size=16, num_labels=10
)
model = transformers.ViTForImageClassification(config)
model.eval()
inputs = transformers_inputs(model, batch_size, max_seq_length)

with torch.no_grad():
    outputs = model(**inputs)
print("ViTForImageClassification:", type(outputs).__name__)
