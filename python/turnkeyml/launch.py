"""Starting the turnkey binary for the Python API (docs/python_api.md): finding it, the classic
grammar's options for the API's arguments, forwarding its output, its one-line failures."""

import contextlib
import json
import os
import shutil
import sys
import tempfile
import threading

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


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
        self.results = []  # benchmark_files: the MeasuredPerformance of the inputs that succeeded


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

class Output:
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


def flag_args(runtime=None, device=None, iterations=None, warmup=None, threads=None,
               cache_dir=None, rebuild=None, onnx_opset=None, rt_args=None,
               build_only=False, analyze_only=False, lean_cache=False, max_depth=None,
               script_args=None, labels=None, input_shapes=None, python=None, build_name=None,
               process_isolation=False, use_slurm=False, timeout=None, sandbox=False,
               sandbox_allow=None, concurrency=None, batch_sizes=None):
    """The classic grammar's options for the values given (None = turnkey's default); the
    sequence is sequence_flags'."""
    args = []
    if build_name is not None:
        if not isinstance(build_name, str) or not build_name or "/" in build_name or \
                build_name in (".", ".."):
            raise ValueError("build_name %r: not a usable directory name" % (build_name,))
        args.append("--build-name=%s" % build_name)
    for flag, value in (("--runtime", runtime), ("--device", device),
                        ("--iterations", iterations), ("--warmup", warmup),
                        ("--threads", threads), ("--cache-dir", cache_dir),
                        ("--rebuild", rebuild),
                        ("--onnx-opset", onnx_opset), ("--max-depth", max_depth),
                        ("--python", python),
                        ("--timeout", timeout)):
        if value is not None:
            args.append("%s=%s" % (flag, os.fspath(value) if flag == "--cache-dir" else value))
    if script_args is not None:
        args.append("--script-args=%s" % script_args)
    # A list of shapes sweeps them: the option once per item, one result each.
    if input_shapes is not None:
        for shapes in input_shapes if isinstance(input_shapes, (list, tuple)) else [input_shapes]:
            args.append("--input-shapes=%s" % shapes)
    # Sweeps (docs/measurement.md): a number or a list of numbers, "1,2,4" on the command line.
    for flag, value in (("--concurrency", concurrency), ("--batch-sizes", batch_sizes)):
        if value is None:
            continue
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        args.append("%s=%s" % (flag, ",".join(str(v) for v in values)))
    if rt_args:
        items = rt_args.items() if isinstance(rt_args, dict) else [a.split("=", 1) for a in rt_args]
        args.append("--rt-args")
        args.extend("%s=%s" % (k, v) for k, v in items)
    if labels:
        args.append("--labels")
        args.extend(labels)
    for flag, on in (("--build-only", build_only), ("--analyze-only", analyze_only),
                     ("--lean-cache", lean_cache), ("--process-isolation", process_isolation),
                     ("--use-slurm", use_slurm), ("--sandbox", sandbox)):
        if on:
            args.append(flag)
    for path in sandbox_allow or ():
        args.append("--sandbox-allow=%s" % os.fspath(path))
    return args


def environment(monitor):
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


def failure(exit_code, reasons):
    if reasons:
        reason = reasons[-1]
        return reason[len("error: "):] if reason.startswith("error: ") else reason
    return "turnkey exited with code %s" % exit_code


@contextlib.contextmanager
def sequence_flags(sequence, allow_stages):
    """Yields (options, custom stages) for `sequence=`: a named sequence ("optimize-fp16"), a
    sequence file (a .py or .yaml path), a list of tool and stage names, or a Sequence object
    (written to a temporary sequence file; its custom stages run in this process, which only
    an attached run (benchmark_model, build_model) can do)."""
    if sequence is None:
        yield [], {}
        return
    if isinstance(sequence, (str, os.PathLike)):
        text = os.fspath(sequence)
        if text.endswith((".py", ".yaml", ".yml")):
            yield ["--sequence-file=%s" % text], {}
        else:
            yield ["--sequence=%s" % text], {}
        return
    from .build import stage as build_stage

    if isinstance(sequence, (list, tuple)):
        sequence = build_stage.Sequence("api_sequence", stages=sequence)
    calls = build_stage.tool_calls(sequence)
    stages = build_stage.custom_stages(sequence)
    if stages and not allow_stages:
        raise ValueError("sequence %r: custom stages (%s) run from a sequence file here: pass "
                         "its path as sequence=" % (sequence.unique_name, ", ".join(stages)))
    fd, path = tempfile.mkstemp(prefix="turnkey-sequence-", suffix=".yaml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(calls, f)  # JSON is YAML
        yield ["--sequence-file=%s" % path], stages
    finally:
        os.unlink(path)

