# labels: test_group::diffusers name::vae_decoder author::huggingface task::Generative_AI subtask::Autoencoder license::creativeml-openrail-m
"""
The decoder of diffusers.AutoencoderKL with Stable Diffusion's VAE configuration
(stabilityai/sd-vae-ft-mse config.json: block_out_channels 128/256/512/512, 2 layers per block,
4 latent channels, scale factor 8), random weights, no download. Called as the pipelines call it
(`vae.decoder`), without the quant convolutions around it.

Latents (batch, 4, height/8, width/8) to images (batch, 3, height, width); --height/--width
(default 224, multiples of 8).
"""
from turnkeyml.parser import parse
import diffusers
import torch

torch.manual_seed(0)

batch_size, height, width = parse(["batch_size", "height", "width"])

vae = diffusers.AutoencoderKL(
    in_channels=3, out_channels=3, latent_channels=4, layers_per_block=2,
    block_out_channels=(128, 256, 512, 512),
    down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4)
vae.eval()
latents = torch.randn(batch_size, 4, height // 8, width // 8)

with torch.no_grad():
    images = vae.decoder(latents)
print("images:", tuple(images.shape))
