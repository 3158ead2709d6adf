"""ONNX export of a discovered entry with the inputs captured at its first call."""

import contextlib
import itertools
import mmap
import shutil
import os
import time
import traceback

import torch

from . import (exporter_fixes, float64_reference, inputs, intermediates, onnx_optimizer,
               translations)
from .captured_output import captured_output as _captured_output
from .hooks import state_marks

onnx = None  # set by load_onnx(), the library's module even where a user file shadows it


def load_onnx():
    """Imports onnx (and the parts of it we use) once. The runner calls this before the script's
    folder is on sys.path, so that a user file named onnx.py is never taken for the library."""
    global onnx
    if onnx is None:
        import onnx as library
        import onnx.checker  # noqa: F401 (submodules we use, loaded with the package)
        import onnx.numpy_helper  # noqa: F401
        onnx = library
    return onnx


class _FlatCall(torch.nn.Module):
    """Calls `module` with the captured call rebuilt around a flat list of tensors.

    torch.onnx.export can only feed tensors (and containers of tensors) as positional args;
    the call may also hold keyword arguments, None, ints or flags. The wrapper takes exactly the
    call's tensors, in signature order, as graph inputs, keeps every other value as a constant,
    and returns the output's tensors flattened, so graph inputs and outputs are ours to name.

    It shares the module's parameter, buffer and child tables (never modifies them), so its
    state_dict keys, and thus the ONNX initializer names, are the module's own (`fc.weight`,
    not `module.fc.weight`).
    """

    def __init__(self, module, args, kwargs):
        super().__init__()
        for table in ("_parameters", "_buffers", "_modules", "_non_persistent_buffers_set"):
            object.__setattr__(self, table, getattr(module, table))
        # Plain attributes, not registered (registering would write into module._modules).
        object.__setattr__(self, "_target", module)
        object.__setattr__(self, "_template", (tuple(args), dict(kwargs)))

    def forward(self, *tensors):
        feed = iter(tensors)
        # A cache object in the call is copied anew: every forward starts from the captured state.
        args, kwargs = inputs.copy_call(self._template, lambda _: next(feed))
        return tuple(inputs.tensors_of(self._target(*args, **kwargs)))


def _output_names(output):
    names = []

    def visit(name, value):
        if isinstance(value, torch.Tensor):
            names.append(name)

    inputs.walk(output, "output", visit)
    return names


# Modules whose eval-mode forward, with grad off, takes a fused fast path that torch.onnx.export
# cannot export (aten::_transformer_encoder_layer_fwd, aten::_native_multi_head_attention).
_FAST_PATH_MODULES = tuple(getattr(torch.nn, name) for name in
                           ("TransformerEncoder", "TransformerEncoderLayer", "MultiheadAttention")
                           if hasattr(torch.nn, name))


def _trace_mode(grad):
    """Grad off while tracing, except where a fast path needs it on: off builds no autograd
    graph at all (resnet50, batch 8: the export's peak memory above the model's is 0.51 GB, 0.66
    GB with grad on; same ONNX bytes), on is the only way past a fast path. With grad on, no
    backward ever runs, so autograd keeps none of the activations it would save for one (there:
    1.18 GB without that hook)."""
    if not grad:
        return torch.no_grad()
    stack = contextlib.ExitStack()
    stack.enter_context(torch.enable_grad())
    stack.enter_context(_no_saved_tensors())
    return stack


def _export_and_save(target, feed, path, log, **arguments):
    """torch.onnx.export writing `path`; the dynamo exporter's program is optimized within a
    budget (onnx_optimizer), mended (translations.mend: what it leaves out of the file) and
    saved as the export would have. Returns the optimizer's note for what made the file."""
    if not arguments.get("dynamo"):
        torch.onnx.export(target, feed, path, **arguments)
        return ""
    external_data = arguments.pop("external_data", True)

    def export_with(optimize):
        given = arguments if optimize is None else dict(arguments, optimize=optimize)
        return torch.onnx.export(target, feed, None, **given)
    with translations.complex_translations(log):
        program, note = onnx_optimizer.export(export_with, log)
    translations.mend(program.model)
    program.save(path, external_data=external_data)
    return note


def _export_traced(module, target, feed, path, opset, input_names, output_names, log,
                   export_arguments):
    """torch.onnx.export of `target` (module or its _FlatCall) with the grad mode it needs:
    on where a module with a fused fast path is present, off elsewhere. A graph that still meets
    an op the exporter lacks with grad off (a fast path we do not know of) is traced again with
    grad on, as every graph was before, and the log says so."""
    grad = any(isinstance(m, _FAST_PATH_MODULES) for m in module.modules())
    unsupported = exporter_fixes.unsupported_operator_error()
    for attempt in ((grad,) if grad else (False, True)):
        try:
            with _trace_mode(attempt):
                return _export_and_save(target, feed, path, log, opset_version=opset,
                                        input_names=list(input_names),
                                        output_names=output_names, **export_arguments)
        except unsupported as error:
            if attempt:
                raise
            log.append("traced again with grad on: %s" % str(error).strip().splitlines()[0])


# Above this many bytes of weights the dynamo exporter writes them to an external data file
# (protobuf's 2 GB limit on one message); below, one self-contained file as TorchScript's writes.
_EXTERNAL_DATA_BYTES = 1 << 30
# The opset the dynamo exporter writes and converts from (the core's default for it).
_DYNAMO_BASE_OPSET = 18


def _export_with(exporter, module, target, feed, path, opset, input_names, output_names, log):
    """One export attempt with `exporter` ("torchscript" or "dynamo")."""
    arguments = exporter_fixes.export_arguments(exporter)
    if exporter == "torchscript":
        log.extend(exporter_fixes.apply(opset))
        arguments["do_constant_folding"] = True
    else:
        log.append("exporter fixes: turnkey's translations of ops torch.onnx lacks, in whole or "
                   "in part: %s (the TorchScript symbolics are not called)"
                   % ", ".join(translations.NAMES))
        weights = sum(t.numel() * t.element_size()
                      for t in itertools.chain(module.parameters(), module.buffers()))
        arguments["external_data"] = weights > _EXTERNAL_DATA_BYTES
        table = exporter_fixes.library_translations(module)
        if table:
            log.append("translations: transformers' ONNX table for its models (%d ops: its "
                       "grouped_mm experts kernel, ...)" % len(table))
        arguments["custom_translation_table"] = {**translations.own_translations(opset),
                                                 **(table or {})}
    exporter_fixes.reset()
    return _export_traced(module, target, feed, path, opset, input_names, output_names, log,
                          arguments)


# What torch.onnx's TorchScript exporter warns where its graph computes other values than PyTorch
# for some inputs ("Exporting aten::index operator of advanced indexing ... If indices include
# negative values, the exported graph will produce incorrect results"): a mismatch's line names
# the warning (docs/measurement.md, "Correctness").
_WARNS_OF_WRONG_RESULTS = ("will produce incorrect results",)


def _export_attempts(exporters, module, target, feed, path, opset, input_names, output_names,
                     log, reply):
    """Tries `exporters` in order (auto: torch's default first, then the other); the first that
    writes a file the ONNX checker passes wins: (that exporter, the model read back). Each
    failure before the last is a line in the log and in the reply's `exporter_fallback` (also
    when the last fails: the core names every exporter's reason); the last one's error is
    raised. A failed allocation is not retried: the other exporter needs no less memory."""
    from .commands import is_out_of_memory, reason

    failures = []
    for n, exporter in enumerate(exporters):
        try:
            started = time.perf_counter()
            try:
                note = _export_with(exporter, module, target, feed, path, opset, input_names,
                                    output_names, log)
            finally:  # where an export's time goes: bench/corpus_stages.py reads these lines
                log.append("the %s exporter ran %.3f s" % (exporter, time.perf_counter() - started))
            if exporter == "dynamo" and opset != _DYNAMO_BASE_OPSET:
                _check_opset_written(path, opset)
            started = time.perf_counter()
            # A graph the checker rejects (the dynamo exporter's Gemma 4 audio tower: "Nodes in
            # a graph must be topologically sorted") is that exporter's failure too. The dynamo
            # exporter runs no checker, but the core's model facts run ONNX 1.23's (with strict
            # shape inference, where the core asks the next exporter too) on every file it
            # takes: checking here too cost the export ~10%; external data is checked here.
            model = _checked_model(path, checked_by_exporter=True)
            log.append("read back and checked in %.3f s" % (time.perf_counter() - started))
        except Exception as error:  # noqa: BLE001 (the next exporter, or raised)
            if n + 1 == len(exporters) or is_out_of_memory(error):
                if failures:
                    reply["exporter_fallback"] = "; ".join(failures)
                raise
            # torch.onnx wraps the cause (a data-dependent guard, an unsupported op) in an error
            # that only says which step failed: the cause is the reason.
            cause = error.__cause__ if error.__cause__ is not None else error
            failures.append("%s exporter failed: %s" % (exporter, reason(cause)))
            log.append("".join(traceback.format_exception(error)).rstrip())
            log.append("%s; trying the %s exporter" % (failures[-1], exporters[n + 1]))
            _remove_partial(path)
            continue
        reply["exporter"] = exporter
        reply["exporter_version"] = "; ".join(
            filter(None, [exporter_fixes.exporter_version(exporter), note]))
        if failures:
            reply["exporter_fallback"] = "; ".join(failures)
        return exporter, model
    raise ValueError("no exporter to try")


def _check_opset_written(path, opset):
    """The dynamo exporter writes its base opset (18) when it cannot convert to the one asked
    (below 18 through onnx's converter, which fails on many graphs) and only warns: a file at
    another opset than asked is that exporter's failure, so auto tries the other one."""
    model = load_onnx().load(path, load_external_data=False)
    written = _written_opset(model, opset)
    if written != opset:
        raise ValueError("the dynamo exporter wrote opset %d instead of the %d asked (its version "
                         "conversion failed; the TorchScript exporter writes opsets 7-20)"
                         % (written, opset))


def _remove_partial(path):
    """What a failed attempt left in the export's private folder."""
    folder = os.path.dirname(path)
    for name in os.listdir(folder):
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(folder, name))


def _no_saved_tensors():
    hooks = getattr(getattr(torch.autograd, "graph", None), "saved_tensors_hooks", None)
    if hooks is None:  # torch < 1.10
        return contextlib.nullcontext()
    return hooks(lambda tensor: None, lambda packed: None)


def _write_atomic(path, data):
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _save_tensor(path, name, tensor):
    array = tensor.detach().cpu().contiguous().numpy()
    _write_atomic(path, load_onnx().numpy_helper.from_array(array, name).SerializeToString())


def _checked_model(path, checked_by_exporter):
    """The ONNX model at `path` (its weights too, unless external), once the checker passed it.

    torch.onnx.export (the TorchScript exporter) runs the checker itself on what it writes (a
    full check, with shape inference, in torch 1.13) unless the weights went to external files:
    checking again cost the export stage 3-15% (onnx 1.12's check by path parses the file again,
    slowly: resnet50's 100 MB took 1.1 s; distilbert's bytes 0.2-0.4 s). An exporter that does
    not check (`checked_by_exporter` false), and a graph with external data, are checked here by
    path, where the checker finds the external files."""
    onnx = load_onnx()
    model = onnx.ModelProto()
    # Parsed from the page cache's pages: a read() into bytes first doubles the time (distilbert's
    # 124 MB: 0.24 s against 0.5 s on a busy machine).
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        try:
            model.ParseFromString(data)
        except TypeError:  # protobuf >= 5 (upb) takes bytes only
            model.ParseFromString(data[:])
    if not checked_by_exporter or any(t.data_location == onnx.TensorProto.EXTERNAL
                                      for t in model.graph.initializer):
        onnx.checker.check_model(path)
    return model


def _first_call_outputs(entry, flags):
    """The outputs of the script's first call of this model when they are what a reference
    forward now would compute: the model was in eval mode then and is now, and no parameter or
    buffer was replaced or written in place since (hooks.state_marks). Saves one forward of the
    model per export (vit_b_16: ~0.5 s of an 8 s export). A forward that depends on Python
    state it changes itself (a call counter) is not seen; its outputs would differ from the
    graph's, and the correctness check says so."""
    kept = getattr(entry, "first_outputs", None)
    if kept is None or any(training for _, training in flags):
        return None
    marks, outputs = kept
    return outputs if marks == state_marks(entry.module) else None


def _intermediates(module, flags, fresh, graph, io_dir, reply):
    """Outputs that carry no signal (empty, all zero, constant) check nothing: one more eval
    forward captures an intermediate tensor that does (intermediates.py). Its cost is paid only
    by such models; a failure here is only a missed check, never a failed export."""
    log = []
    try:
        with _captured_output() as log:
            try:
                module.eval()
                found = intermediates.capture(module, fresh, graph, io_dir, _save_tensor)
            finally:
                for m, training in flags:
                    m.training = training
    except Exception as error:  # noqa: BLE001 (see the docstring)
        log.append("no intermediate tensor for the check: %s: %s" % (type(error).__name__, error))
        found = []
    return note_intermediates(reply, log, found)


def _float64_outputs(module, flags, fresh, names, shapes, io_dir, reply):
    """float64_reference.run with this module's output capture and tensor writer; its log lines
    go to the reply's log, and why it made none to its `float64_left_out`."""
    saved, log, why = float64_reference.run(module, flags, fresh, names, shapes, io_dir,
                                            _save_tensor, _captured_output)
    _noted(reply, log)
    if why:
        reply["float64_left_out"] = why
    return saved


def _fresh_calls(entry):
    """A function giving fresh copies of the entry's captured call for every use: a forward that
    writes into its inputs must not change what is saved as input_N.pb, nor a later use's."""
    return lambda: inputs.copy_call((entry.captured_args, entry.captured_kwargs),
                                    lambda t: t.clone())


def float64_outputs(entry, io_dir, names, shapes, reply):
    """The `float64` command: PyTorch's float64 outputs of the entry's captured call, asked for
    after its export, when a runtime's outputs were outside the tolerance of its float32 ones
    (`names` and `shapes`: those of output_N.pb). Fills the reply's `float64_outputs` (none
    when the run failed: its log says why) and `log`."""
    load_onnx()
    if not os.path.isdir(io_dir):
        raise FileNotFoundError("folder %s does not exist" % io_dir)
    module = entry.module
    flags = [(m, m.training) for m in module.modules()]
    reply["log"] = ""
    reply["float64_outputs"] = _float64_outputs(module, flags, _fresh_calls(entry), names,
                                                shapes, io_dir, reply)
    return reply


def _noted(reply, log):
    """Appends `log`'s lines to the reply's log."""
    reply["log"] = "\n".join(filter(None, [reply.get("log", "")] + log))


def note_intermediates(reply, log, found):
    """Says in the reply's log which intermediate tensor the check will compare (or that none
    has signal); returns `found`. Shared by the PyTorch and Keras exports."""
    if found:
        log.append("outputs carry no signal: checking the input of %r (ONNX tensor %r) too"
                   % (found[0]["module"], found[0]["tensor"]))
    else:
        log.append("outputs carry no signal, and no intermediate tensor with signal was found")
    _noted(reply, log)
    return found


def export(entry, path, opset, io_dir, reply, exporters=("torchscript",), float64=True):
    """Writes `path` and io_dir/input_N.pb, output_N.pb, filling `reply` with the reply's fields
    as it goes (so `log` survives a failure). `exporters`: the exporters to try, in order;
    `float64`: also io_dir/float64_output_N.pb (_float64_outputs); the core asks for them here
    only where it cannot ask later (the `float64` command, float64_outputs above).

    Raises on failure (the caller turns it into ok=false). The module's training flags and the
    entry's captured inputs are left as they were.
    """
    load_onnx()
    for folder in (os.path.dirname(os.path.abspath(path)), io_dir):
        if not os.path.isdir(folder):
            raise FileNotFoundError("folder %s does not exist" % folder)
    start = time.perf_counter()
    module = entry.module
    flags = [(m, m.training) for m in module.modules()]
    fresh = _fresh_calls(entry)
    saved_inputs = dict(zip(entry.input_names, inputs.tensors_of(fresh())))
    reply.update(onnx_path=path, opset=opset, log="")
    # A private folder beside the target: the exporter writes the model under its final name
    # there, with any external data file it names after the model, and both are moved out
    # once complete (renaming the model alone would leave it pointing at a temporary name).
    private = "%s.tmp%d" % (path, os.getpid())
    os.mkdir(private)
    log = []
    try:
        with _captured_output() as log:
            try:
                reference = _first_call_outputs(entry, flags)
                module.eval()
                with torch.no_grad():
                    if reference is None:
                        args, kwargs = fresh()
                        reference = module(*args, **kwargs)
                    else:
                        log.append("reference outputs: the script's own first call (eval mode, "
                                   "weights and buffers unchanged since)")
                    output_names = _output_names(reference)
                    outputs = inputs.tensors_of(reference)
                    if not outputs:
                        raise ValueError("the model returned no tensors")
                    args, kwargs = fresh()
                    target, feed = _export_target(module, args, kwargs, entry)
                    exporter, model = _export_attempts(
                        list(exporters), module, target, feed,
                        os.path.join(private, os.path.basename(path)), opset, entry.input_names,
                        output_names, log, reply)
            finally:
                for m, training in flags:
                    m.training = training
        _move_out(private, os.path.basename(path))
    finally:
        reply["log"] = "\n".join(log)  # complete only once _captured_output has exited
        warned = next((line for line in log if any(p in line for p in _WARNS_OF_WRONG_RESULTS)),
                      None)
        if warned:
            reply["exporter_warning"] = warned
        shutil.rmtree(private, ignore_errors=True)

    graph = model.graph
    reply["opset"] = _written_opset(model, opset)
    _save_io(graph, saved_inputs, outputs, io_dir, reply)
    if not intermediates.has_signal(outputs):
        reply["intermediates"] = _intermediates(module, flags, fresh, graph, io_dir, reply)
    elif float64:
        reply["float64_outputs"] = _float64_outputs(module, flags, fresh, reply["output_names"],
                                                    [t.shape for t in outputs], io_dir, reply)
    reply["exporter_fixes"] = exporter_fixes.used()
    reply["export_s"] = time.perf_counter() - start
    return reply


def _save_io(graph, saved_inputs, outputs, io_dir, reply):
    """Writes io_dir/input_N.pb for the graph's inputs (from the call's tensors, by name) and
    output_N.pb for its outputs (PyTorch's, in order), listing them and the graph's input and
    output names in `reply`. Raises where the graph and the call do not match."""
    graph_inputs = [i.name for i in graph.input]
    graph_outputs = [o.name for o in graph.output]
    if len(graph_outputs) != len(outputs):
        raise ValueError("the ONNX graph has %d outputs, PyTorch returned %d tensors"
                         % (len(graph_outputs), len(outputs)))
    reply["inputs"] = []
    for n, name in enumerate(graph_inputs):
        if name not in saved_inputs:
            raise ValueError("ONNX graph input %r is not one of the call's tensors" % name)
        pb = os.path.join(io_dir, "input_%d.pb" % n)
        _save_tensor(pb, name, saved_inputs[name])
        reply["inputs"].append(pb)
    reply["outputs"] = []
    for n, (name, tensor) in enumerate(zip(graph_outputs, outputs)):
        pb = os.path.join(io_dir, "output_%d.pb" % n)
        _save_tensor(pb, name, tensor)
        reply["outputs"].append(pb)
    reply["input_names"] = graph_inputs
    reply["output_names"] = graph_outputs


def _export_target(module, args, kwargs, entry):
    """(what torch.onnx.export is given, its flat tensor arguments)."""
    if isinstance(module, torch.jit.ScriptModule):
        # Scripted or traced by the user: exported as is (it cannot be called from inside a
        # trace), which needs positional tensor arguments.
        if kwargs or len(inputs.tensors_of(args)) != len(entry.input_names):
            raise ValueError("a TorchScript module can only be exported when called with "
                             "positional tensor arguments")
        return module, args
    target = _FlatCall(module, args, kwargs)
    target.training = False
    return target, tuple(inputs.tensors_of((args, kwargs)))


def _move_out(private, model_name):
    """Moves the files of a finished export beside the private folder: the data files first,
    the model last, so a model file in place always finds its data."""
    destination = os.path.dirname(private)
    names = sorted(os.listdir(private), key=lambda name: name == model_name)
    for name in names:
        os.replace(os.path.join(private, name), os.path.join(destination, name))


def _written_opset(model, default):
    """The ai.onnx opset the file declares (the dynamo exporter may write another than asked)."""
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    return default
