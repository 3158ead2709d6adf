"""The Python API: benchmark_model, build_model, benchmark_files (docs/python_api.md).

Python only describes, hashes and exports the live model (the same code as discovery, so build
names and cache contents match what `turnkey script.py` produces) and hands over to the C++
`turnkey` binary, which runs the build sequence, benchmarks and writes the cache. turnkey is
started with `discover --attach E,C`: instead of starting an interpreter on the script, it talks
the discovery protocol (docs/protocol.md) with this process over two pipes.
"""

import importlib.metadata
import inspect
import os
import platform
import subprocess
import sys
import threading
import time

from .launch import (Output, TurnkeyError, environment, failure, flag_args,  # noqa: F401
                     sequence_flags, turnkey_binary)
from .results import MeasuredPerformance, read_build, results_since

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


# ---- the model side --------------------------------------------------------------------------


def _installed_version(distribution):
    """The distribution's version in this interpreter, None where it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None

def _caller_frames():
    """Frames from our caller outwards, ours skipped."""
    frames = []
    frame = sys._getframe(1)
    while frame is not None:
        if not frame.f_code.co_filename.startswith(os.path.join(_PACKAGE_DIR, "")):
            frames.append(frame)
        frame = frame.f_back
    return frames


def _script_path():
    """The user's script (what `turnkey script.py` would have been given): builds are named
    after it and its `# labels:` line is recorded. None in an interactive session."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path and path.endswith(".py") and os.path.isfile(path):
        return os.path.abspath(path)
    return None


def _interactive_script(cache_dir):
    """A stand-in script for models from an interactive session (REPL, notebook, python -c):
    turnkey names builds after their script, and these have none."""
    if cache_dir is None:
        cache_dir = os.environ.get("TURNKEY_CACHE_DIR") or os.path.expanduser("~/.cache/turnkey")
    folder = os.path.join(os.path.expanduser(os.fspath(cache_dir)), "api_inputs")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "interactive.py")
    if not os.path.isfile(path):
        tmp = "%s.tmp%d" % (path, os.getpid())
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("# Stands for models given to turnkeyml's Python API from an interactive "
                    "session.\n")
        os.replace(tmp, path)
    return path


def _as_call(model, inputs):
    """(args, kwargs) of the call `inputs` describes: a dict is keyword arguments (the
    reference's `model(**inputs)`), a tuple or list positional arguments, anything else the
    one positional argument. A one-item dict whose key forward() does not name is its one
    positional input (`{"x": x}` for an nn.Sequential, whose forward takes `input`)."""
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}
    if not isinstance(inputs, dict):
        return (inputs,), {}
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return (), dict(inputs)
    if any(p.kind == p.VAR_KEYWORD for p in params.values()) or all(k in params for k in inputs):
        return (), dict(inputs)
    positional = [p for p in params.values() if p.kind in (p.POSITIONAL_ONLY,
                                                           p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if len(inputs) == 1 and len(required) <= 1 and positional:
        return (next(iter(inputs.values())),), {}
    raise TypeError("inputs %s do not match %s.forward(%s): use forward's parameter names as "
                    "keys, or pass a tuple of positional inputs" % (
                        ", ".join(map(repr, inputs)), type(model).__name__,
                        ", ".join(params)))


def _describe_model(model, inputs, script):
    """(entry, model message) for `model` called with `inputs`: the names, signature and hash
    discovery would have given it (docs/protocol.md, docs/hashing.md)."""
    import torch

    from .discovery import hashing, hooks
    from .discovery import inputs as signature

    if not isinstance(model, torch.nn.Module):
        raise TypeError("model must be a torch.nn.Module, got %s" % type(model).__name__)
    args, kwargs = _as_call(model, inputs)
    canonical = signature.canonical_kwargs(model, kwargs)
    described = signature.describe(signature.named_leaves(model, args, canonical))
    entry = hooks.Entry(0, model, None, 0)
    entry.input_names = [d["name"] for d in described if d["shape"] is not None]
    entry.captured_args, entry.captured_kwargs = signature.capture(args, canonical)
    frames = _caller_frames()
    call_file, call_line = (frames[0].f_code.co_filename, frames[0].f_lineno) if frames else (
        script, None)
    cls = type(model)
    stem = os.path.splitext(os.path.basename(script))[0]
    params = list(model.parameters())
    message = {
        "id": 0, "parent_id": None, "depth": 0,
        "name": hooks.Tracker._variable_name(model, frames) or cls.__name__,
        "class_name": cls.__name__,
        "class_path": "%s.%s" % (stem if cls.__module__ == "__main__" else cls.__module__,
                                 cls.__qualname__),
        "model_type": hooks.MODEL_TYPE,
        "file": os.path.abspath(call_file) if not call_file.startswith("<") else call_file,
        "line": call_line,
        "parameters": sum(p.numel() for p in params),
        "parameter_bytes": sum(p.numel() * p.element_size() for p in params),
        "inputs": described,
        "signature_index": 0,
        "module_id": 0,
        "hash": hashing.model_hash(model, described),
    }
    return entry, message


def _serve(channel, entry, gate, stages):
    """Answers turnkey's commands (export, timing, tracing of `entry`, id 0; the custom
    `stages` of a Sequence) until it says exit (or goes away); returns the `built` reports."""
    from .discovery.commands import serve

    built = []
    serve(channel, [entry], gate=gate, notices={"built": built.append}, stages=stages)
    return built


def _run_attached(model, inputs, options, monitor):
    """Runs turnkey on `model` called with `inputs`; returns (build report, stats, state)."""
    import torch
    import yaml

    from .discovery import export

    binary = turnkey_binary()
    export.load_onnx()
    script = _script_path() or _interactive_script(options.get("cache_dir"))
    entry, message = _describe_model(model, inputs, script)

    with sequence_flags(options.pop("sequence", None), allow_stages=True) as (seq, stages):
        return _attached_run(binary, script, entry, message, options, seq, stages, monitor,
                             torch, yaml)


def _attached_run(binary, script, entry, message, options, seq, stages, monitor, torch, yaml):
    from .discovery.protocol import Channel

    class ApiChannel(Channel):
        def pipe_closed(self, error):  # turnkey went away: its exit code and reason tell why
            raise BrokenPipeError(str(error))

    event_read, event_write = os.pipe()
    command_read, command_write = os.pipe()
    argv = [binary, script, "--attach=%d,%d" % (event_read, command_write)]
    argv += flag_args(**options) + seq
    gate = threading.Lock()
    try:
        process = subprocess.Popen(argv, pass_fds=(event_read, command_write),
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=environment(monitor))
    finally:
        os.close(event_read)
        os.close(command_write)
    outputs = [Output(process.stdout, "stdout", gate), Output(process.stderr, "stderr", gate)]
    channel = ApiChannel(event_write, command_read)
    built = []
    try:
        channel.send("hello", python=platform.python_version(), torch=torch.__version__,
                     onnx=_installed_version("onnx"),
                     onnxscript=_installed_version("onnxscript"), pid=os.getpid())
        channel.send("model", **message)
        channel.send("script_end", status="ok")
        channel.send("counts", counts={"0": 1}, first_call_s={})
        channel.send("ready")
        built = _serve(channel, entry, gate, stages)
    except BrokenPipeError:
        pass  # turnkey ended early (a usage error): its exit code says so below
    finally:
        os.close(event_write)
        channel._commands.close()
        os.close(command_read)
        exit_code = process.wait()
        for output in outputs:
            output.join()
    reasons = outputs[1].reasons
    if not built:
        raise TurnkeyError(failure(exit_code, reasons), exit_code=exit_code)
    report = built[-1]
    stats, state = read_build(report["build_dir"], report["build_name"], yaml)
    if report.get("status") != "successful":
        reason = report.get("error") or failure(exit_code, reasons)
        raise TurnkeyError("%s failed at %s: %s" % (report["build_name"],
                                                    report.get("failed_tool") or "?", reason),
                           report["build_name"], report["build_dir"], exit_code)
    return report, stats, state


# ---- the API -----------------------------------------------------------------------------------

def benchmark_model(model, inputs, build_name=None, iterations=100, cache_dir=None,
                    device="x86", runtime="ort", rebuild=None, sequence=None, onnx_opset=None,
                    rt_args=None, warmup=None, threads=None, build_only=False,
                    lean_cache=False, monitor=None, concurrency=None):
    """Builds `model` (a torch.nn.Module) called with `inputs` and benchmarks it.

    `concurrency`: requests in flight (one number; docs/measurement.md). The batch is the one of
    `inputs`: for a sweep over batch sizes or concurrencies, call it once per point.

    `inputs` is a dict of keyword arguments (the model is called as `model(**inputs)`), a
    tuple/list of positional arguments, or a single tensor. `sequence` is a named sequence, a
    sequence file, or a Sequence (turnkeyml.build.stage; its custom stages run here). Prints and
    returns a MeasuredPerformance (None with build_only=True). Raises TurnkeyError with
    turnkey's one-line reason when the build or benchmark fails.
    """
    if isinstance(runtime, (list, tuple)):
        if len(runtime) != 1:
            raise ValueError("runtime=%r: benchmark_model measures on one runtime (call it once "
                             "per runtime, or use benchmark_files)" % (list(runtime),))
        runtime = runtime[0]
    if isinstance(concurrency, (list, tuple)):
        raise ValueError("concurrency=%r: benchmark_model measures one point (call it once per "
                         "value, or use benchmark_files for a sweep)" % (list(concurrency),))
    options = dict(runtime=runtime, device=device, iterations=iterations, warmup=warmup,
                   threads=threads, cache_dir=cache_dir, rebuild=rebuild, sequence=sequence,
                   onnx_opset=onnx_opset, rt_args=rt_args, build_only=build_only,
                   lean_cache=lean_cache, build_name=build_name, concurrency=concurrency)
    report, stats, _ = _run_attached(model, inputs, options, monitor)
    if build_only:
        return None
    perf = MeasuredPerformance(stats, report["build_name"], report["build_dir"])
    perf.print()
    return perf


def build_model(model, inputs, sequence=None, build_name=None, cache_dir=None, rebuild=None,
                monitor=None, onnx_opset=None, lean_cache=False):
    """Builds `model` called with `inputs` through `sequence` (default onnx-fp32: export to
    ONNX; also optimize-fp32, optimize-fp16, check; a sequence file; a Sequence object) into
    the cache, without benchmarking.

    Returns the build's state (the `<build_name>_state.yaml` as a dict; `build_dir` and the
    final `onnx_path` among its keys). Raises TurnkeyError when the build fails.
    """
    options = dict(sequence=sequence, cache_dir=cache_dir, rebuild=rebuild,
                   onnx_opset=onnx_opset, build_only=True, lean_cache=lean_cache,
                   build_name=build_name)
    report, _, state = _run_attached(model, inputs, options, monitor)
    state = dict(state)
    state["build_dir"] = report["build_dir"]
    return state


def benchmark_files(input_files, runtime=None, device=None, iterations=None, cache_dir=None,
                    rebuild=None, sequence=None, onnx_opset=None, rt_args=None, warmup=None,
                    threads=None, build_only=False, analyze_only=False, lean_cache=False,
                    max_depth=None, script_args=None, labels=None, input_shapes=None,
                    python=None, process_isolation=False, use_slurm=False, timeout=None,
                    monitor=None, sandbox=False, sandbox_allow=None, concurrency=None,
                    batch_sizes=None):
    """`turnkey INPUT_FILES ...` with the CLI's options: scripts, ONNX files, globs, .txt lists
    (`script.py::HASH` filters too). turnkey prints its results; they land in the cache.
    `sandbox=True` runs the scripts in turnkey's sandbox (docs/sandbox.md), `sandbox_allow` a
    list of paths they may also write.
    `runtime` may be a list: every input is benchmarked on each, one run after the other.
    Sweeps (docs/measurement.md): `concurrency` (requests in flight) and `batch_sizes` take a
    number or a list, `input_shapes` a string or a list of them; every point is a result.

    Returns the performance results: a list of MeasuredPerformance, one per model benchmarked
    (per runtime), in the order they were built ([] with build_only or analyze_only). When some
    input failed (after all ran) or on a usage error, raises TurnkeyError with the last one-line
    reason; its `results` holds what did succeed.
    """
    import yaml

    if isinstance(input_files, (str, os.PathLike)):
        input_files = [input_files]
    runtimes = list(runtime) if isinstance(runtime, (list, tuple)) else [runtime]
    results, error = [], None
    with sequence_flags(sequence, allow_stages=False) as (seq, _):
        for each in runtimes:
            argv = [turnkey_binary()] + [os.fspath(f) for f in input_files] + seq
            argv += flag_args(runtime=each, device=device, iterations=iterations,
                              warmup=warmup, threads=threads, cache_dir=cache_dir,
                              rebuild=rebuild, onnx_opset=onnx_opset, rt_args=rt_args,
                              build_only=build_only, analyze_only=analyze_only,
                              lean_cache=lean_cache, max_depth=max_depth,
                              script_args=script_args, labels=labels,
                              input_shapes=input_shapes, python=python,
                              process_isolation=process_isolation, use_slurm=use_slurm,
                              timeout=timeout, sandbox=sandbox, sandbox_allow=sandbox_allow,
                              concurrency=concurrency, batch_sizes=batch_sizes)
            started = time.time()
            gate = threading.Lock()
            process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, env=environment(monitor))
            outputs = [Output(process.stdout, "stdout", gate),
                       Output(process.stderr, "stderr", gate)]
            exit_code = process.wait()
            for output in outputs:
                output.join()
            if exit_code == 2:  # a usage error: no run happened
                raise TurnkeyError(failure(exit_code, outputs[1].reasons), exit_code=exit_code)
            if not (build_only or analyze_only):
                results += results_since(cache_dir, started, yaml)
            if exit_code != 0:
                error = TurnkeyError(failure(exit_code, outputs[1].reasons), exit_code=exit_code)
    if error is not None:
        error.results = results
        raise error
    return results
