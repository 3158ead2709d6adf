# labels: test_group::torch2 author::huggingface
"""transformers' MixtralForCausalLM (2 layers, 4 experts of which each token takes 2, hidden 32,
random weights, no download). transformers 5 runs the experts through its `grouped_mm` kernel,
on CPU a custom op (torch.ops.transformers.grouped_mm_fallback) that torch.onnx's translation
table lacks; transformers' own ONNX exporter translates it, and turnkey passes its table to the
dynamo exporter for transformers models."""
import torch
import transformers

torch.manual_seed(0)
config = transformers.MixtralConfig(
    vocab_size=1000, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
    num_attention_heads=2, num_key_value_heads=1, num_local_experts=4, num_experts_per_tok=2,
    max_position_embeddings=64)
model = transformers.MixtralForCausalLM(config).eval()
tokens = torch.randint(0, 1000, (1, 16))
with torch.no_grad():
    out = model(input_ids=tokens, attention_mask=torch.ones_like(tokens))
print("logits:", tuple(out.logits.shape))
