# labels: test_group::diffusers name::controlnet_sd15 author::huggingface task::Generative_AI subtask::ControlNet license::creativeml-openrail-m
"""
diffusers.ControlNetModel with the Stable Diffusion 1.x ControlNet configuration
(lllyasviel/sd-controlnet-canny config.json: the SD 1.x UNet's encoder, cross-attention to
768-wide text states, a conditioning image 8x the latent size), random weights, no download.

One step: latents (batch, 4, 64, 64), a timestep, 77 text states and a 512x512 conditioning
image, to the residuals added to the UNet's skip connections.
"""
from turnkeyml.parser import parse
import diffusers
import torch

torch.manual_seed(0)

batch_size = parse(["batch_size"])[0]

controlnet = diffusers.ControlNetModel(cross_attention_dim=768, attention_head_dim=8)
controlnet.eval()
latents = torch.randn(batch_size, 4, 64, 64)
text_states = torch.randn(batch_size, 77, 768)
condition = torch.rand(batch_size, 3, 512, 512)

with torch.no_grad():
    out = controlnet(latents, torch.tensor([999]), encoder_hidden_states=text_states,
                     controlnet_cond=condition)
print("%d down residuals, mid:" % len(out.down_block_res_samples),
      tuple(out.mid_block_res_sample.shape))
