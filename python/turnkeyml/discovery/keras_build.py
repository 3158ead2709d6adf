"""Export (tf2onnx), reference outputs and timing of live Keras models: the Keras counterparts
of export.py and timing.py, reached through commands.py for entries whose framework is keras.

The export traces the model's own call, with the captured non-tensor arguments as constants and
`training=False`, as a tf.function whose arguments are the call's tensors in signature order,
and converts that function with tf2onnx (`from_function`: tf2onnx's `from_keras` reads Keras 2
attributes that Keras 3 models lack) in bounded memory (keras_tf2onnx.py). The outputs saved as
the correctness reference are Keras's own outputs for the captured inputs, from an eager call;
outputs without signal add an intermediate tensor (keras_intermediates.py).
"""

import contextlib
import os
import shutil
import time

import numpy as np
import tensorflow as tf

from . import export as torch_export
from .captured_output import captured_output
from . import keras_intermediates as kmid
from . import keras_model as km
from . import keras_tf2onnx

EXPORTER = "tf2onnx"
# tf2onnx 1.17 writes opsets up to 18 (its constants' OPSET_TO_IR_VERSION).
MAX_OPSET = 18


def _fresh(entry):
    """New tensors for the captured call: a call that writes into its inputs changes nothing we
    keep."""
    return km.as_tensors(entry.captured_args, entry.captured_kwargs)


def _with_inference(layer, kwargs):
    """Inference mode for a call whose signature takes `training` (Dropout and BatchNorm act as
    at serving time), as the PyTorch side runs exports and benchmarks in eval mode."""
    sig = km._call_signature(layer)
    if sig is not None and ("training" in sig.parameters or any(
            p.kind == p.VAR_KEYWORD for p in sig.parameters.values())):
        return dict(kwargs, training=False)
    return dict(kwargs)


def _flat_function(entry):
    """(tf.function of the call over its flat tensors, their TensorSpecs)."""
    layer = entry.module
    template = (entry.captured_args, entry.captured_kwargs)
    flat = km.tensors_of(template)
    specs = [tf.TensorSpec(a.shape, tf.as_dtype(a.dtype), name=name)
             for a, name in zip(flat, entry.input_names)]

    def call(*tensors):
        feed = iter(tensors)
        args, kwargs = km.map_tensors(template, lambda _: next(feed))
        return tuple(km.tensors_of(layer(*args, **_with_inference(layer, kwargs))))

    return tf.function(call, input_signature=specs, autograph=False), specs


def _save_array(path, name, array):
    torch_export._write_atomic(path, torch_export.load_onnx().numpy_helper.from_array(
        np.ascontiguousarray(array), name).SerializeToString())


def _reference(entry):
    """Keras's outputs for the captured inputs (an eager call in inference mode) as arrays."""
    args, kwargs = _fresh(entry)
    out = entry.module(*args, **_with_inference(entry.module, kwargs))
    arrays = [km.to_numpy(t) for t in km.tensors_of(out)]
    if not arrays:
        raise ValueError("the model returned no tensors")
    return arrays


def export(entry, path, opset, io_dir, reply):
    """Writes `path` (ONNX, by tf2onnx) and io_dir/input_N.pb, output_N.pb, as export.export."""
    import tf2onnx

    onnx = torch_export.load_onnx()
    if not 7 <= opset <= MAX_OPSET:
        raise ValueError("tf2onnx %s writes opsets 7-%d, not %d (--opset %d)"
                         % (tf2onnx.__version__, MAX_OPSET, opset, min(opset, MAX_OPSET)))
    start = time.perf_counter()
    reply.update(onnx_path=path, opset=opset, log="")
    log = []
    # A private folder beside the target, as export.export: the model and its data file (when
    # the weights need one) are written there under their final names and moved out together.
    private = "%s.tmp%d" % (path, os.getpid())
    os.mkdir(private)
    try:
        with captured_output() as log:
            reference = _reference(entry)
            function, specs = _flat_function(entry)
            # Outputs without signal: the layer calls of the trace converted are kept for the
            # intermediate check (keras_intermediates.py).
            traced = None if kmid.has_signal(reference) else []
            with (kmid.layer_inputs(entry.module, traced) if traced is not None
                  else contextlib.nullcontext()):
                model = keras_tf2onnx.convert(function, specs, opset,
                                              os.path.join(private, os.path.basename(path)), log)
        torch_export._move_out(private, os.path.basename(path))
    finally:
        reply["log"] = "\n".join(log)
        shutil.rmtree(private, ignore_errors=True)
    onnx.checker.check_model(path)
    graph_inputs = [i.name for i in model.graph.input]
    graph_outputs = [o.name for o in model.graph.output]
    if len(graph_outputs) != len(reference):
        raise ValueError("the ONNX graph has %d outputs, Keras returned %d tensors"
                         % (len(graph_outputs), len(reference)))
    saved = dict(zip(entry.input_names, km.tensors_of(entry.captured_args) +
                     km.tensors_of(entry.captured_kwargs)))
    reply["inputs"] = []
    for n, name in enumerate(graph_inputs):
        if name not in saved:
            raise ValueError("ONNX graph input %r is not one of the call's tensors" % name)
        pb = os.path.join(io_dir, "input_%d.pb" % n)
        _save_array(pb, name, saved[name])
        reply["inputs"].append(pb)
    reply["outputs"] = []
    for n, (name, array) in enumerate(zip(graph_outputs, reference)):
        pb = os.path.join(io_dir, "output_%d.pb" % n)
        _save_array(pb, name, array)
        reply["outputs"].append(pb)
    if traced is not None:
        reply["intermediates"] = _intermediates(entry, model, traced, io_dir, reply)
    reply.update(exporter=EXPORTER, exporter_version=km.versions(), exporter_fixes=[],
                 input_names=graph_inputs, output_names=graph_outputs,
                 opset=torch_export._written_opset(model, opset),
                 export_s=time.perf_counter() - start)
    return reply


def _intermediates(entry, model, traced, io_dir, reply):
    """Outputs that carry no signal: the input of the newest layer call with signal that the
    graph holds, from one more eager call (export._intermediates's counterpart). A failure is a
    missed check, never a failed export."""
    log = []
    try:
        with captured_output() as log:
            eager = []
            with kmid.layer_inputs(entry.module, eager):
                _reference(entry)
            found = kmid.capture(model, eager, traced, io_dir, _save_array)
    except Exception as error:  # noqa: BLE001 (see the docstring)
        log.append("no intermediate tensor for the check: %s: %s" % (type(error).__name__, error))
        found = []
    return torch_export.note_intermediates(reply, log, found)


def reference_io(entry, io_dir):
    """The captured inputs and Keras's outputs as input_N.pb / output_N.pb (timing.reference_io)."""
    saved_in, saved_out = [], []
    flat = km.tensors_of((entry.captured_args, entry.captured_kwargs))
    for n, array in enumerate(flat):
        path = os.path.join(io_dir, "input_%d.pb" % n)
        _save_array(path, "input_%d" % n, array)
        saved_in.append(path)
    for n, array in enumerate(_reference(entry)):
        path = os.path.join(io_dir, "output_%d.pb" % n)
        _save_array(path, "output_%d" % n, array)
        saved_out.append(path)
    return saved_in, saved_out


class Bench:
    """The `keras` runtime: the model's own eager call (inference mode) on fresh tensors of the
    captured inputs, each call between two perf_counter_ns reads, as timing.Bench times
    torch-eager (on the CPU an eager call returns once its ops have run)."""

    def __init__(self, entry, threads, cpus):
        if threads and threads > 0:
            _set_threads(int(threads))
        self._cpus = set(int(c) for c in cpus) if cpus else None
        self._unpinned = os.sched_getaffinity(0)
        layer = entry.module
        args, kwargs = _fresh(entry)
        kwargs = _with_inference(layer, kwargs)
        self._call = lambda: layer(*args, **kwargs)
        self._last = None
        self.threads = (tf.config.threading.get_intra_op_parallelism_threads()
                        or len(self._unpinned))
        self.compiled = None
        self.cuda = None

    def run(self, n, empty):
        from .timing import _pin_all_threads

        call = (lambda: None) if empty else self._call
        clock = time.perf_counter_ns
        samples = [0] * n
        out = None
        if self._cpus:
            _pin_all_threads(self._cpus)
        try:
            for i in range(n):
                start = clock()
                out = call()
                samples[i] = clock() - start
        finally:
            if self._cpus:
                _pin_all_threads(self._unpinned)
        if not empty:
            self._last = out
        return samples

    def device_memory(self):
        return None

    def release(self):
        pass

    def profile(self, n, path):
        raise ValueError("the keras runtime has no profiler in turnkey")

    def save_outputs(self, io_dir):
        if self._last is None:
            raise ValueError("no run yet")
        paths = []
        for n, tensor in enumerate(km.tensors_of(self._last)):
            path = os.path.join(io_dir, "output_%d.pb" % n)
            _save_array(path, "output_%d" % n, km.to_numpy(tensor))
            paths.append(path)
        return paths


def _set_threads(threads):
    """TensorFlow's intra-op pool size. It can be set only before TensorFlow's first op runs
    (the script has run its model already): a later setting raises, and the pool keeps the
    size it has, which the reply then reports."""
    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
    except RuntimeError:
        pass
