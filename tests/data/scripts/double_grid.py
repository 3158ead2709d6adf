# labels: test_group::exporter_fixes author::turnkey
"""grid_sample over a grid built from the input's traced sizes (torch.linspace over a shape, as
Mask2Former's and OneFormer's deformable attention build their reference points): PyTorch
computes the grid in float32, the TorchScript exporter types it double beside the float input,
and ONNX Runtime has no GridSample kernel for that pair without turnkey's exporter fix
(python/turnkeyml/discovery/exporter_fixes.py, grid_sampler_grid_type)."""
import torch

torch.manual_seed(0)


class SampledGrid(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        h, w = x.shape[-2:]
        ys = torch.linspace(0.5, h - 0.5, h, dtype=x.dtype) / h
        xs = torch.linspace(0.5, w - 0.5, w, dtype=x.dtype) / w
        gy, gx = torch.meshgrid(ys, xs, indexing="ij")
        grid = 2 * torch.stack([gx, gy], -1)[None].expand(x.shape[0], h, w, 2) - 1
        return torch.nn.functional.grid_sample(self.conv(x), grid * 0.9, align_corners=False)


model = SampledGrid().eval()
with torch.no_grad():
    model(torch.randn(2, 3, 8, 8))
