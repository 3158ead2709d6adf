# labels: test_group::diffusers name::unet_sd15 author::huggingface task::Generative_AI subtask::Denoising_UNet license::creativeml-openrail-m
"""
diffusers.UNet2DConditionModel with Stable Diffusion 1.x's UNet configuration
(runwayml/stable-diffusion-v1-5 unet/config.json: 4 latent channels, 64x64 latents,
block_out_channels 320/640/1280/1280, 2 layers per block, 8 attention heads, cross-attention to
768-wide CLIP ViT-L/14 text states), random weights, no download.

One denoising step: latents (batch, 4, 64, 64), a timestep, 77 text states.
"""
from turnkeyml.parser import parse
import diffusers
import torch

torch.manual_seed(0)

batch_size = parse(["batch_size"])[0]

unet = diffusers.UNet2DConditionModel(sample_size=64, in_channels=4, out_channels=4,
                                      cross_attention_dim=768, attention_head_dim=8)
unet.eval()
latents = torch.randn(batch_size, 4, 64, 64)
text_states = torch.randn(batch_size, 77, 768)

with torch.no_grad():
    noise = unet(latents, torch.tensor([999]), encoder_hidden_states=text_states).sample
print("noise prediction:", tuple(noise.shape))
