"""Two models whose graphs hold a range of float bounds: a tiny Idefics 3 vision tower, whose
patch positions bucket against torch.arange(1/7, 1.0, 1/7), and that range beside one of a
traced size. torch counts a float range in double precision (7 elements here), torchlib's Range
in float32 (6), which the ONNX checker refuses against the shape torch recorded; turnkey's
translation writes the range torch made as a constant (python/turnkeyml/discovery/translations.py)
and leaves a range of a traced size to torchlib's Range."""
import torch, transformers
torch.manual_seed(0)


class FloatRange(torch.nn.Module):
    def forward(self, x):
        boundaries = torch.arange(1 / 7, 1.0, 1 / 7)
        positions = torch.arange(x.shape[-1], dtype=torch.float32) / x.shape[-1]
        return torch.bucketize(x, boundaries, right=True) + positions


config = transformers.Idefics3VisionConfig(hidden_size=32, intermediate_size=64,
                                           num_hidden_layers=1, num_attention_heads=2)
tower = transformers.Idefics3VisionTransformer(config).eval()
with torch.no_grad():
    tower(pixel_values=torch.rand(1, 3, 224, 224))
    FloatRange()(torch.rand(2, 9))
