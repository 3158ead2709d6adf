"""The Python API: benchmark_model, build_model, benchmark_files (docs/python_api.md).

Python only describes, hashes and exports the live model (the same code as discovery, so build
names and cache contents match what `turnkey script.py` produces) and hands over to the C++
`turnkey` binary, which runs the build sequence, benchmarks and writes the cache. turnkey is
started with `discover --attach E,C`: instead of starting an interpreter on the script, it talks
the discovery protocol (docs/protocol.md) with this process over two pipes.
"""

import os
import platform
import shutil
import subprocess
import sys
import threading

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))

from .results import LATENCY_UNITS, THROUGHPUT_UNITS, MeasuredPerformance, read_build

class TurnkeyError(RuntimeError):
    """A build, benchmark or run failed; the message is turnkey's one-line reason.

    `build_name` and `build_dir` name the build in the cache when there was one (its logs say
    more); `exit_code` is turnkey's exit code when it ended with one.
    """

    def __init__(self, message, build_name=None, build_dir=None, exit_code=None):
        super().__init__(message)
        self.build_name = build_name
        self.build_dir = build_dir
        self.exit_code = exit_code


# ---- finding the binary ----------------------------------------------------------------------

def turnkey_binary():
    """TURNKEY_BIN, else the build next to this source tree (<repo>/build/turnkey), else an
    installation's <prefix>/bin/turnkey, else `turnkey` on PATH."""
    env = os.environ.get("TURNKEY_BIN")
    if env:
        if not os.access(env, os.X_OK):
            raise TurnkeyError("TURNKEY_BIN=%s: not an executable file" % env)
        return env
    python_dir = os.path.dirname(_PACKAGE_DIR)
    candidates = [
        os.path.join(os.path.dirname(python_dir), "build", "turnkey"),  # python_dir: <repo>/python
        # python_dir: <prefix>/share/turnkey/python
        os.path.join(python_dir, "..", "..", "..", "bin", "turnkey"),
    ]
    for candidate in candidates:
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return os.path.normpath(candidate)
    found = shutil.which("turnkey")
    if found:
        return found
    raise TurnkeyError("the turnkey binary was not found (looked at %s and PATH): build it with "
                       "scripts/setup or set TURNKEY_BIN" % ", ".join(
                           os.path.normpath(c) for c in candidates))


# ---- running turnkey -------------------------------------------------------------------------

class _Output:
    """Forwards one of turnkey's output pipes to our sys.stdout / sys.stderr (so notebooks see
    it), keeping turnkey's one-line `turnkey: ...` reasons. `gate` is held while an export runs:
    the export redirects fds 1 and 2 into its log, which must not swallow turnkey's lines."""

    def __init__(self, pipe, stream_name, gate):
        self.reasons = []
        self._pipe = pipe
        self._stream_name = stream_name
        self._gate = gate
        self._thread = threading.Thread(target=self._pump, daemon=True)
        self._thread.start()

    def _pump(self):
        for raw in iter(self._pipe.readline, b""):
            line = raw.decode("utf-8", "replace")
            if line.startswith("turnkey: "):
                self.reasons.append(line[len("turnkey: "):].strip())
            with self._gate:
                stream = getattr(sys, self._stream_name)
                stream.write(line)
                stream.flush()
        self._pipe.close()

    def join(self):
        self._thread.join()


def _flag_args(runtime=None, device=None, iterations=None, warmup=None, threads=None,
               cache_dir=None, rebuild=None, sequence=None, onnx_opset=None, rt_args=None,
               build_only=False, analyze_only=False, lean_cache=False, max_depth=None,
               script_args=None, labels=None, input_shapes=None, python=None, build_name=None,
               process_isolation=False, use_slurm=False, timeout=None):
    """The classic grammar's options for the values given (None = turnkey's default)."""
    args = []
    if build_name is not None:
        if not isinstance(build_name, str) or not build_name or "/" in build_name or \
                build_name in (".", ".."):
            raise ValueError("build_name %r: not a usable directory name" % (build_name,))
        args.append("--build-name=%s" % build_name)
    for flag, value in (("--runtime", runtime), ("--device", device),
                        ("--iterations", iterations), ("--warmup", warmup),
                        ("--threads", threads), ("--cache-dir", cache_dir),
                        ("--rebuild", rebuild), ("--sequence", sequence),
                        ("--onnx-opset", onnx_opset), ("--max-depth", max_depth),
                        ("--input-shapes", input_shapes), ("--python", python),
                        ("--timeout", timeout)):
        if value is not None:
            args.append("%s=%s" % (flag, os.fspath(value) if flag == "--cache-dir" else value))
    if script_args is not None:
        args.append("--script-args=%s" % script_args)
    if rt_args:
        items = rt_args.items() if isinstance(rt_args, dict) else [a.split("=", 1) for a in rt_args]
        args.append("--rt-args")
        args.extend("%s=%s" % (k, v) for k, v in items)
    if labels:
        args.append("--labels")
        args.extend(labels)
    for flag, on in (("--build-only", build_only), ("--analyze-only", analyze_only),
                     ("--lean-cache", lean_cache), ("--process-isolation", process_isolation),
                     ("--use-slurm", use_slurm)):
        if on:
            args.append(flag)
    return args


def _environment(monitor):
    env = dict(os.environ)
    # An interpreter in another root (the torch 2 wrapper of scripts/setup-torch2) names where
    # the turnkey binary finds its own libraries there; turnkey restores the caller's
    # LD_LIBRARY_PATH at start, so its children (Python among them) never see that path.
    bin_libs = os.environ.get("TURNKEY_BIN_LIBRARY_PATH")
    if bin_libs:
        before = env.get("LD_LIBRARY_PATH", "")
        env["TURNKEY_LD_LIBRARY_PATH_BEFORE"] = before
        env["LD_LIBRARY_PATH"] = bin_libs + (":" + before if before else "")
    if monitor is not None:
        env["TURNKEY_BUILD_MONITOR"] = "True" if monitor else "False"
    return env


def _failure(exit_code, reasons):
    if reasons:
        reason = reasons[-1]
        return reason[len("error: "):] if reason.startswith("error: ") else reason
    return "turnkey exited with code %s" % exit_code


# ---- the model side --------------------------------------------------------------------------

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


def _as_call(inputs):
    """(args, kwargs) of the call `inputs` describes: a dict is keyword arguments (the
    reference's `model(**inputs)`), a tuple or list positional arguments, anything else the
    one positional argument."""
    if isinstance(inputs, dict):
        return (), dict(inputs)
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}
    return (inputs,), {}


def _describe_model(model, inputs, script):
    """(entry, model message) for `model` called with `inputs`: the names, signature and hash
    discovery would have given it (docs/protocol.md, docs/hashing.md)."""
    import torch

    from .discovery import hashing, hooks
    from .discovery import inputs as signature

    if not isinstance(model, torch.nn.Module):
        raise TypeError("model must be a torch.nn.Module, got %s" % type(model).__name__)
    args, kwargs = _as_call(inputs)
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


def _serve(channel, entry, gate):
    """Answers turnkey's commands (export, timing, tracing of `entry`, id 0) until it says exit
    (or goes away); returns the `built` reports."""
    from .discovery.commands import serve

    built = []
    serve(channel, [entry], gate=gate, notices={"built": built.append})
    return built


def _run_attached(model, inputs, options, monitor):
    """Runs turnkey on `model` called with `inputs`; returns (build report, stats, state)."""
    import importlib.metadata

    import torch
    import yaml

    from .discovery import export
    from .discovery.protocol import Channel

    binary = turnkey_binary()
    export.load_onnx()
    script = _script_path() or _interactive_script(options.get("cache_dir"))
    entry, message = _describe_model(model, inputs, script)

    class ApiChannel(Channel):
        def pipe_closed(self, error):  # turnkey went away: its exit code and reason tell why
            raise BrokenPipeError(str(error))

    event_read, event_write = os.pipe()
    command_read, command_write = os.pipe()
    argv = [binary, script, "--attach=%d,%d" % (event_read, command_write)]
    argv += _flag_args(**options)
    gate = threading.Lock()
    try:
        process = subprocess.Popen(argv, pass_fds=(event_read, command_write),
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, env=_environment(monitor))
    finally:
        os.close(event_read)
        os.close(command_write)
    outputs = [_Output(process.stdout, "stdout", gate), _Output(process.stderr, "stderr", gate)]
    channel = ApiChannel(event_write, command_read)
    built = []
    try:
        try:
            onnx_version = importlib.metadata.version("onnx")
        except importlib.metadata.PackageNotFoundError:
            onnx_version = None
        channel.send("hello", python=platform.python_version(), torch=torch.__version__,
                     onnx=onnx_version, pid=os.getpid())
        channel.send("model", **message)
        channel.send("script_end", status="ok")
        channel.send("counts", counts={"0": 1}, first_call_s={})
        channel.send("ready")
        built = _serve(channel, entry, gate)
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
        raise TurnkeyError(_failure(exit_code, reasons), exit_code=exit_code)
    report = built[-1]
    stats, state = read_build(report["build_dir"], report["build_name"], yaml)
    if report.get("status") != "successful":
        reason = report.get("error") or _failure(exit_code, reasons)
        raise TurnkeyError("%s failed at %s: %s" % (report["build_name"],
                                                    report.get("failed_tool") or "?", reason),
                           report["build_name"], report["build_dir"], exit_code)
    return report, stats, state


# ---- the API -----------------------------------------------------------------------------------

def benchmark_model(model, inputs, build_name=None, iterations=100, cache_dir=None,
                    device="x86", runtime="ort", rebuild=None, sequence=None, onnx_opset=None,
                    rt_args=None, warmup=None, threads=None, build_only=False,
                    lean_cache=False, monitor=None):
    """Builds `model` (a torch.nn.Module) called with `inputs` and benchmarks it.

    `inputs` is a dict of keyword arguments (the model is called as `model(**inputs)`), a
    tuple/list of positional arguments, or a single tensor. Returns a MeasuredPerformance (None
    with build_only=True). Raises TurnkeyError with turnkey's one-line reason when the build or
    benchmark fails.
    """
    options = dict(runtime=runtime, device=device, iterations=iterations, warmup=warmup,
                   threads=threads, cache_dir=cache_dir, rebuild=rebuild, sequence=sequence,
                   onnx_opset=onnx_opset, rt_args=rt_args, build_only=build_only,
                   lean_cache=lean_cache, build_name=build_name)
    report, stats, _ = _run_attached(model, inputs, options, monitor)
    if build_only:
        return None
    return MeasuredPerformance(stats, report["build_name"], report["build_dir"])


def build_model(model, inputs, sequence=None, build_name=None, cache_dir=None, rebuild=None,
                monitor=None, onnx_opset=None, lean_cache=False):
    """Builds `model` called with `inputs` through `sequence` (default onnx-fp32: export to
    ONNX; also optimize-fp32, optimize-fp16, check) into the cache, without benchmarking.

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
                    monitor=None):
    """`turnkey INPUT_FILES ...` with the CLI's options: scripts, ONNX files, globs, .txt lists
    (`script.py::HASH` filters too). turnkey prints its results; they land in the cache.

    Returns None when every input succeeded; raises TurnkeyError with the last one-line reason
    when some failed (after all inputs ran) or on a usage error.
    """
    if isinstance(input_files, (str, os.PathLike)):
        input_files = [input_files]
    argv = [turnkey_binary()] + [os.fspath(f) for f in input_files]
    argv += _flag_args(runtime=runtime, device=device, iterations=iterations, warmup=warmup,
                       threads=threads, cache_dir=cache_dir, rebuild=rebuild,
                       sequence=sequence, onnx_opset=onnx_opset, rt_args=rt_args,
                       build_only=build_only, analyze_only=analyze_only,
                       lean_cache=lean_cache, max_depth=max_depth, script_args=script_args,
                       labels=labels, input_shapes=input_shapes, python=python,
                       process_isolation=process_isolation, use_slurm=use_slurm,
                       timeout=timeout)
    gate = threading.Lock()
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=_environment(monitor))
    outputs = [_Output(process.stdout, "stdout", gate), _Output(process.stderr, "stderr", gate)]
    exit_code = process.wait()
    for output in outputs:
        output.join()
    if exit_code != 0:
        raise TurnkeyError(_failure(exit_code, outputs[1].reasons), exit_code=exit_code)
