# labels: test_group::correctness
"""A model whose ONNX export computes something else than its eager forward: the export is
deliberately altered (torch.onnx.is_in_onnx_export), so a runtime running the ONNX file gives
outputs that differ from the PyTorch outputs saved at export."""
import torch


class Altered(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = self.fc(x)
        if torch.onnx.is_in_onnx_export():
            return y * 1.5 + 0.25
        return y


torch.manual_seed(0)
model = Altered()
model(torch.randn(2, 8))
