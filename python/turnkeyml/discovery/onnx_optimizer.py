"""onnxscript's optimizer of a dynamo export, within a time budget. torch.onnx.export(dynamo=True)
optimizes the graph it made by default since torch 2.9 (constants folded, redundant nodes
removed, patterns rewritten). On graphs of a loop the exporter unrolled (Mamba's and RWKV's
scans over the sequence on CPU: thousands of small nodes) it ran for tens of minutes, where the
rest of the export took four (mamba_causal_lm and rwkv_model past the corpus's 1,800 s timeout,
docs/torch_versions.md). torch's own optimize step runs here for at most
TURNKEY_ONNX_OPTIMIZER_BUDGET_S (default 300 s), where torch runs it (after the opset conversion,
before the inputs and outputs are renamed: their order matters for a graph whose input is its
output); past it the graph as the exporter made it is put back (a copy taken before the step:
its nodes, not its weights, which the copy shares) and the export goes on, unoptimized (ONNX
Runtime optimizes a graph when it loads it); what made the file says so. Part of export.export."""

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
def _bounded_optimize_step(seconds, runs):
    """torch's ONNXProgram.optimize, for the block, runs within `seconds` (appending (seconds it
    ran, whether it finished) to `runs`); past them the program's model is put back as it was
    before the step (Model.clone: the graph copied, its tensors shared; byte for byte the same
    file), or, where onnx_ir cannot copy it, _OverBudget is raised out of the export. Where torch
    keeps the class elsewhere, the step runs as torch has it."""
    try:
        from torch.onnx._internal.exporter._onnx_program import ONNXProgram
    except ImportError:
        yield
        return
    original = ONNXProgram.optimize

    def optimize(program):
        kept = program.model.clone() if hasattr(program.model, "clone") else None
        started = time.perf_counter()
        finished = _finished_within(lambda: original(program), seconds)
        runs.append((time.perf_counter() - started, finished))
        if finished:
            return
        if kept is None:
            raise _OverBudget()
        program.model = kept
    ONNXProgram.optimize = optimize
    try:
        yield
    finally:
        ONNXProgram.optimize = original


def _stopped(seconds, runs, log, again):
    log.append("onnxscript's optimizer stopped after %.3f s, at its %g s budget (%s): the graph "
               "%s, not optimized" % (sum(r[0] for r in runs), seconds, VARIABLE, again))
    return "the graph not optimized: onnxscript's optimizer ran past its %g s budget" % seconds


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
    runs = []
    try:
        with _bounded_optimize_step(seconds, runs):
            program = export_with(None)
    except _OverBudget:
        note = _stopped(seconds, runs, log, "exported again")
        return export_with(False), note
    # torch's own lines time a step that finished ("Optimize the ONNX graph... ✅").
    if any(not finished for _, finished in runs):
        return program, _stopped(seconds, runs, log, "as the exporter made it")
    return program, ""
