# The export is written outside the cache and the file turnkey asked for is a symbolic link to it:
# a valid ONNX file, so the Python side's own check passes; turnkey must not follow the link.
import os
import tempfile

import torch
import torch.onnx

export = torch.onnx.export


def linked_export(model, args, f, *rest, **options):
    outside = os.path.join(tempfile.mkdtemp(), "outside.onnx")
    export(model, args, outside, *rest, **options)
    os.symlink(outside, f)


torch.onnx.export = linked_export
model = torch.nn.Linear(4, 2)
model(torch.ones(1, 4))
