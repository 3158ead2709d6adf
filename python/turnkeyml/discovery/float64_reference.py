"""PyTorch's outputs of the exported call run once more in float64, for the core's correctness
check to tell a model that amplifies float32 rounding from a runtime that computes wrong
(docs/measurement.md, "Models that amplify float32 rounding"). Part of export.export."""

import contextlib
import itertools
import os
import time

import torch

from . import budgets, inputs


# The float64 run is left out above this many bytes of float parameters and buffers: it holds
# them at twice their size while it runs (a 0.5 B model: 2 GB more).
_FLOAT64_MAX_BYTES = 2 << 30

# The float64 run's time budget, in seconds (TURNKEY_FLOAT64_BUDGET_S): PyTorch's float64 kernels
# on CPU can be far slower than its float32 ones (timm's focalnet_large_fl4: 1,498 s of a 1,733 s
# export, and then its 1,800 s timeout in the benchmark). Past it the run stops at the next
# module call and the check is not made.
_BUDGET_S = 300.0


class _OverBudget(Exception):
    """The float64 run went past its budget."""


@contextlib.contextmanager
def _deadline(module, seconds):
    """Raises _OverBudget at the first call of any of module's submodules after `seconds`
    (a forward pre-hook on each: a check of the clock per call, nothing else). A module that
    takes no hooks (a TorchScript module) runs unchecked."""
    end = time.perf_counter() + seconds

    def check(*_):
        if time.perf_counter() > end:
            raise _OverBudget("over its %g s budget (TURNKEY_FLOAT64_BUDGET_S)" % seconds)
    handles = []
    for m in module.modules():
        try:
            handles.append(m.register_forward_pre_hook(check))
        except Exception:  # noqa: BLE001 (a module without hooks is only not checked)
            pass
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def run(module, flags, fresh, names, shapes, io_dir, save_tensor, captured_output):
    """PyTorch's outputs of the same call with every float parameter, buffer and input in float64
    (io_dir/float64_output_N.pb), for the core to tell a model that amplifies float32 rounding
    beyond the tolerance (a random 24-layer EmbeddingGemma 2: PyTorch's own float32 outputs 12%
    from its float64 ones) from a runtime that computes wrong (docs/measurement.md). One more
    forward at twice the cost of a float32 one; the model is given back bit for bit (float32 ->
    float64 -> float32 is exact), in new storage: its weights are held once, in float64, while
    it runs. Returns (the .pb paths, the log's lines, why none were made in one line: "" when
    they were); a failure is only a check not made. `shapes`: those of the float32 call's
    outputs, which the float64 ones must have. `save_tensor(path, name, tensor)` writes a
    TensorProto; `captured_output()` is the export's context that collects warnings and prints
    as lines."""
    log = []
    tensors = [t for t in itertools.chain(module.parameters(), module.buffers())
               if t.is_floating_point()]
    size = sum(t.numel() * t.element_size() for t in tensors)
    if size > _FLOAT64_MAX_BYTES:
        why = "%.1f GB of float weights" % (size / 1e9)
        log.append("float64 reference left out: " + why)
        return [], log, why
    kept = [(t, t.dtype) for t in tensors]
    saved = []
    notes = []  # said before the run's own lines
    budget = budgets.seconds("TURNKEY_FLOAT64_BUDGET_S", _BUDGET_S, notes)
    try:
        start = time.perf_counter()
        with captured_output() as log:
            try:
                module.eval()
                for t, _ in kept:
                    t.data = t.data.double()
                args, kwargs = inputs.map_tensors(
                    fresh(), lambda t: t.double() if t.is_floating_point() else t)
                with torch.no_grad(), _deadline(module, budget):
                    result = inputs.tensors_of(module(*args, **kwargs))
            finally:
                for t, dtype in kept:
                    t.data = t.data.to(dtype)
                for m, training in flags:
                    m.training = training
        if [tuple(t.shape) for t in result] != [tuple(s) for s in shapes]:
            raise ValueError("its outputs have other shapes than the float32 call's")
        for n, (name, tensor) in enumerate(zip(names, result)):
            pb = os.path.join(io_dir, "float64_output_%d.pb" % n)
            save_tensor(pb, name, tensor)
            saved.append(pb)
        log.append("float64 reference outputs in %.3f s" % (time.perf_counter() - start))
    except _OverBudget as error:
        why = str(error)
    except Exception as error:  # noqa: BLE001 (see the docstring)
        why = "%s: %s" % (type(error).__name__, error)
    else:
        return saved, notes + log, ""
    log.append("float64 reference left out: " + why)
    return [], notes + log, (why.strip().splitlines() or [why])[0]
