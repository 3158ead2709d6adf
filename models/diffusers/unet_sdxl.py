# labels: test_group::diffusers name::unet_sdxl author::huggingface task::Generative_AI subtask::Denoising_UNet license::creativeml-openrail-m
"""
diffusers.UNet2DConditionModel with Stable Diffusion XL's UNet configuration
(stabilityai/stable-diffusion-xl-base-1.0 unet/config.json: 128x128 latents, three levels of
320/640/1280 channels with 0/2/10 transformer layers, cross-attention to 2048-wide text states,
the "text_time" added conditioning), random weights, no download. 2.6 B parameters: 10.3 GB in
float32, more than an 8 GB --memory-limit allows.

One denoising step: latents (batch, 4, 128, 128), a timestep, 77 text states, pooled text
embeddings and the six size/crop conditioning values.
"""
from turnkeyml.parser import parse
import diffusers
import torch

torch.manual_seed(0)

batch_size = parse(["batch_size"])[0]

unet = diffusers.UNet2DConditionModel(
    sample_size=128, in_channels=4, out_channels=4, cross_attention_dim=2048,
    block_out_channels=(320, 640, 1280), layers_per_block=2, attention_head_dim=(5, 10, 20),
    transformer_layers_per_block=(1, 2, 10), use_linear_projection=True,
    down_block_types=("DownBlock2D", "CrossAttnDownBlock2D", "CrossAttnDownBlock2D"),
    up_block_types=("CrossAttnUpBlock2D", "CrossAttnUpBlock2D", "UpBlock2D"),
    addition_embed_type="text_time", addition_time_embed_dim=256,
    projection_class_embeddings_input_dim=2816)
unet.eval()
latents = torch.randn(batch_size, 4, 128, 128)
text_states = torch.randn(batch_size, 77, 2048)
added = {"text_embeds": torch.randn(batch_size, 1280),
         "time_ids": torch.tensor([[1024.0, 1024.0, 0.0, 0.0, 1024.0, 1024.0]] * batch_size)}

with torch.no_grad():
    noise = unet(latents, torch.tensor([999]), encoder_hidden_states=text_states,
                 added_cond_kwargs=added).sample
print("noise prediction:", tuple(noise.shape))
