# labels: test_group::export author::turnkey
"""PyTorch's float64 reference run (python/turnkeyml/discovery/float64_reference.py), made by the
export or asked for after it (the `float64` command), in-process on small models.

Run as a script by the interpreter that has torch (ctest does, with PYTHONPATH set):
`python3 tests/python/test_float64_reference.py`. The judge's use of it through the binary is
tested by Runtimes.AModelThatAmplifiesFloat32RoundingIsJudgedAgainstFloat64.
"""

import os
import unittest

import numpy
import onnx
import onnx.numpy_helper
import torch

from turnkeyml.discovery import export
from turnkeyml.discovery.hooks import state_marks

from export_fixture import ExportCase, entry_of


class Mixed(torch.nn.Module):
    """Float32 weights, a float16 buffer and an integer one: each must come back as it was."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)
        self.register_buffer("half_scale", torch.full((4,), 0.5, dtype=torch.float16))
        self.register_buffer("steps", torch.tensor([3]))

    def forward(self, x):
        return self.fc(x) * self.half_scale.to(x.dtype) + self.steps.to(x.dtype)


class Float32Only(torch.nn.Module):
    """Keeps a float32 tensor outside its parameters and buffers: a float64 run fails."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)
        self.hidden = torch.ones(4, 8)

    def forward(self, x):
        return self.fc(x) + torch.mm(x, self.hidden.t())


class Float64Reference(ExportCase):
    def test_the_float64_run_saves_its_outputs_and_gives_the_model_back_bit_for_bit(self):
        model = Mixed().eval()
        entry = entry_of(model, torch.randn(2, 8))
        before = {k: v.clone() for k, v in model.state_dict().items()}
        marks = state_marks(model)
        reply = self.export(entry, float64=True)
        self.assertEqual(len(reply["float64_outputs"]), 1)
        self.assertNotIn("float64_left_out", reply)
        self.assertRegex(reply["log"], r"float64 reference outputs in [0-9.]+ s")
        saved = onnx.numpy_helper.to_array(onnx.load_tensor(reply["float64_outputs"][0]))
        self.assertEqual(saved.dtype, numpy.float64)
        numpy.testing.assert_allclose(saved, self.saved_outputs(reply)[0], rtol=1e-5, atol=1e-6)
        after = model.state_dict()
        for name, value in before.items():
            self.assertEqual(after[name].dtype, value.dtype, name)
            self.assertTrue(torch.equal(after[name], value), name)
        self.assertEqual(state_marks(model), marks)  # the first call's outputs stay usable
        self.assertFalse(model.training)

    def test_float64_outputs_asked_for_after_the_export_match_the_eager_ones(self):
        # The core asks for them after the benchmark (the `float64` command) where a runtime's
        # outputs are outside the tolerance: the same call, the model given back as it was.
        model = Mixed().eval()
        entry = entry_of(model, torch.randn(2, 8))
        reply = self.export(entry)
        self.assertNotIn("float64_outputs", reply)
        before = {k: v.clone() for k, v in model.state_dict().items()}
        asked = {}
        later = os.path.join(self.dir, "later")
        os.mkdir(later)
        export.float64_outputs(entry, later, ["y"], [[2, 4]], asked)
        self.assertEqual(asked["float64_outputs"], [os.path.join(later, "float64_output_0.pb")])
        self.assertRegex(asked["log"], r"float64 reference outputs in [0-9.]+ s")
        saved = onnx.numpy_helper.to_array(onnx.load_tensor(asked["float64_outputs"][0]))
        self.assertEqual(saved.dtype, numpy.float64)
        numpy.testing.assert_allclose(saved, self.saved_outputs(reply)[0], rtol=1e-5, atol=1e-6)
        for name, value in before.items():
            self.assertTrue(torch.equal(model.state_dict()[name], value), name)
        # Other shapes than the float32 call's: a check not made, said in the log.
        asked = {}
        export.float64_outputs(entry, later, ["y"], [[2, 5]], asked)
        self.assertEqual(asked["float64_outputs"], [])
        self.assertIn("float64 reference left out: ValueError: its outputs have other shapes",
                      asked["log"])

    def test_a_failed_float64_run_is_a_check_not_made(self):
        reply = self.export(entry_of(Float32Only().eval(), torch.randn(2, 8)), float64=True)
        self.assertEqual(reply["float64_outputs"], [])
        self.assertIn("float64 reference left out: RuntimeError", reply["log"])
        self.assertTrue(reply["float64_left_out"].startswith("RuntimeError: "),
                        reply["float64_left_out"])
        self.assertNotIn("\n", reply["float64_left_out"])
        self.assertTrue(os.path.exists(reply["onnx_path"]))

    def test_a_float64_run_past_its_budget_is_a_check_not_made(self):
        # PyTorch's float64 kernels can be far slower than its float32 ones (focalnet_large_fl4:
        # 1,498 s): past TURNKEY_FLOAT64_BUDGET_S the run stops at the next module call, the
        # model is given back as it was, and the export stands.
        model = Mixed().eval()
        before = {k: v.clone() for k, v in model.state_dict().items()}
        os.environ["TURNKEY_FLOAT64_BUDGET_S"] = "0"
        try:
            reply = self.export(entry_of(model, torch.randn(2, 8)), float64=True)
        finally:
            del os.environ["TURNKEY_FLOAT64_BUDGET_S"]
        self.assertEqual(reply["float64_outputs"], [])
        self.assertIn("float64 reference left out: over its 0 s budget "
                      "(TURNKEY_FLOAT64_BUDGET_S)", reply["log"])
        self.assertEqual(reply["float64_left_out"],
                         "over its 0 s budget (TURNKEY_FLOAT64_BUDGET_S)")
        self.assertTrue(os.path.exists(reply["onnx_path"]))
        for name, value in before.items():
            self.assertTrue(torch.equal(model.state_dict()[name], value), name)
        self.assertEqual(model.state_dict()[name].dtype, value.dtype)
        os.environ["TURNKEY_FLOAT64_BUDGET_S"] = "soon"
        try:
            reply = self.export(entry_of(model, torch.randn(2, 8)), float64=True)
        finally:
            del os.environ["TURNKEY_FLOAT64_BUDGET_S"]
        self.assertIn("TURNKEY_FLOAT64_BUDGET_S='soon' is not a number of seconds: 300 s used",
                      reply["log"])
        self.assertEqual(len(reply["float64_outputs"]), 1)


if __name__ == "__main__":
    unittest.main()
