# labels: test_group::torch2
"""A model with a weight-normalised convolution (torch.nn.utils.parametrizations.weight_norm, as
transformers' Wav2Vec2 has): torch computes the weight through a ParametrizationList module, at
construction too (here: the weight's shape is read in __init__). One model is discovered: the Net, not torch's parametrization."""
import torch

torch.manual_seed(0)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.utils.parametrizations.weight_norm(torch.nn.Conv1d(4, 4, 3, padding=1))
        self.fan_in = self.conv.weight.shape[1]  # read at construction, as weight initialisers do

    def forward(self, x):
        return self.conv(x).relu()


model = Net().eval()
with torch.no_grad():
    model(torch.rand(1, 4, 16))
