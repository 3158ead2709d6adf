"""build_model() with a Sequence object holding a custom stage written in Python
(docs/sequences.md). The stage runs in this process, on the ONNX file the export wrote.

    /usr/bin/python3 examples/build_api/custom_sequence.py
"""
import onnx
import torch

from turnkeyml import build_model
from turnkeyml.build.export import ExportPytorchModel, OptimizeOnnxModel
from turnkeyml.build.stage import Sequence, Stage


class RenameOutputs(Stage):
    """Gives the graph's outputs readable names (an ONNX file in, an ONNX file out)."""

    def __init__(self, prefix):
        super().__init__(unique_name="rename-outputs", prefix=prefix)

    def fire(self, input_onnx, output_onnx):
        model = onnx.load(input_onnx)
        for i, output in enumerate(model.graph.output):
            new = "%s%d" % (self.options["prefix"], i)
            for node in model.graph.node:
                node.output[:] = [new if o == output.name else o for o in node.output]
            print("output %s -> %s" % (output.name, new))  # lands in log_rename-outputs.txt
            output.name = new
        onnx.save(model, output_onnx)


class SmallModel(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(10, 5)

    def forward(self, x):
        return torch.relu(self.fc(x))


torch.manual_seed(0)
sequence = Sequence("renamed", stages=[ExportPytorchModel(), OptimizeOnnxModel(),
                                       RenameOutputs(prefix="scores_")])
state = build_model(SmallModel(), {"x": torch.rand(1, 10)}, sequence=sequence, monitor=False)
print("Build %s: %s, sequence %s" % (state["build_name"], state["build_status"],
                                     ", ".join(state["sequence"])))
print("Outputs:", [o.name for o in onnx.load(state["onnx_path"]).graph.output])
