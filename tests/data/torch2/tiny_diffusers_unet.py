# labels: test_group::torch2 author::huggingface
"""diffusers' UNet2DModel in a tiny configuration (random weights, no download): called with
keyword arguments, it returns a UNet2DOutput (diffusers' BaseOutput, a dataclass and a dict)."""
import diffusers
import torch

torch.manual_seed(0)
unet = diffusers.UNet2DModel(sample_size=16, in_channels=3, out_channels=3, layers_per_block=1,
                             block_out_channels=(8, 16), norm_num_groups=4,
                             down_block_types=("DownBlock2D", "AttnDownBlock2D"),
                             up_block_types=("AttnUpBlock2D", "UpBlock2D")).eval()
with torch.no_grad():
    noise = unet(sample=torch.rand(1, 3, 16, 16), timestep=torch.tensor([10])).sample
print("sample:", tuple(noise.shape))
