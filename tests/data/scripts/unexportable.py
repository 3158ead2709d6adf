"""Two models: `exportable` is fine; `svd_model` uses an op torch 1.13 cannot export to ONNX
(linalg_svd). The export failure is reported on its model; the other is still benchmarked."""
import torch

torch.manual_seed(0)


class SvdModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)

    def forward(self, x):
        return torch.linalg.svd(self.fc(x))[1]


exportable = torch.nn.Linear(3, 2)
svd_model = SvdModel()
x = torch.rand(3, 3)
exportable(x)
svd_model(x)
print("unexportable: both called")
