# labels: test_group::api author::turnkey
"""The Python API against the real turnkey binary and torch (docs/python_api.md).

Run as a script by the interpreter that has torch (ctest does, with TURNKEY_BIN and PYTHONPATH
set): `python3 tests/python/test_api.py`. The builds are named after this file, as the builds of
any user script are.
"""

import contextlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import torch
import yaml

import turnkeyml
from turnkeyml import TurnkeyError, benchmark_files, benchmark_model, build_model
from turnkeyml.common import labels

HERE = os.path.dirname(os.path.abspath(__file__))


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))


class NoTensors(torch.nn.Module):
    def forward(self, x):
        return 3


def tiny():
    torch.manual_seed(0)
    return Tiny()


class Api(unittest.TestCase):
    def setUp(self):
        self.cache = tempfile.mkdtemp(prefix="tk-api-test-")
        self.addCleanup(shutil.rmtree, self.cache, True)

    def test_benchmark_model_returns_measured_performance(self):
        model = tiny()
        inputs = {"x": torch.ones(2, 8)}
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):  # as in a notebook: through sys.stdout
            perf = benchmark_model(model, inputs, iterations=7, cache_dir=self.cache)
        self.assertIn("Successfully benchmarked on", printed.getvalue())
        self.assertIn("Build dir:      %s" % perf.build_dir, printed.getvalue())
        self.assertEqual(perf.latency_units, "milliseconds (ms)")
        self.assertEqual(perf.throughput_units, "inferences per second (IPS)")
        self.assertGreater(perf.mean_latency, 0)
        # Throughput counts the batch (2 here): batch * 1000 / mean latency.
        self.assertAlmostEqual(perf.throughput, 2 * 1000 / perf.mean_latency,
                               delta=perf.throughput * 1e-6)
        low, high = perf.median_latency_ci
        self.assertLessEqual(low, perf.median_latency)
        self.assertLessEqual(perf.median_latency, high)
        self.assertLessEqual(perf.min_latency, perf.p90_latency)
        self.assertLessEqual(perf.p90_latency, perf.p99_latency)
        self.assertEqual(perf.iterations, 7)
        self.assertEqual((perf.device, perf.runtime), ("x86", "ort"))
        self.assertEqual(perf.model_name, "model")  # the variable the caller holds it by
        # Named as `turnkey test_api.py` names its builds: <script stem>_<hash8>.
        self.assertRegex(perf.build_name, r"^test_api_[0-9a-f]{8}$")
        self.assertEqual(perf.build_dir, os.path.join(self.cache, perf.build_name))
        with open(os.path.join(perf.build_dir, "turnkey_stats.yaml")) as f:
            stats = yaml.safe_load(f)
        self.assertEqual(stats["mean_latency_ms"], perf.mean_latency)
        # Every field of the result is an attribute, named as its key without the unit suffix.
        result = [r for r in stats["results"] if r["samples_file"] == stats["samples_file"]][0]
        self.assertEqual(result["mean_latency_ms"], perf.mean_latency)
        self.assertEqual(perf.peak_memory, result["peak_memory_bytes"])
        self.assertEqual(perf.threads, result["threads"])
        self.assertEqual(perf.input_shapes, result["input_shapes"])
        self.assertEqual(stats["class_path"], "test_api.Tiny")
        self.assertEqual(stats["input_source"], "captured from the script")
        # The model is left as it was given (export switches to eval mode and back).
        self.assertTrue(model.training)

    def test_torch_runtimes_through_the_api(self):
        model = tiny()
        for runtime in ("torch-eager", "torchscript"):
            with contextlib.redirect_stdout(io.StringIO()):
                perf = benchmark_model(model, {"x": torch.ones(2, 8)}, runtime=runtime,
                                       iterations=9, cache_dir=self.cache)
            self.assertEqual(perf.runtime, runtime)
            self.assertEqual(perf.iterations, 9)
            self.assertGreater(perf.median_latency, 0)
            with open(os.path.join(perf.build_dir, "turnkey_stats.yaml")) as f:
                stats = yaml.safe_load(f)
            self.assertTrue(stats["correctness"]["within"], stats["correctness"])
        self.assertTrue(model.training)  # eval only while timed, then put back

    def test_build_model_with_build_name_lands_in_the_cache_under_that_name(self):
        state = build_model(tiny(), (torch.ones(1, 8),), build_name="my_api_build",
                            cache_dir=self.cache, sequence="optimize-fp32", monitor=False)
        build_dir = os.path.join(self.cache, "my_api_build")
        self.assertEqual(state["build_dir"], build_dir)
        self.assertEqual(state["build_name"], "my_api_build")
        self.assertEqual(state["build_status"], "successful")
        self.assertEqual(state["sequence"], ["discover", "export-pytorch", "optimize-ort"])
        self.assertTrue(os.path.isfile(os.path.join(build_dir, "my_api_build_state.yaml")))
        self.assertTrue(state["onnx_path"].startswith(build_dir + os.sep))
        self.assertTrue(os.path.isfile(state["onnx_path"]))
        with open(os.path.join(build_dir, "turnkey_stats.yaml")) as f:
            self.assertNotIn("mean_latency_ms", yaml.safe_load(f))  # built, not benchmarked

    def test_api_and_cli_give_the_same_build(self):
        """A script run by `turnkey` and the same script calling build_model: one build dir, and
        the second run reuses the first one's export."""
        script = os.path.join(self.cache, "twin.py")
        shutil.copy(os.path.join(HERE, "data", "twin.py"), script)
        # The API's own environment for its binary (under torch 2 it names the binary's libraries).
        # The CLI runs the script with this interpreter too: the same torch makes the same export.
        cli = subprocess.run([turnkeyml.turnkey_binary(), script, "--build-only", "-d",
                              self.cache, "--python", sys.executable],
                             env=turnkeyml.launch.environment(monitor=False),
                             capture_output=True, text=True, timeout=300)
        self.assertEqual(cli.returncode, 0, cli.stdout + cli.stderr)
        env = dict(os.environ, TURNKEY_BUILD_MONITOR="False")
        api = subprocess.run([sys.executable, script, self.cache], env=env, capture_output=True,
                             text=True, timeout=300)
        self.assertEqual(api.returncode, 0, api.stdout + api.stderr)
        builds = sorted(d for d in os.listdir(self.cache) if d.startswith("twin_"))
        self.assertEqual(len(builds), 1, builds)
        self.assertIn("BUILD %s" % builds[0], api.stdout)
        with open(os.path.join(self.cache, builds[0], "log_export-pytorch.txt")) as f:
            self.assertIn("reused from cache", f.read())

    def test_interactive_session_builds_are_named_interactive(self):
        code = ("import torch\n"
                "from turnkeyml import build_model\n"
                "torch.manual_seed(0)\n"
                "s = build_model(torch.nn.Linear(3, 2), torch.ones(1, 3), cache_dir=%r)\n"
                "print('BUILD', s['build_name'], s['build_status'])\n" % self.cache)
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             timeout=300, env=dict(os.environ, TURNKEY_BUILD_MONITOR="False"))
        self.assertEqual(run.returncode, 0, run.stdout + run.stderr)
        self.assertRegex(run.stdout, r"BUILD interactive_[0-9a-f]{8} successful")
        self.assertTrue(os.path.isfile(os.path.join(self.cache, "api_inputs", "interactive.py")))

    def test_failures_raise_with_turnkeys_one_line_reason(self):
        with self.assertRaises(TurnkeyError) as caught:
            benchmark_model(tiny(), torch.ones(1, 8), device="nvidia", cache_dir=self.cache)
        self.assertRegex(str(caught.exception),
                         r"^test_api_[0-9a-f]{8} failed at benchmark: device nvidia: unavailable")
        self.assertTrue(os.path.isdir(caught.exception.build_dir))
        self.assertEqual(caught.exception.exit_code, 1)

    def test_bad_option_values_raise_turnkeys_usage_error(self):
        # Refused when turnkey reads its command line (issue 15): no build is made.
        with self.assertRaises(TurnkeyError) as caught:
            benchmark_model(tiny(), torch.ones(1, 8), runtime="nosuch", cache_dir=self.cache)
        self.assertIn("--runtime 'nosuch': not one of ort", str(caught.exception))
        self.assertIsNone(caught.exception.build_dir)
        self.assertEqual(caught.exception.exit_code, 2)

        with self.assertRaises(TurnkeyError) as caught:
            build_model(NoTensors(), torch.ones(1, 8), cache_dir=self.cache)
        self.assertIn("failed at export-pytorch: ValueError: the model returned no tensors",
                      str(caught.exception))

        # A usage error: turnkey stops before any build; its one line still arrives.
        with self.assertRaises(TurnkeyError) as caught:
            benchmark_model(tiny(), torch.ones(1, 8), rebuild="sometimes", cache_dir=self.cache)
        self.assertIn("--rebuild 'sometimes': not one of if_needed, always, never",
                      str(caught.exception))
        self.assertEqual(caught.exception.exit_code, 2)
        self.assertNotIn("\n", str(caught.exception))

        with self.assertRaises(ValueError):
            build_model(tiny(), torch.ones(1, 8), build_name="../escape", cache_dir=self.cache)

    def test_labels_load_from_cache(self):
        state = build_model(tiny(), torch.ones(1, 8), build_name="labelled", cache_dir=self.cache)
        self.assertEqual(state["build_status"], "successful")
        self.assertEqual(labels.load_from_cache(self.cache, "labelled"),
                         {"author": ["turnkey"], "test_group": ["api"]})
        with self.assertRaises(FileNotFoundError):
            labels.load_from_cache(self.cache, "no_such_build")
        # The reference tool's layout, <cache>/labels/<build>.txt, is read too.
        os.makedirs(os.path.join(self.cache, "labels"))
        with open(os.path.join(self.cache, "labels", "old.txt"), "w") as f:
            f.write("domain::vision,nlp task::classification\n")
        self.assertEqual(labels.load_from_cache(self.cache, "old"),
                         {"domain": ["vision", "nlp"], "task": ["classification"]})

    def test_benchmark_files_runs_the_cli_on_files(self):
        state = build_model(tiny(), torch.ones(1, 8), build_name="exported", cache_dir=self.cache)
        onnx_file = os.path.join(self.cache, "tiny.onnx")
        shutil.copy(state["onnx_path"], onnx_file)
        files_cache = os.path.join(self.cache, "files")
        results = benchmark_files(input_files=[onnx_file], iterations=4, cache_dir=files_cache)
        self.assertEqual([(r.runtime, r.iterations) for r in results], [("ort", 4)])
        builds = [d for d in os.listdir(files_cache) if d.startswith("tiny_")]
        self.assertEqual(len(builds), 1, builds)
        with open(os.path.join(files_cache, builds[0], "turnkey_stats.yaml")) as f:
            self.assertEqual(yaml.safe_load(f)["iterations"], 4)
        missing = os.path.join(self.cache, "missing.onnx")
        with self.assertRaises(TurnkeyError) as caught:
            benchmark_files([onnx_file, missing], iterations=2, cache_dir=files_cache)
        self.assertIn("missing.onnx", str(caught.exception))
        self.assertEqual(caught.exception.exit_code, 1)

    def test_sweeps_give_one_result_per_point(self):
        state = build_model(tiny(), torch.ones(1, 8), build_name="swept", cache_dir=self.cache)
        onnx_file = os.path.join(self.cache, "swept.onnx")
        shutil.copy(state["onnx_path"], onnx_file)
        results = benchmark_files([onnx_file], iterations=20, batch_sizes=[1, 2],
                                  concurrency=[1, 2], cache_dir=os.path.join(self.cache, "s"))
        self.assertEqual(sorted((r.batch_size, r.concurrency) for r in results),
                         [(1, 1), (1, 2), (2, 1), (2, 2)])
        self.assertEqual({r.build_name for r in results}, {results[0].build_name})
        for r in results:
            self.assertGreater(r.load, 0)
            self.assertGreater(r.throughput, 0)
        perf = benchmark_model(tiny(), torch.ones(1, 8), iterations=20, concurrency=2,
                               cache_dir=self.cache)
        self.assertEqual(perf.concurrency, 2)
        self.assertIn(perf.sessions, (1, 2))
        with self.assertRaises(ValueError):
            benchmark_model(tiny(), torch.ones(1, 8), concurrency=[1, 2], cache_dir=self.cache)

    def test_benchmark_files_can_sandbox_the_scripts(self):
        # On every runtime of this interpreter: each writes through the sandbox's staging folder
        # (ONNX export and reference outputs, eager outputs, the traced module).
        outside = tempfile.mkdtemp(prefix="tk-api-outside-")
        self.addCleanup(shutil.rmtree, outside, True)
        cache = os.path.join(self.cache, "c")
        script = os.path.join(self.cache, "scripts", "writer.py")
        os.makedirs(os.path.dirname(script))
        with open(script, "w") as f:
            f.write("import os, torch\n"
                    "for p in [%r, %r]:\n"
                    "    try:\n        open(p, 'w').write('x')\n    except OSError:\n        pass\n"
                    "torch.nn.Linear(2, 2)(torch.ones(1, 2))\n"
                    % (os.path.join(outside, "w"), os.path.join(cache, "planted")))
        runtimes = ["ort", "torch-eager", "torchscript"]
        results = benchmark_files([script], iterations=3, sandbox=True, cache_dir=cache,
                                  runtime=runtimes)
        self.assertEqual([r.runtime for r in results], runtimes)
        self.assertTrue(all(r.mean_latency > 0 for r in results))
        self.assertFalse(os.path.exists(os.path.join(outside, "w")))
        self.assertFalse(os.path.exists(os.path.join(cache, "planted")))  # read-only inside
        self.assertFalse(os.path.exists(os.path.join(cache, ".staging")))

    def test_plugin_runtime_through_the_api(self):
        perf = benchmark_model(tiny(), torch.ones(1, 8), runtime="opencv-dnn", iterations=5,
                               cache_dir=self.cache)
        self.assertEqual(perf.runtime, "opencv-dnn")
        self.assertGreater(perf.mean_latency, 0)


if __name__ == "__main__":
    unittest.main(verbosity=2)
