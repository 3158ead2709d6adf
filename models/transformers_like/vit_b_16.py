# labels: test_group::transformers_like name::vit_b_16 author::google task::Computer_Vision license::mit
"""
ViT-B/16 (Dosovitskiy et al. 2020, https://arxiv.org/abs/2010.11929; configuration of
https://huggingface.co/google/vit-base-patch16-224): 16x16 patches embedded by a strided
convolution, a class token and learned positions, 12 pre-LayerNorm encoder layers (hidden 768,
12 heads, MLP 3072, GELU, eps 1e-12), a final LayerNorm and a 1000-class head on the class token.

Re-implemented from torch.nn modules (nn.Conv2d + nn.TransformerEncoder), random weights: the
architecture and sizes of the published model (about 86M parameters), not its weights. The
number of positions follows --height/--width (multiples of 16; 224x224 by default).
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

batch_size, num_channels, height, width = parse(["batch_size", "num_channels", "height", "width"])

CONFIG = dict(patch=16, hidden=768, layers=12, heads=12, mlp=3072, num_classes=1000, eps=1e-12)


class VisionTransformer(torch.nn.Module):
    def __init__(self, image_size, channels, patch, hidden, layers, heads, mlp, num_classes, eps,
                 dropout=0.0):
        super().__init__()
        patches = (image_size[0] // patch) * (image_size[1] // patch)
        self.patch_embedding = torch.nn.Conv2d(channels, hidden, kernel_size=patch, stride=patch)
        self.class_token = torch.nn.Parameter(torch.zeros(1, 1, hidden))
        self.positions = torch.nn.Parameter(torch.randn(1, patches + 1, hidden) * 0.02)
        layer = torch.nn.TransformerEncoderLayer(hidden, heads, mlp, dropout, activation="gelu",
                                                 layer_norm_eps=eps, batch_first=True,
                                                 norm_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, layers,
                                                   norm=torch.nn.LayerNorm(hidden, eps=eps),
                                                   enable_nested_tensor=False)
        self.head = torch.nn.Linear(hidden, num_classes)

    def forward(self, pixel_values):
        x = self.patch_embedding(pixel_values).flatten(2).transpose(1, 2)  # batch, patches, hidden
        x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1) + self.positions
        return self.head(self.encoder(x)[:, 0])


model = VisionTransformer((height, width), num_channels, **CONFIG)
model.eval()
inputs = {"pixel_values": torch.rand(batch_size, num_channels, height, width)}

with torch.no_grad():
    logits = model(**inputs)
print("parameters: %.1fM" % (sum(p.numel() for p in model.parameters()) / 1e6))
print("logits:", tuple(logits.shape))
