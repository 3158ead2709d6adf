"""Discovery by a class-level patch of torch.nn.Module.__call__.

Only calls at nesting depth <= max_depth are looked at; deeper calls pay one comparison. A call
whose (module object, input signature) was seen before costs a key computation and a dict
lookup. Everything expensive (naming, hashing, cloning inputs) happens once per new entry.
User objects are never modified: entries live in our own tables.
"""

import itertools
import os
import runpy
import site
import sys
import sysconfig
import time
import traceback
import types

import torch

from . import hashing, inputs
from .. import parser, trials

MODEL_TYPE = "Pytorch (torch.nn.Module)"

_SKIPPED = object()  # _by_key value of a signature whose analysis failed
_tracing_state = torch._C._get_tracing_state
# Wrappers torch.jit.trace / torch.onnx.export put around the user's model.
_TORCH_INTERNAL = frozenset(filter(None, [getattr(torch.jit._trace, "ONNXTracedModule", None)]))
_CONTAINER_SCAN_LIMIT = 10000
# Modules torch calls for its own bookkeeping, not the user's model: a parametrization (weight_norm,
# spectral_norm) computes its weight through one when the weight is read, at construction too
# (transformers' Wav2Vec2 builds one). Calls inside them are not executions either.
_BOOKKEEPING = frozenset(filter(None, [getattr(getattr(torch.nn.utils, "parametrize", None),
                                               "ParametrizationList", None)]))


def _symbolic_checks():
    """Functions that say whether torch is running modules symbolically right now: torch.compile's
    or torch.export's tracing (dynamo), FX symbolic tracing, or a fake, proxy or functional
    tensor mode (torch.export's non-strict tracing and the dynamo ONNX exporter run the model on
    fake tensors). Such a call is not an execution: its inputs are not real, its weights may be
    fake too. Each check exists only in some torch versions; those this torch lacks are left
    out (torch 1.13 has only the FX flag)."""
    checks = []
    compiler = getattr(torch, "compiler", None)
    for owner, name in ((compiler, "is_compiling"), (compiler, "is_exporting")):
        function = getattr(owner, name, None)
        if callable(function):
            checks.append(function)
    # FX's own symbolic tracing (torch >= 2.x: is_fx_tracing also says true under torch.export,
    # with a warning each time; the compiler checks above cover that).
    fx = getattr(torch.fx, "_symbolic_trace", None)
    fx_tracing = getattr(fx, "is_fx_symbolic_tracing", None) or getattr(fx, "is_fx_tracing", None)
    if callable(fx_tracing):
        checks.append(fx_tracing)
    get_mode = getattr(torch._C, "_get_dispatch_mode", None)
    keys = getattr(torch._C, "_TorchDispatchModeKey", None)
    if callable(get_mode) and keys is not None:
        for name in ("FAKE", "PROXY", "FUNCTIONAL"):
            key = getattr(keys, name, None)
            if key is not None:
                checks.append(lambda key=key: get_mode(key) is not None)
    return tuple(checks)


_SYMBOLIC_CHECKS = _symbolic_checks()


def _symbolic():
    for check in _SYMBOLIC_CHECKS:
        if check():
            return True
    return False


def _inner_module(module):
    """The module a torch.compile wrapper (OptimizedModule) holds, else the module itself: the
    user's model is the inner one, which is what is reported, hashed and exported."""
    if type(module).__name__ == "OptimizedModule":
        inner = getattr(module, "_orig_mod", None)
        if isinstance(inner, torch.nn.Module):
            return inner
    return module
# Functions that call modules eagerly, outside a trace, for their own purposes: the output check
# of torch.jit.trace (check_trace=True, the default) runs the model once more and then a second,
# checking trace of it; turnkeyml.corpus_inputs tries a layout for real where fake tensors cannot
# judge it.
_NOT_EXECUTIONS = [(torch.jit._trace, "_check_trace"), (trials, "trial_call")]


class Entry:
    __slots__ = ("id", "module", "parent_id", "depth", "count", "first_call_s",
                 "captured_args", "captured_kwargs", "input_names", "message", "first_outputs")

    def __init__(self, id_, module, parent_id, depth):
        self.id = id_
        self.module = module  # a strong reference keeps id(module) unique for the run
        self.parent_id = parent_id
        self.depth = depth
        self.count = 0
        self.first_call_s = None
        self.captured_args = ()
        self.captured_kwargs = {}
        self.input_names = []
        self.message = None
        # (state_marks, outputs) of the first call when it can stand for the export's reference
        # forward (first_call_reference); None otherwise.
        self.first_outputs = None


def state_marks(module):
    """Identity and in-place version of every parameter and buffer: equal marks mean no weight
    or buffer was replaced or written since (tensor._version counts in-place writes)."""
    return tuple((id(t), t._version)
                 for t in itertools.chain(module.parameters(), module.buffers()))


def first_call_reference(module, result):
    """What the export needs from the first call of a top-level model to skip its own reference
    forward: only when every submodule is in eval mode (no dropout, no running statistics), with
    the outputs detached and copied before the script can touch them. None when not usable."""
    try:
        if any(m.training for m in module.modules()):
            return None
        outputs = inputs.map_tensors(result, lambda t: t.detach().clone())
        if not inputs.tensors_of(outputs):
            return None
        return state_marks(module), outputs
    except Exception:  # a reference we cannot keep is only a cost, never a failure
        return None


def _library_prefixes():
    paths = sysconfig.get_paths()
    dirs = {paths.get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs.update(site.getsitepackages())
    dirs.add(os.path.dirname(os.path.dirname(torch.__file__)))
    dirs.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # turnkeyml itself
    return tuple(os.path.join(os.path.abspath(d), "") for d in dirs if d)


class Tracker:
    def __init__(self, send, script_path, max_depth=0):
        self._send = send
        self._script_path = script_path
        self._script_stem = os.path.splitext(os.path.basename(script_path))[0]
        self.max_depth = max_depth
        self.entries = []  # by id
        self._by_key = {}  # (id(module), inputs.call_key) -> Entry, the per-call lookup
        self._by_signature = {}  # (id(module), named signature) -> Entry
        self._signatures_per_module = {}
        self._module_ids = {}
        self._child_names = {}  # id(parent module) -> {id(submodule): attribute path}
        self._with_state = {}  # id(module) -> its first entry called with a cache object
        self._library = _library_prefixes()
        self._stop_code = None
        self._hook_code = None
        self._depth = 0
        self._stack = []
        self._original_call = None
        self._patched = []  # (owner, attribute, original) of the _NOT_EXECUTIONS wrappers
        self._suspended = 0  # > 0 while one of them runs
        self._warned = set()

    # -- installation ---------------------------------------------------------------------

    def install(self, stop_code=None):
        """Patch Module.__call__; `stop_code` is the code object of our frame that runs the
        script, where stack walks for names and call sites stop."""
        self._stop_code = stop_code
        original = torch.nn.Module.__call__
        self._original_call = original
        tracker = self

        def __call__(module, *args, **kwargs):
            depth = tracker._depth
            if depth > tracker.max_depth:
                return original(module, *args, **kwargs)
            return tracker._tracked_call(module, args, kwargs, depth)

        self._hook_code = __call__.__code__
        torch.nn.Module.__call__ = __call__
        for owner, attribute in _NOT_EXECUTIONS:
            function = getattr(owner, attribute, None)
            if callable(function):
                setattr(owner, attribute, self._suspending(function))
                self._patched.append((owner, attribute, function))
        os.register_at_fork(after_in_child=self._disable_in_child)

    def uninstall(self):
        if self._original_call is not None:
            torch.nn.Module.__call__ = self._original_call
            self._original_call = None
        for owner, attribute, function in reversed(self._patched):
            setattr(owner, attribute, function)
        self._patched = []

    def _suspending(self, function):
        tracker = self

        def suspended(*args, **kwargs):
            tracker._suspended += 1
            try:
                return function(*args, **kwargs)
            finally:
                tracker._suspended -= 1

        return suspended

    def _disable_in_child(self):
        self.max_depth = -1  # every call takes the pass-through branch

    # -- the hook ---------------------------------------------------------------------------

    def _tracked_call(self, module, args, kwargs, depth):
        original = self._original_call
        if type(module) in _BOOKKEEPING:
            self._suspended += 1
            try:
                return original(module, *args, **kwargs)
            finally:
                self._suspended -= 1
        if (self._suspended or _tracing_state() is not None
                or type(module) in _TORCH_INTERNAL or _symbolic()):
            # The script traces, exports or compiles a model itself: not an execution, and
            # touching the tensors (clone, numpy) would leave marks in the user's trace.
            return original(module, *args, **kwargs)
        entry = None
        new = False
        try:
            model = _inner_module(module)
            key = (id(model), inputs.call_key(args, kwargs))
            entry = self._by_key.get(key)
            if entry is None:
                try:
                    entry, new = self._resolve(model, key, args, kwargs, depth)
                except Exception:
                    self._by_key[key] = _SKIPPED  # warn once, not at every call
                    raise
            if entry is _SKIPPED:
                entry = None
            else:
                entry.count += 1
        except Exception as error:  # our bug must not become the script's failure
            entry = None
            self._warn("discovery skipped a call of %s: %s: %s"
                       % (type(module).__name__, type(error).__name__, error))
        self._depth = depth + 1
        self._stack.append(entry)
        try:
            if new:
                start = time.perf_counter()
                result = original(module, *args, **kwargs)
                entry.first_call_s = time.perf_counter() - start
                if depth == 0:
                    entry.first_outputs = first_call_reference(entry.module, result)
                return result
            return original(module, *args, **kwargs)
        finally:
            self._depth = depth
            self._stack.pop()

    def _resolve(self, module, key, args, kwargs, depth):
        """(entry, is_new) for a call key not seen before.

        Different call keys can name the same signature (`emb(x)` and `emb(input=x)`, dict
        keys in another order): those calls count for the entry that has it.
        """
        stateful = inputs.has_state((args, kwargs))
        first = self._with_state.get(id(module)) if stateful else None
        if first is not None:
            # A later call with a cache object: a decode step of generate() (the cache filled
            # by the calls before). It counts for the first such call, which is what is built.
            self._by_key[key] = first
            self._warn("%s: calls with a cache object after the first (generate()'s decode "
                       "steps) count for the first one (entry %d), which is what is built and "
                       "benchmarked; the decode steps are not" % (type(module).__name__, first.id))
            return first, False
        canonical = inputs.canonical_kwargs(module, kwargs)
        described = inputs.describe(inputs.named_leaves(module, args, canonical))
        signature = (id(module), tuple(sorted(
            (d["name"], d["dtype"], tuple(d["shape"]) if d["shape"] is not None else None)
            for d in described)))
        entry = self._by_signature.get(signature)
        if entry is None:
            entry = self._new_entry(module, key, args, canonical, described, depth)
            self._by_signature[signature] = entry
            if stateful:
                self._with_state[id(module)] = entry
            return entry, True
        self._by_key[key] = entry
        return entry, False

    def _new_entry(self, module, key, args, canonical, described, depth):
        parent = self._stack[-1] if depth > 0 and self._stack else None
        entry = Entry(len(self.entries), module, parent.id if parent else None, depth)
        signature_index = self._signatures_per_module.get(id(module), 0)
        self._signatures_per_module[id(module)] = signature_index + 1
        # Entries keep their module alive, so id() is not reused within a run.
        module_id = self._module_ids.setdefault(id(module), len(self._module_ids))

        entry.input_names = [d["name"] for d in described if d["shape"] is not None]
        entry.captured_args, entry.captured_kwargs = inputs.capture(args, canonical)

        frames = self._user_frames()
        if parent is not None:
            name = self._child_name(parent.module, module)
        else:
            # The user's own names first: a library frame's `model` or `mod` says nothing.
            user = [f for f in frames if self._is_user_file(f.f_code.co_filename)]
            name = self._variable_name(module, user + [f for f in frames if f not in user])
        call_site = self._call_site(frames)
        cls = type(module)
        module_name = self._script_stem if cls.__module__ == "__main__" else cls.__module__
        params = list(module.parameters())
        entry.message = {
            "id": entry.id,
            "parent_id": entry.parent_id,
            "depth": depth,
            "name": name or cls.__name__,
            "class_name": cls.__name__,
            "class_path": "%s.%s" % (module_name, cls.__qualname__),
            "model_type": MODEL_TYPE,
            "file": call_site[0],
            "line": call_site[1],
            "parameters": sum(p.numel() for p in params),
            "parameter_bytes": sum(p.numel() * p.element_size() for p in params),
            "inputs": described,
            "signature_index": signature_index,
            "module_id": module_id,
            "hash": hashing.model_hash(module, described),
        }
        batch_size = parser.parsed.get("batch_size")
        if isinstance(batch_size, int) and 0 < batch_size < 1 << 40:
            entry.message["batch_size"] = batch_size
        # Registered only once complete: a failure above leaves no half-made entry behind.
        self.entries.append(entry)
        self._by_key[key] = entry
        self._send("model", **entry.message)
        return entry

    # -- names and call sites ---------------------------------------------------------------

    def _user_frames(self):
        """Frames from the module's call site outwards, up to the frame that runs the script."""
        frames = []
        frame = sys._getframe(1)
        while frame is not None and frame.f_code is not self._hook_code:
            frame = frame.f_back
        frame = frame.f_back if frame is not None else None  # the caller of the module
        while frame is not None and len(frames) < 256:
            if frame.f_code is self._stop_code:
                break
            if frame.f_globals is not runpy.__dict__:  # its locals hold the script's globals
                frames.append(frame)
            frame = frame.f_back
        return frames

    def _is_user_file(self, filename):
        if filename == self._script_path:
            return True
        return not (filename.startswith("<") or filename.startswith(self._library))

    def _call_site(self, frames):
        for frame in frames:
            if self._is_user_file(frame.f_code.co_filename):
                return frame.f_code.co_filename, frame.f_lineno
        if frames:
            return frames[0].f_code.co_filename, frames[0].f_lineno
        return self._script_path, None

    @staticmethod
    def _variable_name(module, frames):
        """The name a frame holds the module by: a variable, else one level into a container
        or an object's attributes."""
        for frame in frames:
            scopes = [frame.f_locals]
            if frame.f_globals is not frame.f_locals:
                scopes.append(frame.f_globals)
            for scope in scopes:
                for name, value in list(scope.items()):
                    # A torch.compile wrapper's variable names the module it holds.
                    if (value is module or _inner_module(value) is module) and name != "self":
                        return name
            for scope in scopes:
                for name, value in list(scope.items()):
                    if name == "self":
                        continue
                    try:
                        found = _find_in_container(value, module)
                    except Exception:  # an exotic object (a proxy whose __class__ raises, ...)
                        continue
                    if found is not None:
                        return name + found
        return None

    def _child_name(self, parent, module):
        names = self._child_names.get(id(parent))
        if names is None or id(module) not in names:  # first child, or one added since
            names = {id(m): n for n, m in parent.named_modules() if n}
            self._child_names[id(parent)] = names
        return names.get(id(module))

    def _warn(self, message):
        if message in self._warned:
            return
        self._warned.add(message)
        try:
            self._send("warning", message=message, traceback=traceback.format_exc())
        except Exception:
            pass

    # -- results ------------------------------------------------------------------------------

    def counts(self):
        return {str(e.id): e.count for e in self.entries}

    def first_call_times(self):
        return {str(e.id): e.first_call_s for e in self.entries if e.first_call_s is not None}


def _find_in_container(value, module):
    """`[key]`, `[index]` or `.attribute` under which `value` holds `module` directly, else None.

    Attributes are looked at on modules (their sub-modules), classes and plain objects (their
    __dict__, never properties), not on Python modules: a class attribute `Registry.model`, or
    `pipeline.head` for a model called as `self.head(x)` from a method of `pipeline`.
    """
    if isinstance(value, (dict, torch.nn.ModuleDict)):
        for key, item in itertools.islice(value.items(), _CONTAINER_SCAN_LIMIT):
            if item is module:
                return "[%r]" % (key,)
    elif isinstance(value, (list, tuple, torch.nn.ModuleList, torch.nn.Sequential)):
        for index, item in enumerate(itertools.islice(value, _CONTAINER_SCAN_LIMIT)):
            if item is module:
                return "[%d]" % index
    elif isinstance(value, torch.nn.Module):
        for key, item in value._modules.items():
            if item is module:
                return "." + key
    elif not isinstance(value, types.ModuleType):
        try:
            attributes = object.__getattribute__(value, "__dict__")
        except Exception:  # no __dict__ (slots, builtins), or a proxy that refuses
            return None
        if not isinstance(attributes, (dict, types.MappingProxyType)):
            return None
        for key, item in itertools.islice(attributes.items(), _CONTAINER_SCAN_LIMIT):
            if item is module and isinstance(key, str):
                return "." + key
    return None
