# labels: test_group::torch2 author::huggingface
"""transformers' GPT2LMHeadModel (2 layers, hidden 64, random weights, no download) generating 6
tokens greedily: generate() calls the model once with an empty DynamicCache (the prompt) and then
once per new token with the filled cache. turnkey builds the first call from a copy of its inputs
taken before the model ran; the decode steps count for it."""
import torch
import transformers

torch.manual_seed(0)
config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=1000, n_positions=64,
                                 bos_token_id=0, eos_token_id=0)
model = transformers.GPT2LMHeadModel(config).eval()
prompt = torch.randint(1, 1000, (1, 8))
with torch.no_grad():
    tokens = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=6,
                            min_new_tokens=6, do_sample=False, pad_token_id=0)
print("tokens:", tuple(tokens.shape))
