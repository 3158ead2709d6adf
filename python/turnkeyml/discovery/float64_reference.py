"""PyTorch's outputs of the exported call run once more in float64, for the core's correctness
check to tell a model that amplifies float32 rounding from a runtime that computes wrong
(docs/measurement.md, "Models that amplify float32 rounding"). Part of export.export."""

import itertools
import os
import time

import torch

from . import inputs


# The float64 run is left out above this many bytes of float parameters and buffers: it holds
# them at twice their size while it runs (a 0.5 B model: 2 GB more).
_FLOAT64_MAX_BYTES = 2 << 30


def run(module, flags, fresh, names, outputs, io_dir, save_tensor, captured_output):
    """PyTorch's outputs of the same call with every float parameter, buffer and input in float64
    (io_dir/float64_output_N.pb), for the core to tell a model that amplifies float32 rounding
    beyond the tolerance (a random 24-layer EmbeddingGemma 2: PyTorch's own float32 outputs 12%
    from its float64 ones) from a runtime that computes wrong (docs/measurement.md). One more
    forward at twice the cost of a float32 one; the model is given back bit for bit (float32 ->
    float64 -> float32 is exact), in new storage: its weights are held once, in float64, while
    it runs. Returns (the .pb paths, the log's lines); a failure is only a check not made: no
    paths and a log line. `save_tensor(path, name, tensor)` writes a TensorProto;
    `captured_output()` is the export's context that collects warnings and prints as lines."""
    log = []
    tensors = [t for t in itertools.chain(module.parameters(), module.buffers())
               if t.is_floating_point()]
    size = sum(t.numel() * t.element_size() for t in tensors)
    if size > _FLOAT64_MAX_BYTES:
        log.append("float64 reference left out: %.1f GB of float weights" % (size / 1e9))
        return [], log
    kept = [(t, t.dtype) for t in tensors]
    saved = []
    try:
        start = time.perf_counter()
        with captured_output() as log:
            try:
                module.eval()
                for t, _ in kept:
                    t.data = t.data.double()
                args, kwargs = inputs.map_tensors(
                    fresh(), lambda t: t.double() if t.is_floating_point() else t)
                with torch.no_grad():
                    result = inputs.tensors_of(module(*args, **kwargs))
            finally:
                for t, dtype in kept:
                    t.data = t.data.to(dtype)
                for m, training in flags:
                    m.training = training
        if [tuple(t.shape) for t in result] != [tuple(t.shape) for t in outputs]:
            raise ValueError("its outputs have other shapes than the float32 call's")
        for n, (name, tensor) in enumerate(zip(names, result)):
            pb = os.path.join(io_dir, "float64_output_%d.pb" % n)
            save_tensor(pb, name, tensor)
            saved.append(pb)
        log.append("float64 reference outputs in %.3f s" % (time.perf_counter() - start))
    except Exception as error:  # noqa: BLE001 (see the docstring)
        log.append("float64 reference left out: %s: %s" % (type(error).__name__, error))
        saved = []
    return saved, log
