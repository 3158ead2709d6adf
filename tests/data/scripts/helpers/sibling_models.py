"""A model class in a module beside the script (imported through the script's folder)."""
import torch


class SiblingNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 1)

    def forward(self, x):
        return torch.sigmoid(self.fc(x))
