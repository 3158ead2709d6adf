# labels: test_group::transformers_sample name::tiny_whisper_model author::huggingface task::Audio model_type::whisper license::apache-2.0
"""
transformers.WhisperModel(transformers.WhisperConfig(...)):
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

config = transformers.WhisperConfig(
    encoder_layers=2, decoder_layers=2, d_model=64, encoder_attention_heads=2,
    decoder_attention_heads=2, encoder_ffn_dim=128, decoder_ffn_dim=128, num_mel_bins=80,
    max_source_positions=50, max_target_positions=64
)
model = transformers.WhisperModel(config)
model.eval()
inputs = transformers_inputs(model, batch_size, max_seq_length)

with torch.no_grad():
    outputs = model(**inputs)
print("WhisperModel:", type(outputs).__name__)
