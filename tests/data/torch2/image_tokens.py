"""A tiny LLaVA called with an image and its 16 image tokens (a 32-pixel image in patches of 8):
transformers checks that the tokens match the image features with torch._check_tensor_all, which
torch.export leaves as aten._is_all_true, an op torch 2.15's dynamo exporter cannot translate;
turnkey's own translation (python/turnkeyml/discovery/translations.py) lets the dynamo exporter write it."""
import torch, transformers
torch.manual_seed(0)
config = transformers.LlavaConfig(
    text_config=dict(model_type="llama", vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1),
    vision_config=dict(model_type="clip_vision_model", hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, image_size=32, patch_size=8, projection_dim=32),
    image_token_index=64, vision_feature_layer=-1)
model = transformers.LlavaModel(config).eval()
ids = torch.cat([torch.full((1, 16), 64), torch.randint(0, 60, (1, 8))], 1)
with torch.no_grad():
    model(input_ids=ids, attention_mask=torch.ones_like(ids), pixel_values=torch.rand(1, 3, 32, 32))
