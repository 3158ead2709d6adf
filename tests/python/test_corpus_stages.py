"""bench/corpus_stages.py, where a corpus run's time went: the export log's stamped phases (the
dynamo exporter's own, the rest as "other") and the table a cache gives. Run by any Python 3:
`python3 tests/python/test_corpus_stages.py` (ctest: turnkey_corpus_stages_tests)."""

import importlib.machinery
import io
import json
import os
import tempfile
import unittest
from contextlib import redirect_stderr, redirect_stdout

STAGES_PY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                         "corpus_stages.py")
stages_tool = importlib.machinery.SourceFileLoader("corpus_stages", STAGES_PY).load_module()

# The shape of a dynamo export's log (flex_olmo's, session 20), stamped by the export's capture.
LOG = """opset 18, exporters to try: dynamo, torchscript
W1129 12:56:19.033000 7726 torch/onnx/_internal/exporter/_registration.py:83] Failed to infer
[+0.5 s] [torch.onnx] Obtain model graph for `_FlatCall([...]` with `torch.export.export(..., strict=False)`...
[+100.5 s] [torch.onnx] Obtain model graph for `_FlatCall([...]` with `torch.export.export(..., strict=False)`... \u2705
[+100.5 s] [torch.onnx] Run decompositions...
[+300.5 s] [torch.onnx] Run decompositions... \u2705
[+300.5 s] [torch.onnx] Translate the graph into ONNX...
[+400.0 s] [torch.onnx] Translate the graph into ONNX... \u2705
[+400.0 s] [torch.onnx] Optimize the ONNX graph...
[+1000.0 s] [torch.onnx] Optimize the ONNX graph... \u2705
the dynamo exporter ran 1040.000 s
read back and checked in 20.000 s
float64 reference outputs in 30.000 s
exported /cache/b/onnx/b-op18-base.onnx in 1100.000 s
exported by the dynamo exporter (torch 2.15.0, onnxscript 0.7.2), opset 18"""


class ExportPhases(unittest.TestCase):
    def test_each_phase_is_its_end_less_its_start_and_the_rest_is_other(self):
        phases = stages_tool.export_phases(LOG)
        self.assertEqual(set(phases), {
            "Obtain model graph", "Run decompositions", "Translate the graph into ONNX",
            "Optimize the ONNX graph", "dynamo: after its phases (writing)", "read back and checked",
            "float64 reference", "other"})
        for phase, seconds in (("Obtain model graph", 100.0), ("Run decompositions", 200.0),
                               ("Translate the graph into ONNX", 99.5),
                               ("Optimize the ONNX graph", 600.0),
                               ("dynamo: after its phases (writing)", 40.5),
                               ("read back and checked", 20.0), ("float64 reference", 30.0),
                               ("other", 10.0)):
            self.assertAlmostEqual(phases[phase], seconds, places=6, msg=phase)

    def test_a_fallback_counts_the_torchscript_exporters_whole_run(self):
        log = LOG.replace("float64 reference outputs in 30.000 s",
                          "the torchscript exporter ran 5.000 s\nfloat64 reference outputs "
                          "in 30.000 s")
        self.assertAlmostEqual(stages_tool.export_phases(log)["torchscript exporter"], 5.0)

    def test_an_optimizer_stopped_at_its_budget_is_timed_by_torchs_lines(self):
        # onnx_optimizer.py stops onnxscript's optimizer at its budget and puts the graph back
        # within torch's step: torch's lines still time the step, turnkey's line is not counted.
        log = LOG.replace(
            "the dynamo exporter ran",
            "onnxscript's optimizer stopped after 600.000 s, at its 600 s budget "
            "(TURNKEY_ONNX_OPTIMIZER_BUDGET_S): the graph as the exporter made it, not "
            "optimized\nthe dynamo exporter ran")
        self.assertNotEqual(log, LOG)
        self.assertEqual(stages_tool.export_phases(log), stages_tool.export_phases(LOG))

    def test_a_log_without_stamps_or_without_an_export_gives_nothing(self):
        # turnkey before f8a99fb: no stamps, no lines of its own steps.
        unstamped = "\n".join(line.split("] ", 1)[1] if line.startswith("[+") else line
                              for line in LOG.splitlines()
                              if not any(p.match(line) for p, _ in stages_tool._STEPS))
        self.assertEqual(stages_tool.export_phases(unstamped), {})
        failed = "\n".join(line for line in LOG.splitlines() if not line.startswith("exported /"))
        self.assertEqual(stages_tool.export_phases(failed), {})

    def test_a_cache_gives_the_stage_table_and_the_export_phase_table(self):
        with tempfile.TemporaryDirectory() as cache:
            os.makedirs(os.path.join(cache, "inputs"))
            os.makedirs(os.path.join(cache, "b"))
            script = os.path.join(cache, "models", "transformers", "b_model.py")
            with open(os.path.join(cache, "inputs", "b_1.yaml"), "w") as f:
                f.write('builds:\n  - build: "b"\ninput: "%s"\nstatus: "successful"\n' % script)
            events = [("2026-11-29T12:00:00Z", "stage", "discover"),
                      ("2026-11-29T12:01:00Z", "stage", "export-pytorch"),
                      ("2026-11-29T12:20:00Z", "done", None)]
            with open(os.path.join(cache, "inputs", "b_1.progress.jsonl"), "w") as f:
                for t, e, stage in events:
                    f.write(json.dumps({"t": t, "e": e, "stage": stage}) + "\n")
            with open(os.path.join(cache, "b", "log_export-pytorch.txt"), "w") as f:
                f.write(LOG)
            out = io.StringIO()
            with redirect_stdout(out):
                self.assertEqual(stages_tool.main(["corpus_stages.py", cache]), 0)
        lines = out.getvalue().splitlines()
        self.assertIn("| transformers | 1 | 1200 | 60 (5%) | 1140 (95%) |", lines)
        self.assertIn("| transformers | 1 | 1100 | 100 (9%) | 600 (55%) | 200 (18%) | "
                      "100 (9%) | 40 (4%) | 30 (3%) | 20 (2%) | 10 (1%) |", lines)


    def test_a_cache_without_input_records_says_so(self):
        with tempfile.TemporaryDirectory() as cache:
            os.makedirs(os.path.join(cache, "inputs"))
            err = io.StringIO()
            with redirect_stderr(err):
                self.assertEqual(stages_tool.main(["corpus_stages.py", cache]), 1)
        self.assertIn("holds no input's progress events", err.getvalue())

if __name__ == "__main__":
    unittest.main()
