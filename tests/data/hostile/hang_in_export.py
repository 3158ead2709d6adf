# Runs normally, but its model never finishes exporting to ONNX.
import torch


class HangsWhenExported(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        if torch.onnx.is_in_onnx_export():
            while True:
                pass
        return self.linear(x)


torch.manual_seed(0)
model = HangsWhenExported()
model(torch.randn(1, 4))
