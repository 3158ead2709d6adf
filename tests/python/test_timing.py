# labels: test_group::timing author::turnkey
"""The Python side's timing of live models (python/turnkeyml/discovery/timing.py, cuda.py)
in-process, on a small model.

Run as a script by the interpreter that has torch (ctest does, with PYTHONPATH set):
`python3 tests/python/test_timing.py`. Without a GPU (a CPU build of torch, or no device) the
nvidia tests check the one-line refusal; with one (bench/device-check runs this file on the GPU
machine) they check the CUDA-event loop, the device memory, and that the model goes back.
"""

import shutil
import tempfile
import unittest

import torch

from turnkeyml.discovery import commands, cuda, timing
from turnkeyml.discovery.hooks import Entry

HAS_GPU = getattr(torch.version, "cuda", None) is not None and torch.cuda.is_available()


def entry_of(module, *args):
    entry = Entry(0, module, None, 0)
    entry.captured_args = args
    return entry


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(64, 256)
        self.fc2 = torch.nn.Linear(256, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class OnX86(unittest.TestCase):
    def test_x86_samples_are_positive_and_the_model_stays_put(self):
        model = Mlp()
        bench = timing.Bench(entry_of(model, torch.randn(4, 64)), "eager", 1, [], device="x86")
        samples = bench.run(5, False)
        self.assertEqual(len(samples), 5)
        self.assertTrue(all(s > 0 for s in samples), samples)
        self.assertIsNone(bench.device_memory())
        self.assertIsNone(bench.cuda)
        bench.release()  # nothing to move back on x86
        self.assertEqual(next(model.parameters()).device.type, "cpu")

    def test_an_unknown_device_is_refused(self):
        with self.assertRaisesRegex(ValueError, r"unknown device 'tpu' \(x86, nvidia\)"):
            timing.Bench(entry_of(Mlp(), torch.randn(1, 64)), "eager", 1, [], device="tpu")


@unittest.skipIf(HAS_GPU, "this torch can use a GPU: the refusal cannot be shown here")
class NvidiaRefusedWithoutGpu(unittest.TestCase):
    def test_the_refusal_says_what_is_missing_in_one_line(self):
        model = Mlp()
        with self.assertRaises(RuntimeError) as caught:
            timing.Bench(entry_of(model, torch.randn(1, 64)), "eager", 1, [], device="nvidia")
        message = str(caught.exception)
        self.assertNotIn("\n", message)
        version = torch.__version__.split("+")[0]
        if torch.version.cuda is None:
            self.assertEqual(message, "torch %s has no CUDA (a CPU build: torch.version.cuda is "
                             "None)" % version)
        else:
            self.assertRegex(message, r"^torch .* \(CUDA .*\) can use no GPU: "
                             r"torch.cuda.is_available\(\) is false")
        # The model was not touched.
        self.assertEqual(next(model.parameters()).device.type, "cpu")


@unittest.skipUnless(HAS_GPU, "needs a CUDA build of torch and a GPU")
class OnNvidia(unittest.TestCase):
    def test_cuda_events_time_each_call_and_the_model_goes_back(self):
        model = Mlp()
        before = [p.detach().clone() for p in model.parameters()]
        x = torch.randn(4, 64)
        bench = timing.Bench(entry_of(model, x), "eager", 1, [], device="nvidia")
        self.assertEqual(next(model.parameters()).device.type, "cuda")
        samples = bench.run(20, False)
        self.assertEqual(len(samples), 20)
        self.assertTrue(all(s > 0 for s in samples), samples)
        self.assertTrue(all(isinstance(s, int) for s in samples))
        empty = bench.run(20, True)
        self.assertLess(sorted(empty)[10], sorted(samples)[10])
        memory = bench.device_memory()
        weights = sum(p.numel() * p.element_size() for p in model.parameters())
        self.assertGreaterEqual(memory["device_memory_allocated_bytes"], weights)
        self.assertGreaterEqual(memory["device_memory_reserved_bytes"],
                                memory["device_memory_allocated_bytes"])
        self.assertIsInstance(bench.cuda["tf32_matmul"], bool)
        self.assertTrue(bench.cuda["device_environment"]["torch_cuda_version"])
        out_dir = tempfile.mkdtemp()
        try:
            self.assertEqual(len(bench.save_outputs(out_dir)), 1)
        finally:
            shutil.rmtree(out_dir)
        bench.release()
        self.assertEqual(next(model.parameters()).device.type, "cpu")
        for a, b in zip(before, model.parameters()):
            self.assertTrue(torch.equal(a, b.detach()))
        # The model still runs where the script had it, on the script's own inputs.
        model(x)

    def test_a_failed_prepare_leaves_the_model_on_the_cpu(self):
        model = Mlp()
        with self.assertRaises(ValueError):
            timing.Bench(entry_of(model, torch.randn(1, 64)), "compiled", 1, [],
                         {"fullgraph": "maybe"}, device="nvidia")
        self.assertEqual(next(model.parameters()).device.type, "cpu")

    def test_the_environment_names_the_gpu(self):
        facts = cuda.facts(cuda.device_for("nvidia"))
        self.assertEqual(facts["device_environment"]["torch_gpu_name"],
                         torch.cuda.get_device_name())


class ServeLoopReleases(unittest.TestCase):
    """The command loop ends a prepared session before other commands and at its end."""

    class Channel:
        def __init__(self, commands_):
            self.commands = list(commands_)
            self.sent = []

        def receive(self):
            return self.commands.pop(0) if self.commands else None

        def send(self, type_, **fields):
            self.sent.append(dict(fields, type=type_))

    def test_prepare_run_then_reference_and_end(self):
        device = "nvidia" if HAS_GPU else "x86"
        model = Mlp()
        entry = entry_of(model, torch.randn(2, 64))
        io_dir = tempfile.mkdtemp()
        try:
            v = commands.PROTOCOL_VERSION
            channel = self.Channel([
                {"v": v, "type": "bench_prepare", "id": 0, "mode": "eager", "device": device},
                {"v": v, "type": "bench_run", "n": 3, "empty": False},
                {"v": v, "type": "reference", "id": 0, "io_dir": io_dir},
            ])
            self.assertEqual(commands.serve(channel, [entry]), 0)
        finally:
            shutil.rmtree(io_dir)
        ready, samples, reference = channel.sent
        self.assertTrue(ready["ok"], ready)
        self.assertTrue(samples["ok"], samples)
        self.assertEqual(len(samples["samples_ns"]), 3)
        self.assertEqual("device_memory" in samples, HAS_GPU)
        self.assertEqual("cuda" in ready, HAS_GPU)
        # The reference forward ran on the CPU model, after the session ended.
        self.assertTrue(reference["ok"], reference)
        self.assertEqual(next(model.parameters()).device.type, "cpu")

    def test_a_refused_nvidia_prepare_is_one_line_and_the_loop_goes_on(self):
        if HAS_GPU:
            self.skipTest("this torch can use a GPU")
        v = commands.PROTOCOL_VERSION
        channel = self.Channel([
            {"v": v, "type": "bench_prepare", "id": 0, "mode": "eager", "device": "nvidia"},
            {"v": v, "type": "bench_prepare", "id": 0, "mode": "eager", "device": "x86"},
        ])
        self.assertEqual(commands.serve(channel, [entry_of(Mlp(), torch.randn(1, 64))]), 0)
        refused, ready = channel.sent
        self.assertFalse(refused["ok"])
        self.assertRegex(refused["error"], r"^RuntimeError: torch .* (has no CUDA|can use no GPU)")
        self.assertTrue(ready["ok"], ready)

    def test_an_unknown_model_id_fails_in_one_line_without_a_traceback(self):
        # A forged `model` message makes the core ask for ids the Python side never sent: the
        # fault is the message's, so the reply carries no traceback of this code to print.
        v = commands.PROTOCOL_VERSION
        channel = self.Channel([
            {"v": v, "type": "export", "id": 7, "exporters": ["torchscript"]},
            {"v": v, "type": "bench_prepare", "id": 0, "mode": "eager", "device": "nvidia"},
        ])
        self.assertEqual(commands.serve(channel, [entry_of(Mlp(), torch.randn(1, 64))]), 0)
        unknown, other = channel.sent
        self.assertFalse(unknown["ok"])
        self.assertEqual(unknown["error"], "CommandError: no model with id 7")
        self.assertNotIn("traceback", unknown)
        # Any other failure keeps its traceback for the log.
        if not other["ok"]:
            self.assertIn("Traceback", other["traceback"])


if __name__ == "__main__":
    unittest.main()
