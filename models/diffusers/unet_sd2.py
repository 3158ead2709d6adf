# labels: test_group::diffusers name::unet_sd2 author::huggingface task::Generative_AI subtask::Denoising_UNet license::creativeml-openrail-m
"""
diffusers.UNet2DConditionModel with Stable Diffusion 2.x's UNet configuration
(stabilityai/stable-diffusion-2-1 unet/config.json: 96x96 latents for 768x768 images,
attention_head_dim 5/10/20/20, linear projections, cross-attention to 1024-wide OpenCLIP
ViT-H/14 text states), random weights, no download.

One denoising step: latents (batch, 4, 96, 96), a timestep, 77 text states.
"""
from turnkeyml.parser import parse
import diffusers
import torch

torch.manual_seed(0)

batch_size = parse(["batch_size"])[0]

unet = diffusers.UNet2DConditionModel(sample_size=96, in_channels=4, out_channels=4,
                                      cross_attention_dim=1024, attention_head_dim=(5, 10, 20, 20),
                                      use_linear_projection=True)
unet.eval()
latents = torch.randn(batch_size, 4, 96, 96)
text_states = torch.randn(batch_size, 77, 1024)

with torch.no_grad():
    noise = unet(latents, torch.tensor([999]), encoder_hidden_states=text_states).sample
print("noise prediction:", tuple(noise.shape))
