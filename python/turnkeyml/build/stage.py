"""`Sequence` and `Stage`: a build sequence written in Python (docs/sequences.md).

A Sequence lists stages. A built-in stage stands for one of turnkey's C++ tools (its `tool`,
e.g. export-pytorch) and only carries that tool's options; the C++ core runs it. A custom stage
is a subclass of Stage with a `fire(input_onnx, output_onnx)` method: the C++ core runs it
through the Python side (`python -m turnkeyml.build run ...`, or the calling process for the
Python API), with its own cache key and its own log `log_<unique_name>.txt`.

Nothing here imports torch or onnx: reading a sequence file is fast.
"""

import hashlib
import importlib.util
import inspect
import os
import re
import sys

# The reference tool's stage names, as aliases of turnkey's tools. None: no tool (turnkey marks
# a build successful by itself when its last tool succeeds).
STAGE_ALIASES = {
    "export_pytorch": "export-pytorch",
    "optimize_onnx": "optimize-ort",
    "fp16_conversion": "convert-fp16",
    "check_onnx": "check-onnx",
    "set_success": None,
}

# turnkey's build tools a sequence may name (the tool table, src/catalog/tools.cpp); a first tool
# may only start it (turnkey picks it from the input anyway).
BUILD_TOOLS = ("export-pytorch", "optimize-ort", "convert-fp16", "check-onnx", "benchmark")
FIRST_TOOLS = ("discover", "load-onnx")

# The tool that runs custom stages (src/stages/python_stage.cpp).
PYTHON_STAGE_TOOL = "python-stage"

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class SequenceError(ValueError):
    """A sequence that cannot be used; the message is one line naming what is wrong."""


class Stage:
    """One step of a build.

    Built-in stages set `tool` (a turnkey tool name) and pass that tool's options as keyword
    arguments, e.g. `OptimizeOnnxModel(level="extended")`. A custom stage subclasses Stage,
    leaves `tool` None and implements `fire`; its keyword arguments are its own parameters
    (`self.options`), part of its cache key.
    """

    tool = None

    def __init__(self, unique_name=None, monitor_message=None, **options):
        self.unique_name = unique_name or _default_name(type(self))
        self.monitor_message = monitor_message or self.unique_name
        self.options = dict(options)

    def fire(self, input_onnx, output_onnx):
        """Reads the ONNX file `input_onnx` and writes the transformed model to `output_onnx`.
        What it prints goes to the stage's log; an exception fails the build with its message."""
        raise NotImplementedError("%s does not implement fire(input_onnx, output_onnx)"
                                  % type(self).__name__)

    def cache_key(self):
        """Anything beyond the input model and this class's source code that changes what
        fire() writes: a changed key runs the stage again instead of reusing its output."""
        return repr(sorted(self.options.items()))

    def __repr__(self):
        return "%s(%r)" % (type(self).__name__, self.unique_name)


class Tool(Stage):
    """Any turnkey build tool by name, with its options: `Tool("optimize-ort", level="all")`."""

    def __init__(self, tool, **options):
        name = STAGE_ALIASES.get(tool, tool)
        if name not in BUILD_TOOLS + FIRST_TOOLS:
            raise SequenceError("%r is not a build tool (known: %s)" % (tool, ", ".join(
                BUILD_TOOLS + tuple(STAGE_ALIASES))))
        super().__init__(unique_name=name, **options)
        self.tool = name


class Sequence(Stage):
    """An ordered list of stages: Stage objects, or tool names (`"optimize-ort"`) and the
    reference tool's stage names (`"export_pytorch"`, `"optimize_onnx"`, `"fp16_conversion"`,
    `"set_success"`)."""

    def __init__(self, unique_name, monitor_message=None, stages=(),
                 enable_model_validation=False):
        super().__init__(unique_name, monitor_message)
        self.stages = list(stages)
        self.enable_model_validation = enable_model_validation

    def fire(self, input_onnx, output_onnx):
        raise SequenceError("a Sequence is not fired itself: turnkey runs its stages")


def _default_name(cls):
    name = getattr(cls, "unique_name", None)
    if isinstance(name, str):
        return name
    # AddMetadata -> add-metadata
    return re.sub(r"(?<!^)(?=[A-Z])", "-", cls.__name__).lower()


def _flatten(stages):
    for stage in stages:
        if isinstance(stage, Sequence):
            yield from _flatten(stage.stages)
        elif isinstance(stage, str):
            if stage in STAGE_ALIASES and STAGE_ALIASES[stage] is None:
                continue
            yield Tool(stage)
        elif isinstance(stage, Stage):
            yield stage
        else:
            raise SequenceError("stage %r: expected a Stage or a tool name, got %s"
                                % (stage, type(stage).__name__))


def source_key(stage):
    """The cache key of a custom stage: its class's source code and its cache_key()."""
    cls = type(stage)
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        source = "%s.%s" % (cls.__module__, cls.__qualname__)
    extra = stage.cache_key()
    digest = hashlib.sha256((source + "\0" + str(extra)).encode("utf-8", "replace"))
    return digest.hexdigest()[:16]


def custom_stages(sequence):
    """{unique_name: stage} of the custom stages of `sequence`."""
    return {s.unique_name: s for s in _flatten(sequence.stages)
            if s.tool is None and not getattr(s, "skip", False)}


def tool_calls(sequence, file=""):
    """The sequence as turnkey's tool calls: [{"name": tool, "options": {...}}]. Custom stages
    become `python-stage` calls naming the stage, `file` (the sequence file it is in; "" for
    stages living in the calling process) and its key."""
    if not isinstance(sequence, Sequence):
        raise SequenceError("expected a turnkeyml Sequence, got %s" % type(sequence).__name__)
    calls, names = [], set()
    for stage in _flatten(sequence.stages):
        if getattr(stage, "skip", False):
            continue
        if stage.tool is not None:
            if stage.tool in FIRST_TOOLS and not calls:
                continue  # turnkey starts with it for the input's kind
            if stage.tool not in BUILD_TOOLS:
                raise SequenceError("stage %s: %r is not a build tool" % (stage, stage.tool))
            calls.append({"name": stage.tool, "options": dict(stage.options)})
            continue
        name = stage.unique_name
        if not isinstance(name, str) or not _NAME.match(name):
            raise SequenceError("stage %r: a unique_name is letters, digits, '_', '.', '-' "
                                "(at most 64)" % (name,))
        if name in names or name in BUILD_TOOLS or name in STAGE_ALIASES or \
                name == PYTHON_STAGE_TOOL:
            raise SequenceError("stage name %r is taken: give each custom stage its own "
                                "unique_name" % name)
        if type(stage).fire is Stage.fire:
            raise SequenceError("stage %r: %s does not implement fire(input_onnx, output_onnx)"
                                % (name, type(stage).__name__))
        names.add(name)
        calls.append({"name": PYTHON_STAGE_TOOL,
                      "options": {"stage": name, "file": file, "key": source_key(stage)}})
    if not calls:
        raise SequenceError("sequence %r has no build tool" % sequence.unique_name)
    return calls


def load_module(path):
    """Imports the Python file `path` as a module of its own (not __main__); its folder comes
    first on sys.path so it can import its neighbours."""
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise SequenceError("%s: no such file" % path)
    name = "turnkey_sequence_%s" % hashlib.sha256(path.encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_sequence(path):
    """The Sequence a sequence file defines: what its `get_sequence()` returns (the reference
    tool's convention), else its one module-level Sequence."""
    module = load_module(path)
    getter = getattr(module, "get_sequence", None)
    if callable(getter):
        sequence = getter()
        if not isinstance(sequence, Sequence):
            raise SequenceError("%s: get_sequence() returned %s, not a Sequence"
                                % (path, type(sequence).__name__))
        return sequence
    found = [v for k, v in vars(module).items()
             if isinstance(v, Sequence) and not k.startswith("_")]
    if len(found) != 1:
        raise SequenceError("%s: %s (define exactly one, or a get_sequence() function)" % (
            path, "defines no Sequence" if not found else "defines %d Sequences (%s)" % (
                len(found), ", ".join(s.unique_name for s in found))))
    return found[0]


def fire(stage, input_onnx, output_onnx):
    """Runs a custom stage and checks that it wrote its output."""
    if os.path.exists(output_onnx):
        os.remove(output_onnx)  # a stale file from an earlier run must not pass for this one's
    returned = stage.fire(input_onnx, output_onnx)
    if isinstance(returned, (str, os.PathLike)) and os.fspath(returned) != output_onnx:
        if not os.path.isfile(returned):
            raise SequenceError("fire() returned %s, which is not a file" % os.fspath(returned))
        import shutil
        shutil.copyfile(returned, output_onnx)
    if not os.path.isfile(output_onnx) or os.path.getsize(output_onnx) == 0:
        raise SequenceError("stage %r wrote no ONNX file to %s" % (stage.unique_name,
                                                                  output_onnx))
