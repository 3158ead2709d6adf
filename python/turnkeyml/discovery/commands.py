"""The command loop of the Python side (docs/protocol.md, C++ -> Python): export, timing and
profiling of live models (torch-eager, torch-compiled), tracing (torchscript), reference
outputs. One loop for the runner (a script turnkey started) and for the Python API (turnkey
attached to the caller)."""

import contextlib
import re
import sys
import traceback

from .protocol import PROTOCOL_VERSION


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class CommandError(ValueError):
    """A command the Python side cannot carry out as asked (an id it never sent): the core's
    message, or a forged one, is at fault, not this code, so its reply has no traceback."""


def one_line(error):
    """The error's first line, without terminal colour codes (torch's exporter prints some)."""
    message = (_ANSI.sub("", str(error)).strip().splitlines() or [""])[0]
    return "%s: %s" % (type(error).__name__, message) if message else type(error).__name__


def reason(error):
    """The error's one line and, where it wraps the error that stopped the work, the innermost
    cause's too: torch.onnx's ConversionError ("Error when translating node %scaled_dot_product_
    attention ... See the stack trace") says which step and op failed, the error it was raised
    from (an AssertionError of the op's translation) why."""
    root, seen = error, {id(error)}
    while root.__cause__ is not None and id(root.__cause__) not in seen:
        root = root.__cause__
        seen.add(id(root))
    line = one_line(error)
    return line if root is error else "%s (because %s)" % (line, one_line(root))


def error_fields(error):
    """An error as the protocol sends it (docs/protocol.md): the one line for people, and apart
    from it the exception's class name and, when the error has a status of its own, that status
    (the core never reads either out of the one line)."""
    fields = {"error": reason(error), "error_type": type(error).__name__}
    if is_out_of_memory(error):
        fields["error_status"] = "out_of_memory"
    return fields


# The whole message of a RuntimeError that is a failed allocation passed on by torch or by its
# bindings: a C++ std::bad_alloc (e.g. the ONNX exporter's shape inference), and pybind11's for a
# Python object it could not allocate (the TorchScript exporter hands its serialized graph to
# Python as bytes: a 494 M-parameter model's export peaks at 8.4 GB).
_ALLOCATION_FAILURES = ("std::bad_alloc", "Could not allocate bytes object!",
                        "Could not allocate string object!")


def is_out_of_memory(error):
    """A failed allocation, however it reached Python: a MemoryError, torch's OutOfMemoryError
    (CUDA and others), or a RuntimeError that is torch passing on its allocator's own failure,
    which torch reports by that fixed text (_ALLOCATION_FAILURES, or the CPU allocator's
    "can't allocate memory")."""
    if isinstance(error, MemoryError) or type(error).__name__ == "OutOfMemoryError":
        return True
    if type(error) is not RuntimeError:
        return False
    message = str(error).strip()
    return (message in _ALLOCATION_FAILURES
            or "DefaultCPUAllocator: can't allocate memory" in message)


def _beside_tensorflow(exporters, reply):
    """The exporters a PyTorch model can use in this process. Where the script has loaded
    TensorFlow, torch.export (the dynamo exporter) aborts the whole process ("LLVM ERROR:
    inconsistency in registered CommandLine options": TensorFlow and torch's Triton each carry
    LLVM), so it is left out and the reply says so; asked for alone, it fails in one line."""
    if "tensorflow" not in sys.modules or "dynamo" not in exporters:
        return exporters
    why = ("the dynamo exporter aborts a process that has loaded TensorFlow (TensorFlow and "
           "torch's Triton each carry LLVM)")
    rest = [e for e in exporters if e != "dynamo"]
    if not rest:
        raise ValueError(why + ": use --exporter torchscript for this script")
    reply["exporter_fallback"] = "dynamo exporter skipped: " + why
    return rest


def serve(channel, entries, gate=None, notices=None, stages=None):
    """Answers commands until `exit` or end of file (returns 0), or a protocol version mismatch
    (returns 1). Each reply carries `ok`; a failure is `ok: false` with a one-line `error` and
    the traceback, never an exit. `gate` (a lock) is held while a command runs; `notices` maps
    command types that get no reply (the API's `built`) to a function of the command; `stages`
    maps names to the custom stages this process runs (the API's Sequence objects)."""
    commands = _Commands(entries, stages or {})
    handlers = {kind: (reply_type, getattr(commands, method))
                for kind, (reply_type, method) in _Commands.TABLE.items()}
    try:
        return _loop(channel, handlers, gate if gate is not None else contextlib.nullcontext(),
                     notices or {}, commands.release)
    finally:
        try:
            commands.release()  # the API's caller gets its model back where it was
        except Exception:  # a GPU gone bad at exit; the run's results are already sent
            traceback.print_exc()


class _Commands:
    """The commands that reply, one method each (`TABLE`: command type -> reply type, method),
    over the models the script made (`entries`, by id) and the one prepared benchmark session."""

    TABLE = {
        "stage": ("stage_done", "stage"),
        "export": ("exported", "export"),
        "bench_prepare": ("bench_ready", "bench_prepare"),
        "bench_run": ("bench_samples", "bench_run"),
        "bench_outputs": ("bench_outputs", "bench_outputs"),
        "bench_profile": ("bench_profiled", "bench_profile"),
        "reference": ("reference_saved", "reference"),
        "float64": ("float64_saved", "float64"),
        "trace": ("traced", "trace"),
    }

    def __init__(self, entries, stages):
        self.entries = entries
        self.stages = stages
        self.modules = {}  # imported once there is work (torch.onnx, onnx)
        self.bench = None

    def entry_of(self, command):
        entry_id = command.get("id")
        if not isinstance(entry_id, int) or not 0 <= entry_id < len(self.entries):
            raise CommandError("no model with id %r" % (entry_id,))
        return self.entries[entry_id]

    def module(self, name):
        if name not in self.modules:
            if name == "export":
                from . import export as loaded
            elif name == "keras":
                from . import keras_build as loaded
            else:
                from . import timing as loaded
            self.modules[name] = loaded
        return self.modules[name]

    def release(self):
        """Ends the prepared session: on nvidia its module goes back where the script had it,
        before anything else uses the model (docs/gpu.md)."""
        bench, self.bench = self.bench, None
        if bench is not None:
            bench.release()

    def export(self, command, reply):
        # `exporters`: the order to try (auto: torch's default, then the other); older cores
        # sent only `exporter`.
        exporters = command.get("exporters") or [command.get("exporter") or "torchscript"]
        if not isinstance(exporters, list) or not all(e in ("torchscript", "dynamo")
                                                      for e in exporters):
            raise ValueError("exporters must be a list of torchscript/dynamo, got %r"
                             % (exporters,))
        entry = self.entry_of(command)
        if _is_keras(entry):
            self.module("keras").export(entry, command["path"], int(command["opset"]),
                                        command["io_dir"], reply)
            return
        self.module("export").export(entry, command["path"], int(command["opset"]),
                                     command["io_dir"], reply,
                                     _beside_tensorflow(exporters, reply),
                                     float64=command.get("float64", True) is not False)

    def bench_prepare(self, command, reply):
        self.release()
        entry = self.entry_of(command)
        mode = command.get("mode", "eager")
        if mode == "keras" or _is_keras(entry):
            if not _is_keras(entry):
                raise ValueError("the keras runtime runs Keras models; %s is a PyTorch model"
                                 % entry.message.get("name"))
            if mode != "keras":
                _pytorch_only(entry, "torch-%s" % mode)
            self.bench = self.module("keras").Bench(entry, command.get("threads", 0),
                                                    command.get("cpus") or [])
            reply["threads"] = self.bench.threads
            return
        self.bench = self.module("timing").Bench(entry, mode, command.get("threads", 0),
                                                 command.get("cpus") or [],
                                                 command.get("compile") or {},
                                                 command.get("device") or "x86")
        reply["threads"] = self.bench.threads
        if self.bench.compiled is not None:
            reply["compiled"] = self.bench.compiled
        if self.bench.cuda is not None:
            reply["cuda"] = self.bench.cuda

    def prepared(self, command):
        """The prepared Bench and the command's call count (both checked)."""
        if self.bench is None:
            raise ValueError("%s before a successful bench_prepare" % command.get("type"))
        n = command.get("n")
        if not isinstance(n, int) or n < 1:
            raise ValueError("n must be a positive integer, got %r" % (n,))
        return self.bench, n

    def bench_run(self, command, reply):
        bench, n = self.prepared(command)
        reply["samples_ns"] = bench.run(n, bool(command.get("empty")))
        if bench.device_memory() is not None:
            reply["device_memory"] = bench.device_memory()

    def bench_profile(self, command, reply):
        bench, n = self.prepared(command)
        reply["ops"], reply["run_ms"] = bench.profile(n, command["path"])

    def bench_outputs(self, command, reply):
        if self.bench is None:
            raise ValueError("bench_outputs before a successful bench_prepare")
        reply["outputs"] = self.bench.save_outputs(command["io_dir"])

    def float64(self, command, reply):
        entry = self.entry_of(command)
        _pytorch_only(entry, "a float64 reference")
        names, shapes = command.get("names"), command.get("shapes")
        if (not isinstance(names, list) or not isinstance(shapes, list)
                or len(names) != len(shapes) or not all(isinstance(n, str) for n in names)
                or not all(isinstance(s, list) and all(isinstance(d, int) for d in s)
                           for s in shapes)):
            raise ValueError("names and shapes must be lists of one length, of strings and of "
                             "lists of integers")
        self.module("export").float64_outputs(entry, command["io_dir"], names, shapes, reply)

    def reference(self, command, reply):
        entry = self.entry_of(command)
        reply["inputs"], reply["outputs"] = \
            self.module("keras" if _is_keras(entry) else "timing").reference_io(
                entry, command["io_dir"])

    def trace(self, command, reply):
        entry = self.entry_of(command)
        _pytorch_only(entry, "torchscript")
        reply["inputs"] = self.module("timing").trace(entry, command["path"], command["io_dir"])
        reply["path"] = command["path"]

    def stage(self, command, reply):
        import io

        from ..build import stage as build_stage

        stage = self.stages.get(command.get("stage"))
        if stage is None:
            raise ValueError("this process holds no custom stage %r" % (command.get("stage"),))
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed):
                build_stage.fire(stage, command["input"], command["output"])
        finally:
            reply["log"] = printed.getvalue()


def _is_keras(entry):
    return getattr(entry, "framework", "torch") == "keras"


def _pytorch_only(entry, what):
    if _is_keras(entry):
        raise ValueError("%s runs PyTorch models; %s is a Keras model (--runtime keras, or "
                         "ort on its ONNX export)" % (what, entry.message.get("name")))


def _loop(channel, handlers, gate, notices, release):
    while True:
        try:
            command = channel.receive()
        except (ValueError, UnicodeDecodeError) as error:
            channel.send("error", error="bad command: %s" % one_line(error))
            continue
        if command is None or command.get("type") == "exit":
            return 0
        if command.get("v") != PROTOCOL_VERSION:
            channel.send("error", error="protocol version mismatch: Python side speaks %d, "
                         "core speaks %s" % (PROTOCOL_VERSION, command.get("v")))
            return 1
        if command.get("type") in notices:
            notices[command["type"]](command)
            continue
        handler = handlers.get(command.get("type"))
        if handler is None:
            channel.send("error", error="unknown command type %r" % command.get("type"))
            continue
        reply_type, function = handler
        reply = {"id": command.get("id"), "ok": False}
        try:
            with gate:
                if not command["type"].startswith("bench_"):
                    release()  # the model leaves the GPU before it is exported, traced or re-run
                function(command, reply)
            reply["ok"] = True
        except Exception as error:  # the command's failure is the core's to report
            reply.update(error_fields(error))
            if not isinstance(error, CommandError):
                reply["traceback"] = traceback.format_exc()
        channel.send(reply_type, **reply)
