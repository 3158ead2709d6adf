# labels: test_group::diffusers name::dit_xl_2 author::huggingface task::Generative_AI subtask::Diffusion_Transformer license::creativeml-openrail-m
"""
diffusers.DiTTransformer2DModel with its defaults: DiT-XL/2 (facebook/DiT-XL-2-256
transformer/config.json: 28 layers, 16 heads of 72, patch 2, 32x32 latents of 4 channels,
1000 ImageNet classes), random weights, no download.

One denoising step: latents (batch, 4, 32, 32), a timestep per sample and a class label.
"""
from turnkeyml.parser import parse
import diffusers
import torch

torch.manual_seed(0)

batch_size = parse(["batch_size"])[0]

dit = diffusers.DiTTransformer2DModel()
dit.eval()
latents = torch.randn(batch_size, 4, 32, 32)
timesteps = torch.full((batch_size,), 999)
labels = torch.randint(0, 1000, (batch_size,))

with torch.no_grad():
    noise = dit(latents, timestep=timesteps, class_labels=labels).sample
print("noise prediction:", tuple(noise.shape))
