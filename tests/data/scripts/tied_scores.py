# labels: test_group::correctness
"""Detections sorted by score, where scores tie: PyTorch breaks ties toward the first candidate,
the ONNX export toward the last (torch.onnx.is_in_onnx_export), as two runtimes may. With every
tied group kept whole (k=7) the rows are the same, in another order; with k=6 the cut falls
inside a tied group, so one row is another candidate with the same score."""
import torch

torch.manual_seed(0)


class TopDetections(torch.nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k
        self.refine = torch.nn.Linear(4, 4)

    def forward(self, boxes, scores):
        ramp = torch.arange(scores.shape[0], dtype=scores.dtype) * 1e-6
        ranked = scores + ramp if torch.onnx.is_in_onnx_export() else scores - ramp
        top, index = torch.topk(ranked, self.k)
        return self.refine(boxes[index]), top


boxes = torch.rand(8, 4) * 100
scores = torch.tensor([0.9, 0.8, 0.8, 0.5, 0.3, 0.3, 0.3, 0.1])
whole_groups = TopDetections(7)
cut_in_group = TopDetections(6)
with torch.no_grad():
    whole_groups(boxes, scores)
    cut_in_group(boxes, scores)
