"""What the Python side's export tests share (tests/python/test_export.py,
test_float64_reference.py): an Entry as discovery makes it, the eager call, and a TestCase that
exports into a temporary folder."""

import os
import shutil
import tempfile
import unittest

import onnx
import onnx.numpy_helper
import torch

from turnkeyml.discovery import export, inputs
from turnkeyml.discovery.hooks import Entry


def entry_of(module, *args, **kwargs):
    """An Entry as discovery makes it for module(*args, **kwargs)."""
    entry = Entry(0, module, None, 0)
    canonical = inputs.canonical_kwargs(module, kwargs)
    described = inputs.describe(inputs.named_leaves(module, args, canonical))
    entry.input_names = [d["name"] for d in described if d["shape"] is not None]
    entry.captured_args, entry.captured_kwargs = inputs.capture(args, canonical)
    return entry


def eager(entry):
    entry.module.eval()
    with torch.no_grad():
        return inputs.tensors_of(entry.module(*entry.captured_args, **entry.captured_kwargs))


class ExportCase(unittest.TestCase):
    """Exports into a temporary folder (no tests of its own)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tk-export-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        torch.manual_seed(0)

    def export(self, entry, float64=False):
        """Without the float64 run unless asked: the tests below count the other forwards."""
        reply = {}
        export.export(entry, os.path.join(self.dir, "model.onnx"), 17, self.dir, reply,
                      float64=float64)
        return reply

    def saved_outputs(self, reply):
        return [onnx.numpy_helper.to_array(onnx.load_tensor(pb)) for pb in reply["outputs"]]
