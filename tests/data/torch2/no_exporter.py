"""A forward neither exporter can write: a branch on its values stops torch.export (the dynamo
exporter), and torch.linalg.eigh has no TorchScript exporter symbolic. --exporter auto tries
both; the build's one line names each one's reason."""
import torch

torch.manual_seed(0)


class Spectrum(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.a(x)
        if int(y.argmax()) % 2 == 0:  # a Python int of a tensor value: no graph holds it
            y = y * 2
        return torch.linalg.eigh(y.T @ y).eigenvalues


model = Spectrum()
model(torch.rand(1, 4))
