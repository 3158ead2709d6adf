"""A region-of-interest head as torchvision's R-CNNs have it: roi_align with aligned=False over a
small feature map, then a linear layer. torchvision 0.14 exports roi_align without the opset-16
coordinate_transformation_mode, so at opset 17 ONNX Runtime sampled half a pixel off; turnkey's
exporter fix writes the mode."""
import torch
import torchvision

torch.manual_seed(0)


class RoiHead(torch.nn.Module):
    def __init__(self, aligned):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8 * 4 * 4, 5)
        self.aligned = aligned

    def forward(self, image, boxes):
        features = self.conv(image)
        pooled = torchvision.ops.roi_align(features, [boxes], output_size=(4, 4),
                                           spatial_scale=0.5, sampling_ratio=2,
                                           aligned=self.aligned)
        return self.fc(pooled.flatten(1))


image = torch.rand(1, 3, 32, 32)
boxes = torch.tensor([[1.3, 2.7, 20.1, 25.4], [0.0, 0.0, 31.0, 31.0], [5.5, 9.25, 12.0, 14.5]])
unaligned = RoiHead(aligned=False)
aligned = RoiHead(aligned=True)
with torch.no_grad():
    print(unaligned(image, boxes).shape, aligned(image, boxes).shape)
