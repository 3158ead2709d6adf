# labels: test_group::diffusers name::clip_text_encoder author::huggingface task::Generative_AI subtask::Text_Encoder license::creativeml-openrail-m
"""
transformers.CLIPTextModel with Stable Diffusion 1.x's text encoder configuration (CLIP
ViT-L/14's text tower, runwayml/stable-diffusion-v1-5 text_encoder/config.json: 12 layers,
hidden 768, 12 heads, 77 positions, quick_gelu), random weights, no download.

77 token ids (the pipelines pad every prompt to 77) to the text states the UNet attends to.
"""
from turnkeyml.parser import parse
import torch
import transformers

torch.manual_seed(0)

batch_size = parse(["batch_size"])[0]

config = transformers.CLIPTextConfig(hidden_size=768, intermediate_size=3072,
                                     num_attention_heads=12, num_hidden_layers=12,
                                     projection_dim=768, max_position_embeddings=77)
text_encoder = transformers.CLIPTextModel(config)
text_encoder.eval()
input_ids = torch.randint(0, config.vocab_size, (batch_size, 77))

with torch.no_grad():
    states = text_encoder(input_ids=input_ids).last_hidden_state
print("text states:", tuple(states.shape))
