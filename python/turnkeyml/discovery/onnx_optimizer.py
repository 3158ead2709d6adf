"""onnxscript's optimizer of a dynamo export, within a time budget. torch.onnx.export(dynamo=True)
optimizes the graph it made by default since torch 2.9 (constants folded, redundant nodes
removed, patterns rewritten). On graphs of a loop the exporter unrolled (Mamba's and RWKV's
scans over the sequence on CPU: thousands of small nodes) it ran for tens of minutes, where the
rest of the export took four (mamba_causal_lm and rwkv_model past the corpus's 1,800 s timeout,
docs/corpus_libraries.md). So the export is made without it, and the optimizer then runs as
torch would have run it, for at most TURNKEY_ONNX_OPTIMIZER_BUDGET_S (default 300 s); past it the
half-optimized graph is dropped, the export made again and kept unoptimized (ONNX Runtime
optimizes a graph when it loads it), and what made the file says so. Part of export.export."""

import inspect
import signal
import threading
import time

import torch

from . import budgets

VARIABLE = "TURNKEY_ONNX_OPTIMIZER_BUDGET_S"
_BUDGET_S = 300.0


class _OverBudget(BaseException):
    """Raised into the optimizer by the alarm. A BaseException: torch's and onnxscript's
    `except Exception` handlers let it through, as they let KeyboardInterrupt."""


def torch_optimizes():
    """Whether this torch's dynamo export optimizes its graph unless told not to (torch >= 2.9:
    True; 2.6-2.8: False); None where torch.onnx.export has no `optimize` parameter."""
    parameter = inspect.signature(torch.onnx.export).parameters.get("optimize")
    return None if parameter is None else bool(parameter.default)


def _optimized_within(program, seconds):
    """Whether program.optimize() finished within `seconds`: a SIGALRM timer raises _OverBudget
    into it (a signal handler runs between two bytecodes of the Python code running then). The
    handler raises at most once and only while armed, which the cleanup's first statement ends,
    so the handler and timer there are put back whenever the signal comes. Off the main thread,
    where signals cannot be handled, the optimizer runs unbounded."""
    if threading.current_thread() is not threading.main_thread():
        program.optimize()
        return True
    armed = [True]

    def expire(*_):
        if armed[0]:
            armed[0] = False
            raise _OverBudget()
    previous = signal.signal(signal.SIGALRM, expire)
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        program.optimize()
        return True
    except _OverBudget:
        return False
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def export(export_unoptimized, log):
    """(the ONNXProgram, a note for what made the file: "" where the graph is what torch's
    default export makes). `export_unoptimized()` is torch.onnx.export(..., optimize=False)
    where torch has the parameter; the program is optimized as torch's default would, within
    the budget; lines for the log are appended to `log`."""
    program = export_unoptimized()
    if not torch_optimizes():
        return program, ""
    seconds = budgets.seconds(VARIABLE, _BUDGET_S, log)
    if seconds == 0:
        log.append("onnxscript's optimizer not run (%s=0)" % VARIABLE)
        return program, "the graph not optimized: %s=0" % VARIABLE
    started = time.perf_counter()
    finished = _optimized_within(program, seconds)
    log.append("onnxscript's optimizer ran %.3f s" % (time.perf_counter() - started))
    if finished:
        return program, ""
    log.append("onnxscript's optimizer stopped at its %g s budget (%s): the graph exported "
               "again, not optimized" % (seconds, VARIABLE))
    return export_unoptimized(), ("the graph not optimized: onnxscript's optimizer ran past its "
                                  "%g s budget" % seconds)
