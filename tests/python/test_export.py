# labels: test_group::export author::turnkey
"""The Python side's export (python/turnkeyml/discovery/export.py) in-process, on small models.

Run as a script by the interpreter that has torch (ctest does, with PYTHONPATH set):
`python3 tests/python/test_export.py`. What the export-pytorch stage makes of it through the
binary is tested by the e2e tests (Runtimes.*, turnkey_discovery_tests); the float64 reference
run, by test_float64_reference.py.
"""

import json
import os
import shutil
import tempfile
import threading
import unittest

import numpy
import onnx
import onnx.numpy_helper
import torch

from turnkeyml.discovery import commands, export, intermediates, protocol
from turnkeyml.discovery.hooks import first_call_reference

from export_fixture import ExportCase, eager, entry_of


class ExportAware(torch.nn.Module):
    """Computes otherwise while exported, as torchvision's detection models may; counts its
    forwards."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)
        self.calls = 0

    def forward(self, x, scale=None):
        self.calls += 1
        y = torch.relu(self.fc(x)) + (1.0 if torch.onnx.is_in_onnx_export() else 0.0)
        return {"scaled": y * scale, "plain": y} if scale is not None else y


class GradMode(torch.nn.Module):
    """Records the grad mode of its forwards; `attention`, when given, is called too."""

    def __init__(self, attention=None):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)
        self.attention = attention
        self.grad_modes = []

    def forward(self, x):
        self.grad_modes.append(torch.is_grad_enabled())
        x = self.fc(x)
        return self.attention(x, x, x, need_weights=False)[0] if self.attention else x


class HiddenAttention(GradMode):
    """Holds its attention where module.modules() does not look (a plain list): the export
    cannot know of its fast path before it meets it."""

    def __init__(self):
        super().__init__()
        # Unregistered, its weights are constants of the graph: they must not require grad.
        self.hidden = [torch.nn.MultiheadAttention(16, 2, batch_first=True).requires_grad_(False)]

    def forward(self, x):
        self.grad_modes.append(torch.is_grad_enabled())
        x = self.fc(x)  # requires grad when grad is on: the slow path
        return self.hidden[0].eval()(x, x, x, need_weights=False)[0]


class NoTensors(torch.nn.Module):
    def forward(self, x):
        return 3


class Chatty(torch.nn.Module):
    """Prints from its forward, as the dynamo exporter prints each phase while it exports."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        print("phase one...", end="")
        print(" done\nphase two")
        return self.fc(x)


class Export(ExportCase):
    def test_the_reference_is_an_eager_forward_not_the_trace(self):
        model = ExportAware()
        entry = entry_of(model, torch.randn(2, 8), scale=torch.full((1,), 3.0))
        reply = self.export(entry)
        self.assertEqual(model.calls, 2)  # the reference, the trace
        self.assertTrue(model.training, "the export leaves the training flags as they were")
        self.assertEqual(reply["output_names"], ["output['scaled']", "output['plain']"])
        for saved, tensor in zip(self.saved_outputs(reply), eager(entry)):
            numpy.testing.assert_array_equal(saved, tensor.numpy())

    def first_called(self, model, x):
        """An entry whose first call ran as discovery runs it: outputs kept when usable."""
        entry = entry_of(model, x)
        entry.first_outputs = first_call_reference(model, model(x))
        return entry

    def test_an_eval_model_unchanged_since_its_first_call_is_not_run_again(self):
        model = ExportAware().eval()
        entry = self.first_called(model, torch.randn(2, 8))
        reply = self.export(entry)
        self.assertEqual(model.calls, 2)  # the script's call, the trace: no reference forward
        self.assertIn("reference outputs: the script's own first call", reply["log"])
        for saved, tensor in zip(self.saved_outputs(reply), eager(entry)):
            numpy.testing.assert_array_equal(saved, tensor.numpy())

    def test_training_mode_or_changed_weights_mean_a_fresh_reference_forward(self):
        training = ExportAware()
        reply = self.export(self.first_called(training, torch.randn(2, 8)))
        self.assertEqual(training.calls, 3)
        self.assertNotIn("reference outputs", reply["log"])
        changed = ExportAware().eval()
        entry = self.first_called(changed, torch.randn(2, 8))
        with torch.no_grad():
            changed.fc.bias.add_(1.0)  # an in-place write after the first call
        reply = self.export(entry)
        self.assertEqual(changed.calls, 3)
        self.assertNotIn("reference outputs", reply["log"])
        for saved, tensor in zip(self.saved_outputs(reply), eager(entry)):
            numpy.testing.assert_array_equal(saved, tensor.numpy())

    def test_fast_path_models_still_export_and_match_pytorch(self):
        layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True)
        encoder = torch.nn.TransformerEncoder(layer, 2).eval()
        entry = entry_of(encoder, torch.randn(1, 5, 16))
        reply = self.export(entry)
        numpy.testing.assert_array_equal(self.saved_outputs(reply)[0], eager(entry)[0].numpy())
        ops = {n.op_type for n in onnx.load(reply["onnx_path"]).graph.node}
        self.assertIn("MatMul", ops)

    def test_the_trace_runs_with_grad_off_unless_a_fast_path_needs_it_on(self):
        plain = GradMode()
        self.export(entry_of(plain, torch.randn(1, 5, 16)))
        self.assertEqual(plain.grad_modes, [False, False])  # the reference, the trace
        attention = GradMode(torch.nn.MultiheadAttention(16, 2, batch_first=True))
        self.export(entry_of(attention, torch.randn(1, 5, 16)))
        self.assertEqual(attention.grad_modes, [False, True])

    def test_a_fast_path_met_with_grad_off_is_traced_again_with_grad_on(self):
        model = HiddenAttention()
        entry = entry_of(model, torch.randn(1, 5, 16))
        reply = self.export(entry)
        self.assertEqual(model.grad_modes, [False, False, True])
        self.assertIn("traced again with grad on: Exporting the operator "
                      "'aten::_native_multi_head_attention'", reply["log"])
        numpy.testing.assert_array_equal(self.saved_outputs(reply)[0], eager(entry)[0].numpy())

    def test_lines_printed_while_exporting_say_when(self):
        log = self.export(entry_of(Chatty().eval(), torch.randn(2, 8)))["log"]
        self.assertRegex(log, r"(^|\n)\[\+[0-9]+\.[0-9] s\] phase one\.\.\. done\n"
                              r"\[\+[0-9]+\.[0-9] s\] phase two(\n|$)")

    def test_a_model_without_tensors_says_so(self):
        with self.assertRaisesRegex(ValueError, "^the model returned no tensors$"):
            self.export(entry_of(NoTensors(), torch.ones(1, 8)))

    def test_torchscript_modules_export(self):
        traced = torch.jit.trace(ExportAware().eval(), torch.randn(2, 8))
        entry = entry_of(traced, torch.randn(2, 8))
        reply = self.export(entry)
        numpy.testing.assert_array_equal(self.saved_outputs(reply)[0], eager(entry)[0].numpy())

    def test_graphs_the_exporter_did_not_check_are_checked(self):
        # A node of an op no ONNX opset has: parses, but the checker rejects it.
        node = onnx.helper.make_node("NoSuchOp", ["x"], ["y"])
        x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1])
        y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1])
        model = onnx.helper.make_model(onnx.helper.make_graph([node], "g", [x], [y]),
                                       opset_imports=[onnx.helper.make_opsetid("", 17)])
        path = os.path.join(self.dir, "unchecked.onnx")
        onnx.save(model, path)
        self.assertEqual([o.name for o in export._checked_model(path, True).graph.output], ["y"])
        with self.assertRaises(onnx.checker.ValidationError):
            export._checked_model(path, checked_by_exporter=False)

    def test_graphs_with_external_data_are_checked_by_path(self):
        # torch.onnx.export does not check those (over 2 GB): a missing data file must be found.
        weight = onnx.numpy_helper.from_array(numpy.ones(4096, numpy.float32), "w")
        node = onnx.helper.make_node("Add", ["x", "w"], ["y"])
        x = onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4096])
        y = onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4096])
        model = onnx.helper.make_model(
            onnx.helper.make_graph([node], "g", [x], [y], initializer=[weight]),
            opset_imports=[onnx.helper.make_opsetid("", 17)])
        path = os.path.join(self.dir, "external.onnx")
        onnx.save_model(model, path, save_as_external_data=True, location="external.data")
        self.assertEqual([i.name for i in export._checked_model(path, True).graph.input], ["x"])
        os.unlink(os.path.join(self.dir, "external.data"))
        with self.assertRaises(onnx.checker.ValidationError):
            export._checked_model(path, checked_by_exporter=True)


class ZeroHeadTwice(torch.nn.Module):
    """Outputs exactly zero (a zero-initialised head, as torchvision's ViTs have) after calling
    one ReLU twice, so the head's input comes from the ReLU's second call (`/act_1/...`)."""

    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(8, 8)
        self.b = torch.nn.Linear(8, 8)
        self.act = torch.nn.ReLU()
        self.head = torch.nn.Linear(8, 3)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    def forward(self, x):
        return self.head(self.act(self.b(self.act(self.a(x)))))


class Half(torch.nn.Module):
    def forward(self, x):
        return x * 0.5


class Shrinking(torch.nn.Module):
    """A Linear, then its values scaled to ~1e-30 and halved 40 times: outputs ~1e-42."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)
        self.halves = torch.nn.Sequential(*[Half() for _ in range(40)])

    def forward(self, x):
        return self.halves(self.fc(x) * 1e-30)


class ProtocolText(unittest.TestCase):
    """A reply's log or traceback longer than the core takes (4 MiB: Grounding DINO's export
    logged more, and its build failed as 'the Python side broke the protocol') is sent as its
    head and tail."""

    def test_a_long_log_is_sent_as_its_head_and_tail_within_the_limit(self):
        read_end, write_end = os.pipe()
        command_read, command_write = os.pipe()
        self.addCleanup(os.close, command_write)
        channel = protocol.Channel(write_end, command_read)
        text = "first line\n" + "\u00e9" * (3 << 20) + "\nlast line"  # 6 MiB in UTF-8
        sent = []
        reader = threading.Thread(target=lambda: sent.append(os.fdopen(read_end, "rb").read()))
        reader.start()
        channel.send("exported", id=1, ok=True, log=text, traceback="short")
        os.close(write_end)
        reader.join()
        message = json.loads(sent[0])
        self.assertLessEqual(len(message["log"].encode()), protocol.TEXT_FIELDS_BYTES["log"])
        self.assertTrue(message["log"].startswith("first line\n"))
        self.assertTrue(message["log"].endswith("\nlast line"))
        self.assertRegex(message["log"], r"\n\.\.\. \([0-9]+ bytes left out\) \.\.\.\n")
        self.assertEqual(message["traceback"], "short")


class FailureReasons(unittest.TestCase):
    """An error's one line names the innermost error it was raised from: torch.onnx's
    ConversionError says which op failed to translate, the error under it why."""

    def test_the_innermost_cause_follows_the_step_that_failed(self):
        try:
            try:
                try:
                    raise AssertionError("only 4D query, key, and value are supported")
                except AssertionError as error:
                    raise RuntimeError("Error when calling function") from error
            except RuntimeError as error:
                raise ValueError("Error when translating node\nsee the trace") from error
        except ValueError as error:
            line, fields = commands.reason(error), commands.error_fields(error)
        self.assertEqual(line, "ValueError: Error when translating node (because AssertionError: "
                               "only 4D query, key, and value are supported)")
        self.assertEqual(fields["error"], line)
        self.assertEqual(fields["error_type"], "ValueError")

    def test_an_error_raised_from_nothing_is_its_own_line(self):
        self.assertEqual(commands.reason(KeyError("x")), "KeyError: 'x'")


class Intermediates(unittest.TestCase):
    """Outputs that carry no signal: the export names an intermediate tensor that does (issue 18)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="tk-intermediates-test-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        torch.manual_seed(0)

    def test_signal_is_any_variation_among_finite_values(self):
        self.assertFalse(intermediates.has_signal([torch.zeros(2, 3), torch.empty(0, 4)]))
        self.assertFalse(intermediates.has_signal([torch.full((4,), 0.25)]))
        self.assertFalse(intermediates.has_signal([torch.tensor([float("nan"), 1.0])]))
        self.assertTrue(intermediates.has_signal([torch.zeros(2), torch.tensor([1, 2])]))
        self.assertTrue(intermediates.has_signal([torch.tensor([float("inf"), 1.0, 2.0])]))
        # Subnormal float32 numbers read as zero, as the core's comparison reads them.
        self.assertFalse(intermediates.has_signal([torch.tensor([2.5e-39, -1e-40, 0.0])]))
        tiny = torch.finfo(torch.float32).tiny
        self.assertTrue(intermediates.has_signal([torch.tensor([tiny, 0.0])]))

    def test_the_intermediate_is_clear_of_subnormals_however_many_calls_back(self):
        # A randomly initialised MobileViT's values shrink to ~1e-39 over its last 60 leaf calls:
        # here 40 calls after the last input whose largest value is clear of the subnormals'
        # rounding (at least tiny / eps, ~1e-31), further back than the 32 calls always kept.
        model = Shrinking().eval()
        reply = {}
        export.export(entry_of(model, torch.rand(2, 8) + 1), os.path.join(self.dir, "model.onnx"),
                      17, self.dir, reply)
        found = reply["intermediates"]
        self.assertEqual(len(found), 1)
        self.assertRegex(found[0]["module"], r"^halves\.[0-9]$")
        saved = onnx.numpy_helper.to_array(onnx.load_tensor(found[0]["path"]))
        finfo = torch.finfo(torch.float32)
        self.assertGreaterEqual(float(numpy.abs(saved).max()), finfo.tiny / finfo.eps)

    def test_the_head_input_is_taken_from_the_last_call_of_a_module_called_twice(self):
        model = ZeroHeadTwice().eval()
        entry = entry_of(model, torch.randn(4, 8))
        reply = {}
        export.export(entry, os.path.join(self.dir, "model.onnx"), 17, self.dir, reply)
        found = reply["intermediates"]
        self.assertEqual(len(found), 1)
        self.assertEqual(found[0]["module"], "head")
        self.assertEqual(found[0]["tensor"], "/act_1/Relu_output_0")
        self.assertIn("outputs carry no signal: checking the input of 'head'", reply["log"])
        saved = onnx.numpy_helper.to_array(onnx.load_tensor(found[0]["path"]))
        expected = torch.relu(model.b(torch.relu(model.a(entry.captured_args[0])))).detach()
        numpy.testing.assert_allclose(saved, expected.numpy(), rtol=1e-6)
        self.assertFalse(model.training)  # the export leaves the flags as they were (eval)

    def test_numbered_children_are_found_by_torch_onnx_scope_names(self):
        # torch.onnx names a numbered child by its parent's name and number (`2`, `2.0`, as
        # ResNet's `/layer4/layer4.1/conv2`): SSD's heads live in such lists.
        head = torch.nn.Linear(8, 3)
        torch.nn.init.zeros_(head.weight)
        torch.nn.init.zeros_(head.bias)
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(),
                                    torch.nn.Sequential(head)).eval()
        reply = {}
        export.export(entry_of(model, torch.randn(4, 8)), os.path.join(self.dir, "model.onnx"),
                      17, self.dir, reply)
        self.assertEqual([(f["module"], f["tensor"]) for f in reply["intermediates"]],
                         [("2.0", "/1/Relu_output_0")])

    def test_models_with_signal_get_no_intermediates(self):
        reply = {}
        export.export(entry_of(ExportAware(), torch.randn(2, 8)),
                      os.path.join(self.dir, "model.onnx"), 17, self.dir, reply)
        self.assertNotIn("intermediates", reply)

    def test_a_value_that_feeds_no_output_is_never_the_intermediate(self):
        # A dead branch (what is left of a detector whose outputs were traced as constants).
        graph = onnx.helper.make_graph(
            [onnx.helper.make_node("Relu", ["x"], ["r"], name="/body/Relu"),
             onnx.helper.make_node("Gemm", ["r", "w"], ["dead"], name="/head/Gemm"),
             onnx.helper.make_node("Constant", [], ["y"], name="/Constant",
                                   value=onnx.numpy_helper.from_array(
                                       numpy.zeros((1, 1), numpy.float32)))], "g",
            [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2])],
            [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 1])],
            [onnx.numpy_helper.from_array(numpy.ones((2, 1), numpy.float32), "w")])
        self.assertEqual(intermediates._scope_tensor(graph, "head"), "r")
        self.assertIsNone(intermediates._scope_tensor(graph, "head",
                                                      intermediates._live_values(graph)))

    def test_a_call_fused_into_the_node_before_it_is_never_the_intermediate(self):
        # onnxscript's FuseBatchNormIntoConv gives the fused Conv the BatchNorm's scope: the
        # Conv's input (shape [1, 2]) is not the BatchNorm's input (shape [1, 3]).
        graph = onnx.helper.make_graph(
            [onnx.helper.make_node("Relu", ["x"], ["r"], name="/body/Relu"),
             onnx.helper.make_node("Gemm", ["r", "w"], ["y"], name="/norm/Gemm")], "g",
            [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2])],
            [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 3])],
            [onnx.numpy_helper.from_array(numpy.ones((2, 3), numpy.float32), "w")],
            value_info=[onnx.helper.make_tensor_value_info("r", onnx.TensorProto.FLOAT, [1, 2])])
        shapes = intermediates._graph_shapes(graph)
        self.assertEqual(intermediates._scope_tensor(graph, "norm", None, [1, 2], shapes), "r")
        self.assertIsNone(intermediates._scope_tensor(graph, "norm", None, [1, 3], shapes))

    def test_a_graph_input_is_never_the_intermediate(self):
        graph = onnx.helper.make_graph(
            [onnx.helper.make_node("Gemm", ["x", "w"], ["y"], name="/score/Gemm")], "g",
            [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 2])],
            [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 1])],
            [onnx.numpy_helper.from_array(numpy.ones((2, 1), numpy.float32), "w")])
        self.assertIsNone(intermediates._scope_tensor(graph, "score"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
