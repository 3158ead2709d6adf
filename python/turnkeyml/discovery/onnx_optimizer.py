"""onnxscript's optimizer of a dynamo export, within a time budget. torch.onnx.export(dynamo=True)
optimizes the graph it made by default since torch 2.9 (constants folded, redundant nodes
removed, patterns rewritten). On graphs of a loop the exporter unrolled (Mamba's and RWKV's
scans over the sequence on CPU: thousands of small nodes) it ran for tens of minutes, where the
rest of the export took four (mamba_causal_lm and rwkv_model past the corpus's 1,800 s timeout,
docs/torch_versions.md). torch's own optimize step runs here for at most
TURNKEY_ONNX_OPTIMIZER_BUDGET_S (default 300 s), where torch runs it (after the opset conversion,
before the inputs and outputs are renamed: their order matters for a graph whose input is its
output); past it the export is made again with optimize=False and kept unoptimized (ONNX Runtime
optimizes a graph when it loads it), and what made the file says so. Part of export.export."""

import contextlib
import inspect
import signal
import threading
import time

import torch

from . import budgets

VARIABLE = "TURNKEY_ONNX_OPTIMIZER_BUDGET_S"
_BUDGET_S = 300.0


class _OverBudget(BaseException):
    """The optimizer went past its budget: raised into it by the alarm, then out of
    torch.onnx.export. A BaseException: torch's and onnxscript's `except Exception` handlers let
    it through, as they let KeyboardInterrupt."""


def torch_optimizes():
    """Whether this torch's dynamo export optimizes its graph unless told not to (torch >= 2.9:
    True; 2.6-2.8: False); None where torch.onnx.export has no `optimize` parameter."""
    parameter = inspect.signature(torch.onnx.export).parameters.get("optimize")
    return None if parameter is None else bool(parameter.default)


def _finished_within(call, seconds):
    """Whether call() finished within `seconds`: a SIGALRM timer raises _OverBudget into it (a
    signal handler runs between two bytecodes of the Python code running then). The handler
    raises at most once and only while armed, which the cleanup's first statement ends, so the
    handler and timer are put back whenever the signal comes. Off the main thread, where signals
    cannot be handled, the call runs unbounded."""
    if threading.current_thread() is not threading.main_thread():
        call()
        return True
    armed = [True]

    def expire(*_):
        if armed[0]:
            armed[0] = False
            raise _OverBudget()
    previous = signal.signal(signal.SIGALRM, expire)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        call()
        return True
    except _OverBudget:
        return False
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def _bounded_optimize_step(seconds, spent):
    """torch's ONNXProgram.optimize, for the block, runs within `seconds` (appending the seconds
    it ran to `spent`) and raises _OverBudget past them. Where torch keeps the class elsewhere,
    the step runs as torch has it."""
    try:
        from torch.onnx._internal.exporter._onnx_program import ONNXProgram
    except ImportError:
        yield
        return
    original = ONNXProgram.optimize

    def optimize(program):
        started = time.perf_counter()
        finished = _finished_within(lambda: original(program), seconds)
        spent.append(time.perf_counter() - started)
        if not finished:
            raise _OverBudget()
    ONNXProgram.optimize = optimize
    try:
        yield
    finally:
        ONNXProgram.optimize = original


def export(export_with, log):
    """(the ONNXProgram, a note for what made the file: "" where the graph is what torch's
    default export makes). `export_with(optimize)` is torch.onnx.export(...), given
    `optimize=optimize` unless it is None (torch's default); lines for the log are appended to
    `log`."""
    if not torch_optimizes():
        return export_with(None), ""
    seconds = budgets.seconds(VARIABLE, _BUDGET_S, log)
    if seconds == 0:
        log.append("onnxscript's optimizer not run (%s=0)" % VARIABLE)
        return export_with(False), "the graph not optimized: %s=0" % VARIABLE
    spent = []
    try:
        with _bounded_optimize_step(seconds, spent):
            return export_with(None), ""  # torch's own lines time the step ("Optimize the ...")
    except _OverBudget:
        pass
    log.append("onnxscript's optimizer stopped after %.3f s, at its %g s budget (%s): the graph "
               "exported again, not optimized" % (sum(spent), seconds, VARIABLE))
    return export_with(False), ("the graph not optimized: onnxscript's optimizer ran past its "
                                "%g s budget" % seconds)
