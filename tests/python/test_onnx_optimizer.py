# labels: test_group::torch2 author::turnkey
"""onnxscript's optimizer of a dynamo export within its time budget
(python/turnkeyml/discovery/onnx_optimizer.py), in-process on a small model. Run by the PyPI
interpreter (torch >= 2.9 optimizes by default): `.deps/pypi/bin/python3
tests/python/test_onnx_optimizer.py` (ctest: torch2.onnx_optimizer)."""

import os
import signal
import unittest
import unittest.mock

import onnx
import torch

from turnkeyml.discovery import export, onnx_optimizer

from export_fixture import ExportCase, eager, entry_of

VARIABLE = "TURNKEY_ONNX_OPTIMIZER_BUDGET_S"
OPTIMIZED = "[torch.onnx] Optimize the ONNX graph... \u2705"  # torch's line: the step ended


class Folded(torch.nn.Module):
    """A constant computed in the forward: the optimizer folds it, the unoptimized graph
    computes it."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        scale = torch.arange(4, dtype=x.dtype).exp().sqrt() + 1
        return self.fc(x) * scale


class OptimizerBudget(ExportCase):
    def run_export(self, budget):
        if budget is None:
            os.environ.pop(VARIABLE, None)
        else:
            os.environ[VARIABLE] = budget
        self.addCleanup(os.environ.pop, VARIABLE, None)
        entry = entry_of(Folded().eval(), torch.randn(2, 8))
        reply = {}
        export.export(entry, os.path.join(self.dir, "model.onnx"), 18, self.dir, reply,
                      exporters=("dynamo",), float64=False)
        model = onnx.load(reply["onnx_path"])
        onnx.checker.check_model(model)
        return reply, len(model.graph.node), entry

    def test_the_optimizer_runs_as_torch_would_within_its_budget(self):
        self.assertTrue(onnx_optimizer.torch_optimizes())
        reply, nodes, _ = self.run_export(None)
        self.assertIn(OPTIMIZED, reply["log"])
        self.assertNotIn("not optimized", reply["exporter_version"])
        unoptimized, unoptimized_nodes, entry = self.run_export("0")
        self.assertIn("onnxscript's optimizer not run (%s=0)" % VARIABLE, unoptimized["log"])
        self.assertTrue(unoptimized["exporter_version"].endswith(
            "; the graph not optimized: %s=0" % VARIABLE), unoptimized["exporter_version"])
        self.assertGreater(unoptimized_nodes, nodes)  # the constant's nodes are left in
        self.assertEqual(len(unoptimized["outputs"]), len(eager(entry)))

    def test_an_optimizer_past_its_budget_is_stopped_and_the_graph_put_back(self):
        before = signal.getsignal(signal.SIGALRM)
        reply, nodes, _ = self.run_export("0.000001")
        self.assertRegex(reply["log"], r"onnxscript's optimizer stopped after [0-9.]+ s, at its "
                         r"1e-06 s budget \(%s\): the graph as the exporter made it, not optimized"
                         % VARIABLE)
        self.assertTrue(reply["exporter_version"].endswith(
            "; the graph not optimized: onnxscript's optimizer ran past its 1e-06 s budget"),
            reply["exporter_version"])
        _, unoptimized_nodes, _ = self.run_export("0")
        self.assertEqual(nodes, unoptimized_nodes)  # no half-optimized graph is kept
        self.assertIs(signal.getsignal(signal.SIGALRM), before)
        self.assertEqual(signal.getitimer(signal.ITIMER_REAL), (0.0, 0.0))

    def test_where_the_graph_cannot_be_copied_the_export_is_made_again(self):
        # An onnx_ir without Model.clone: the step past its budget raises out of the export,
        # which is made again with optimize=False.
        import onnx_ir

        def no_clone(_):
            raise AttributeError("clone")
        with unittest.mock.patch.object(onnx_ir.Model, "clone", property(no_clone)):
            reply, nodes, _ = self.run_export("0.000001")
        self.assertIn("the graph exported again, not optimized", reply["log"])
        self.assertTrue(reply["exporter_version"].endswith(
            "; the graph not optimized: onnxscript's optimizer ran past its 1e-06 s budget"))
        _, unoptimized_nodes, _ = self.run_export("0")
        self.assertEqual(nodes, unoptimized_nodes)

    def test_a_budget_that_is_not_a_number_of_seconds_is_the_default(self):
        reply, _, _ = self.run_export("soon")
        self.assertIn("%s='soon' is not a number of seconds: 300 s used" % VARIABLE,
                      reply["log"])
        self.assertIn(OPTIMIZED, reply["log"])


if __name__ == "__main__":
    unittest.main()
