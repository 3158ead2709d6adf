"""Discovery of Keras models: a class-level patch of keras' Layer.__call__, installed when (and
only when) the script imports keras (tf.keras imports it on first use).

KerasWatcher sits on sys.meta_path and does nothing until the `keras` package has been executed;
then it imports keras_model (and so TensorFlow, which keras has loaded already) and installs the
KerasTracker. Entries share the PyTorch tracker's table: one id space, one counts message, one
command loop (commands.py dispatches on the entry's framework).

What counts as an execution: a call of a keras.Model at depth 0 (a Layer called on its own is
not a model), its layers at depths 1..max_depth, with concrete inputs while TensorFlow runs
eagerly. Calls on symbolic inputs (building a functional model on keras.Input) and calls inside
a tf.function trace (model.predict, our own export) are not executions and are passed through.
"""

import importlib.abc
import importlib.machinery
import importlib.util
import os
import runpy
import sys
import time

from .inputs import walk

KERAS_PACKAGE = "keras"


class KerasWatcher(importlib.abc.MetaPathFinder):
    """Calls `on_import()` once, right after the keras package is executed.

    A script named keras.py (the original tool's tutorial names its Keras example so) lies first
    on sys.path, and `import keras` in it, or TensorFlow's own import of keras for `tf.keras`,
    would find the script itself. The script runs as __main__, never as the module `keras`: that
    name is looked up again without the script's folder, so it is the library."""

    def __init__(self, on_import, script=None):
        self._on_import = on_import
        self._script = os.path.realpath(script) if script else None
        self._busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != KERAS_PACKAGE or self._busy:
            return None
        self._busy = True
        try:
            spec = importlib.util.find_spec(fullname)
            if spec is not None and self._is_script(spec.origin):
                folder = os.path.dirname(self._script)
                spec = importlib.machinery.PathFinder.find_spec(
                    fullname, [p for p in sys.path if os.path.realpath(p or ".") != folder])
        finally:
            self._busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        spec.loader = _AfterExec(spec.loader, self._fire)
        return spec

    def _is_script(self, origin):
        return bool(origin and self._script) and os.path.realpath(origin) == self._script

    def _fire(self):
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        self._on_import()

    def remove(self):
        if self in sys.meta_path:
            sys.meta_path.remove(self)


class _AfterExec(importlib.abc.Loader):
    def __init__(self, loader, after):
        self._loader = loader
        self._after = after

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        self._after()

    def __getattr__(self, name):  # get_resource_reader, is_package...: the real loader's
        return getattr(self._loader, name)


class KerasEntry:
    """An entry of the shared table (hooks.Entry's fields) for a Keras layer or model."""
    framework = "keras"
    __slots__ = ("id", "module", "parent_id", "depth", "count", "first_call_s",
                 "captured_args", "captured_kwargs", "input_names", "message", "first_outputs")

    def __init__(self, id_, module, parent_id, depth):
        self.id = id_
        self.module = module
        self.parent_id = parent_id
        self.depth = depth
        self.count = 0
        self.first_call_s = None
        self.captured_args = ()
        self.captured_kwargs = {}
        self.input_names = []
        self.message = None
        self.first_outputs = None


class KerasTracker:
    """Keras' counterpart of hooks.Tracker, sharing its entries, module ids, names and call
    sites (`torch_tracker`)."""

    def __init__(self, torch_tracker):
        self._base = torch_tracker
        self._by_key = {}
        self._by_signature = {}
        self._signatures_per_module = {}
        self._depth = 0
        self._stack = []
        self._original_call = None
        self._layer_class = None
        self._skipped = object()
        self._pending = []  # entries made during the current top-level call, not yet sent

    def install(self):
        import keras
        import tensorflow as tf
        from keras.src.layers.layer import Layer

        from . import keras_model

        if keras.backend.backend() != "tensorflow":
            self._base._warn("keras backend %r: Keras models are discovered with the "
                             "tensorflow backend only" % keras.backend.backend())
            return
        self._km = keras_model
        self._model_class = keras.Model
        self._layer_class = Layer
        self._keras_tensor = keras.KerasTensor
        self._eager = tf.executing_eagerly
        original = Layer.__call__
        self._original_call = original
        tracker = self

        def __call__(layer, *args, **kwargs):
            depth = tracker._depth
            if depth > tracker._base.max_depth:
                return original(layer, *args, **kwargs)
            return tracker._tracked_call(layer, args, kwargs, depth)

        self._hook_code = __call__.__code__
        Layer.__call__ = __call__

    def uninstall(self):
        if self._original_call is not None:
            self._layer_class.__call__ = self._original_call
            self._original_call = None

    def _not_an_execution(self, layer, args, kwargs):
        if self._base._suspended or not self._eager():
            return True
        if self._depth == 0 and not isinstance(layer, self._model_class):
            return True
        symbolic = self._keras_tensor
        return any(isinstance(leaf, symbolic) for leaf in _leaves((args, kwargs)))

    def _tracked_call(self, layer, args, kwargs, depth):
        original = self._original_call
        if self._not_an_execution(layer, args, kwargs):
            return original(layer, *args, **kwargs)
        entry, new = None, False
        try:
            key = (id(layer), self._km.call_key(args, kwargs))
            entry = self._by_key.get(key)
            if entry is None:
                try:
                    entry, new = self._resolve(layer, key, args, kwargs, depth)
                except Exception:
                    self._by_key[key] = self._skipped
                    raise
            if entry is self._skipped:
                entry = None
            else:
                entry.count += 1
        except Exception as error:  # our bug must not become the script's failure
            entry = None
            self._base._warn("discovery skipped a call of %s: %s: %s"
                             % (type(layer).__name__, type(error).__name__, error))
        self._depth = depth + 1
        self._stack.append(entry)
        try:
            if new:
                start = time.perf_counter()
                result = original(layer, *args, **kwargs)
                entry.first_call_s = time.perf_counter() - start
                return result
            return original(layer, *args, **kwargs)
        finally:
            self._depth = depth
            self._stack.pop()
            if depth == 0 and self._pending:
                self._send_pending()

    def _resolve(self, layer, key, args, kwargs, depth):
        km = self._km
        canonical = km.canonical_kwargs(layer, kwargs)
        described = km.describe(km.named_leaves(layer, args, canonical))
        signature = (id(layer), tuple(sorted(
            (d["name"], d["dtype"], tuple(d["shape"]) if d["shape"] is not None else None)
            for d in described)))
        entry = self._by_signature.get(signature)
        if entry is None:
            entry = self._new_entry(layer, key, args, canonical, described, depth)
            self._by_signature[signature] = entry
            return entry, True
        self._by_key[key] = entry
        return entry, False

    def _new_entry(self, layer, key, args, canonical, described, depth):
        km, base = self._km, self._base
        parent = self._stack[-1] if depth > 0 and self._stack else None
        entry = KerasEntry(len(base.entries), layer, parent.id if parent else None, depth)
        signature_index = self._signatures_per_module.get(id(layer), 0)
        self._signatures_per_module[id(layer)] = signature_index + 1
        module_id = base._module_ids.setdefault(id(layer), len(base._module_ids))
        entry.input_names = [d["name"] for d in described if d["shape"] is not None]
        entry.captured_args, entry.captured_kwargs = km.capture(args, canonical)
        frames = self._user_frames()
        if parent is not None:
            name = self._child_name(parent.module, layer)
        else:
            user = [f for f in frames if base._is_user_file(f.f_code.co_filename)]
            name = base._variable_name(layer, user + [f for f in frames if f not in user])
        call_site = base._call_site(frames)
        cls = type(layer)
        module_name = base._script_stem if cls.__module__ == "__main__" else cls.__module__
        entry.message = {
            "id": entry.id, "parent_id": entry.parent_id, "depth": depth,
            "name": name or cls.__name__, "class_name": cls.__name__,
            "class_path": "%s.%s" % (module_name, cls.__qualname__),
            "model_type": km.MODEL_TYPE if isinstance(layer, self._model_class)
            else km.LAYER_TYPE, "file": call_site[0], "line": call_site[1],
            "inputs": described, "signature_index": signature_index, "module_id": module_id,
            "framework_versions": km.versions(),
        }
        base.entries.append(entry)
        self._by_key[key] = entry
        self._pending.append(entry)
        return entry

    def _send_pending(self):
        """Reports the entries the last top-level call made, parents first. Their weights and
        hash are taken after that call: Keras creates a model's weights during its first call."""
        km = self._km
        pending, self._pending = sorted(self._pending, key=lambda e: e.id), []
        for entry in pending:
            try:
                count, size = km.parameters(entry.module)
                entry.message.update(parameters=count, parameter_bytes=size,
                                     hash=km.model_hash(entry.module, entry.message["inputs"]))
            except Exception as error:  # noqa: BLE001 (reported without a hash: never built)
                self._base._warn("Keras model %s left out: its hash failed: %s: %s"
                                 % (entry.message["name"], type(error).__name__, error))
                continue
            self._base._send("model", **entry.message)

    def _user_frames(self):
        """Frames from the layer's call site outwards, up to the frame that runs the script
        (hooks.Tracker._user_frames, with this hook's code as the starting mark)."""
        frames = []
        frame = sys._getframe(1)
        while frame is not None and frame.f_code is not self._hook_code:
            frame = frame.f_back
        frame = frame.f_back if frame is not None else None
        while frame is not None and len(frames) < 256:
            if frame.f_code is self._base._stop_code:
                break
            if frame.f_globals is not runpy.__dict__:
                frames.append(frame)
            frame = frame.f_back
        return frames

    @staticmethod
    def _child_name(parent, layer):
        """The layer's path below its parent model, by the names Keras gave it."""
        for path, child in KerasTracker._paths(parent):
            if child is layer:
                return path
        return None

    @staticmethod
    def _paths(parent):
        from .keras_model import layers_of
        return [(p, c) for p, c in layers_of(parent) if p]


def _leaves(value):
    """Every leaf of a call's (args, kwargs), for the symbolic-tensor check."""
    found = []
    walk(value, "", lambda _, leaf: found.append(leaf))
    return found

