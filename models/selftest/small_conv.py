# labels: test_group::selftest name::small_conv author::turnkey task::Test license::mit
"""
A small convolutional classifier (two Conv2d + BatchNorm + ReLU blocks, max pooling, global
average pooling, a Linear head) on 32x32 images, random weights. Written for turnkey's selftest
corpus.
"""
from turnkeyml.parser import parse
import torch

torch.manual_seed(0)

batch_size, num_channels = parse(["batch_size", "num_channels"])
height, width = 32, 32  # CIFAR-sized: the corpus default of 224 would slow the selftest down


class SmallConv(torch.nn.Module):
    def __init__(self, in_channels, num_classes):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(in_channels, 16, kernel_size=3, padding=1),
            torch.nn.BatchNorm2d(16),
            torch.nn.ReLU(),
            torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(16, 32, kernel_size=3, padding=1),
            torch.nn.BatchNorm2d(32),
            torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = torch.nn.Linear(32, num_classes)

    def forward(self, images):
        return self.classifier(torch.flatten(self.features(images), 1))


model = SmallConv(num_channels, 10)
model.eval()
inputs = {"images": torch.rand(batch_size, num_channels, height, width)}

with torch.no_grad():
    out = model(**inputs)
print("output shape:", tuple(out.shape))
