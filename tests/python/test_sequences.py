# labels: test_group::api author::turnkey
"""Sequences in the Python API and what the reference documents name (issue 17): Sequence
objects with custom stages, sequence files, stage aliases, benchmark_files' results and
list-valued runtime, the printed performance lines, the named constants, dict inputs for
nn.Sequential.

Run as a script by the interpreter that has torch (ctest does, with TURNKEY_BIN and PYTHONPATH
set): `python3 tests/python/test_sequences.py`.
"""

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import onnx
import torch

from turnkeyml import TurnkeyError, benchmark_files, benchmark_model, build_model, turnkey_binary
from turnkeyml.build.export import ExportPytorchModel, OptimizeOnnxModel, SuccessStage
from turnkeyml.build.stage import Sequence, SequenceError, Stage
from turnkeyml.results import format_ms

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))


def tiny():
    torch.manual_seed(0)
    return Tiny()


class Stamp(Stage):
    fired = 0

    def __init__(self, value):
        super().__init__(unique_name="stamp", value=value)

    def fire(self, input_onnx, output_onnx):
        Stamp.fired += 1
        model = onnx.load(input_onnx)
        entry = model.metadata_props.add()
        entry.key, entry.value = "stamp", self.options["value"]
        print("stamped", self.options["value"])
        onnx.save(model, output_onnx)


class Broken(Stage):
    def fire(self, input_onnx, output_onnx):
        raise ValueError("broken on purpose")


def metadata(path):
    return {p.key: p.value for p in onnx.load(path).metadata_props}


class Sequences(unittest.TestCase):
    def setUp(self):
        self.cache = tempfile.mkdtemp(prefix="tk-seq-test-")
        self.addCleanup(shutil.rmtree, self.cache, True)

    def test_sequence_object_with_a_custom_stage_runs_here_and_is_cached(self):
        Stamp.fired = 0
        sequence = Sequence("stamped", stages=[ExportPytorchModel(), OptimizeOnnxModel(),
                                               Stamp("one"), SuccessStage()])
        state = build_model(tiny(), {"x": torch.ones(1, 8)}, sequence=sequence,
                            build_name="stamped", cache_dir=self.cache)
        self.assertEqual(state["sequence"], ["discover", "export-pytorch", "optimize-ort",
                                             "stamp"])
        self.assertEqual(Stamp.fired, 1)
        self.assertEqual(metadata(state["onnx_path"]), {"stamp": "one"})
        with open(os.path.join(state["build_dir"], "log_stamp.txt")) as f:
            self.assertIn("stamped one", f.read())
        again = build_model(tiny(), {"x": torch.ones(1, 8)}, sequence=sequence,
                            build_name="stamped", cache_dir=self.cache)
        self.assertEqual(Stamp.fired, 1)  # reused: same model, stage source and parameters
        self.assertTrue(again["tools"][3].get("reused"))
        changed = Sequence("stamped", stages=[ExportPytorchModel(), OptimizeOnnxModel(),
                                              Stamp("two")])
        state = build_model(tiny(), {"x": torch.ones(1, 8)}, sequence=changed,
                            build_name="stamped", cache_dir=self.cache)
        self.assertEqual(Stamp.fired, 2)
        self.assertEqual(metadata(state["onnx_path"]), {"stamp": "two"})
        perf = benchmark_model(tiny(), {"x": torch.ones(1, 8)}, sequence=changed,
                               build_name="stamped", iterations=3, cache_dir=self.cache)
        self.assertEqual(perf.stats["onnx_file"], state["onnx_path"])

    def test_failing_custom_stage_raises_with_its_reason(self):
        with self.assertRaises(TurnkeyError) as caught:
            build_model(tiny(), torch.ones(1, 8), sequence=Sequence("b", stages=[
                "export_pytorch", Broken()]), build_name="broken", cache_dir=self.cache)
        self.assertEqual(str(caught.exception),
                         "broken failed at broken: ValueError: broken on purpose")
        with open(os.path.join(caught.exception.build_dir, "log_broken.txt")) as f:
            self.assertIn("Traceback", f.read())

    def test_sequence_names_files_and_aliases(self):
        state = build_model(tiny(), torch.ones(1, 8), sequence=["export_pytorch",
                                                               "optimize_onnx", "set_success"],
                            build_name="aliases", cache_dir=self.cache)
        self.assertEqual(state["sequence"], ["discover", "export-pytorch", "optimize-ort"])
        example = os.path.join(REPO, "examples", "cli", "extras", "example_sequence.py")
        state = build_model(tiny(), torch.ones(1, 8), sequence=example, build_name="example",
                            cache_dir=self.cache)
        self.assertEqual(state["sequence"], ["discover", "export-pytorch", "add-metadata"])
        self.assertEqual(metadata(state["onnx_path"])["built_with"], "turnkey")
        with self.assertRaises(SequenceError):
            build_model(tiny(), torch.ones(1, 8), sequence=["optimise_onnx"],
                        cache_dir=self.cache)
        with self.assertRaises(SequenceError):  # two stages of one name
            build_model(tiny(), torch.ones(1, 8), sequence=Sequence("s", stages=[
                "export_pytorch", Stamp("a"), Stamp("b")]), cache_dir=self.cache)

    def test_benchmark_files_returns_results_for_each_runtime(self):
        script = os.path.join(self.cache, "two.py")
        with open(script, "w") as f:
            f.write("import torch\ntorch.manual_seed(0)\n"
                    "model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())\n"
                    "model(torch.ones(1, 8))\n")
        results = benchmark_files([script], runtime=["ort", "torch-eager"], iterations=3,
                                  cache_dir=self.cache)
        self.assertEqual([r.runtime for r in results], ["ort", "torch-eager"])
        for r in results:
            self.assertGreater(r.mean_latency, 0)
            self.assertEqual(r.iterations, 3)
        self.assertEqual(benchmark_files([script], build_only=True, cache_dir=self.cache), [])
        missing = os.path.join(self.cache, "missing.py")
        with self.assertRaises(TurnkeyError) as caught:
            benchmark_files([script, missing], iterations=2, cache_dir=self.cache)
        self.assertEqual([r.runtime for r in caught.exception.results], ["ort"])
        with self.assertRaises(ValueError):  # custom stage objects need the attached API
            benchmark_files([script], sequence=Sequence("s", stages=["export_pytorch",
                                                                     Stamp("x")]))

    def test_benchmark_model_prints_the_documented_lines(self):
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            perf = benchmark_model(tiny(), {"x": torch.ones(1, 8)}, iterations=5,
                                   cache_dir=self.cache)
        text = printed.getvalue()
        self.assertIn("Performance of Tiny on device %s is:" % perf.device_name, text)
        self.assertIn("> latency: %s ms" % format_ms(perf.mean_latency), text)
        self.assertRegex(text, r"> throughput: \d+\.\d ips")
        self.assertEqual(format_ms(0.0014123), "0.001412")
        self.assertEqual(format_ms(0.033), "0.03300")
        self.assertEqual(format_ms(85.6), "85.600")

    def test_dict_inputs_of_a_sequential_are_its_positional_input(self):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 4), torch.nn.ReLU())
        perf = benchmark_model(model, {"x": torch.ones(1, 8)}, iterations=3,
                               cache_dir=self.cache)
        self.assertGreater(perf.mean_latency, 0)
        with self.assertRaises(TypeError) as caught:
            benchmark_model(model, {"x": torch.ones(1, 8), "y": torch.ones(1, 8)},
                            cache_dir=self.cache)
        self.assertIn("do not match Sequential.forward(input)", str(caught.exception))
        perf = benchmark_model(model, {"x": torch.ones(1, 8)}, runtime=["ort"], iterations=2,
                               cache_dir=self.cache)
        self.assertEqual(perf.runtime, "ort")
        with self.assertRaises(ValueError):
            benchmark_model(model, {"x": torch.ones(1, 8)}, runtime=["ort", "torch-eager"])

    def test_named_constants(self):
        from turnkeyml import filesystem
        from turnkeyml.common import build

        self.assertEqual(build.DEFAULT_ONNX_OPSET, 17)
        from turnkeyml.cli import spawn

        self.assertEqual(spawn.DEFAULT_TIMEOUT_SECONDS, 3600)
        location = subprocess.run([turnkey_binary(), "cache", "location"],
                                  capture_output=True, text=True, check=True).stdout
        self.assertIn(filesystem.DEFAULT_CACHE_DIR, location)
        models = subprocess.run([turnkey_binary(), "models", "location", "--quiet"],
                                capture_output=True, text=True, check=True).stdout.strip()
        self.assertEqual(os.path.realpath(filesystem.MODELS_DIR), os.path.realpath(models))

    def test_build_api_examples_run(self):
        folder = os.path.join(REPO, "examples", "build_api")
        env = dict(os.environ, TURNKEY_CACHE_DIR=self.cache, TURNKEY_BUILD_MONITOR="False")
        for name in ("hello_pytorch_world.py", "build_name.py", "no_monitor.py",
                     "custom_sequence.py"):
            run = subprocess.run([sys.executable, os.path.join(folder, name)], env=env,
                                 capture_output=True, text=True, timeout=600)
            self.assertEqual(run.returncode, 0, name + "\n" + run.stdout + run.stderr)
            self.assertIn("successful", run.stdout, name)


if __name__ == "__main__":
    unittest.main(verbosity=2)
