"""A model whose ONNX export kills its own process with SIGKILL, as the kernel does to the largest
process when memory runs out (torch 1.13 exporting torchvision's MViT V2 asks for 23 GB): the
build fails at export-pytorch with how the Python side ended, and the script's other model, built
before it, keeps its result."""
import os
import signal

import torch


class DiesInExport(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x):
        if torch.onnx.is_in_onnx_export():
            os.kill(os.getpid(), signal.SIGKILL)
        return self.fc(x)


torch.manual_seed(0)
survivor = torch.nn.Linear(4, 3)
survivor(torch.rand(1, 4))
victim = DiesInExport()
victim(torch.rand(1, 4))
