"""Keras models' calls: their tensors (tf.Tensor, NumPy arrays), input signatures and the hash.

Imported only once the script has imported keras (keras_hooks.KerasWatcher): a run whose script
never imports TensorFlow never loads this file's imports. The walk order of a call's values is
inputs.py's (positional arguments, then keyword arguments in canonical order, containers
depth-first), and the protocol's `inputs` list is the same as for PyTorch.
"""

import hashlib
import inspect
import json
import re

import numpy as np
import tensorflow as tf

from . import hashing, inputs

MODEL_TYPE = "Keras (tf.keras.Model)"
LAYER_TYPE = "Keras (tf.keras.layers.Layer)"  # a layer below a model (--max-depth)
FRAMEWORK = "keras"
# Classes of these packages are named by class in the hash: their call is the library's.
_LIBRARIES = ("keras", "tensorflow", "tf_keras")
_SPEC_NAME = re.compile(r"[^A-Za-z0-9_.\-/]")


def versions():
    """TensorFlow's, Keras's and tf2onnx's versions (what exports the model), without importing
    tf2onnx: "tensorflow 2.21.0, keras 3.15.1, tf2onnx 1.17.0"."""
    import importlib.metadata

    import keras
    try:
        converter = importlib.metadata.version("tf2onnx")
    except importlib.metadata.PackageNotFoundError:
        converter = "none"
    return "tensorflow %s, keras %s, tf2onnx %s" % (tf.__version__, keras.__version__, converter)


def is_tensor(value):
    """A tensor leaf of a Keras call: a TensorFlow tensor (eager or variable) or a NumPy array."""
    return isinstance(value, np.ndarray) or tf.is_tensor(value)


def leaf_key(value):
    """A hashable key of a value's structure, as inputs.leaf_key for PyTorch: called on every
    tracked call, so it stays minimal."""
    if isinstance(value, np.ndarray):
        return ("np", value.shape, value.dtype.str)
    if tf.is_tensor(value):
        return ("tf", tuple(value.shape), value.dtype)
    if isinstance(value, (tuple, list)):
        return (type(value), tuple([leaf_key(item) for item in value]))
    if isinstance(value, dict):
        return (type(value), tuple([(k, leaf_key(item)) for k, item in value.items()]))
    return type(value)


def call_key(args, kwargs):
    if kwargs:
        return (tuple([leaf_key(a) for a in args]),
                tuple(sorted([(k, leaf_key(v)) for k, v in kwargs.items()])))
    return tuple([leaf_key(a) for a in args])


def _call_signature(layer):
    try:
        return inspect.signature(layer.call)
    except (TypeError, ValueError, AttributeError):
        return None


def positional_names(layer, count):
    """Names of `count` positional arguments of layer.call (`inputs` for functional and
    Sequential models, the user's own names for a subclassed model's call)."""
    sig = _call_signature(layer)
    names = []
    if sig is not None:
        for param in sig.parameters.values():
            if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
                names.append(param.name)
            elif param.kind == param.VAR_POSITIONAL:
                names += ["%s[%d]" % (param.name, i) for i in range(count - len(names))]
                break
    names = names[:count]
    return names + ["arg%d" % i for i in range(len(names), count)]


def canonical_kwargs(layer, kwargs):
    """kwargs in call's declaration order, then the rest by name (inputs.canonical_kwargs)."""
    if not kwargs:
        return {}
    sig = _call_signature(layer)
    declared = list(sig.parameters) if sig is not None else []
    ordered = {k: kwargs[k] for k in declared if k in kwargs}
    for k in sorted(k for k in kwargs if k not in ordered):
        ordered[k] = kwargs[k]
    return ordered


def spec_name(name):
    """A leaf's name as a TensorFlow TensorSpec (and so an ONNX graph input) accepts it:
    `inputs['image']` becomes `inputs__image__`."""
    cleaned = _SPEC_NAME.sub("_", name)
    return cleaned if cleaned[:1].isalnum() or cleaned[:1] == "." else "x" + cleaned


def named_leaves(layer, args, kwargs):
    """[(name, value)] of every leaf, in canonical order; names are TensorSpec-safe."""
    leaves = []
    visit = lambda name, value: leaves.append((spec_name(name), value))
    for name, value in zip(positional_names(layer, len(args)), args):
        inputs.walk(value, name, visit)
    for name, value in kwargs.items():
        inputs.walk(value, name, visit)
    return leaves


def dtype_name(value):
    return np.dtype(value.dtype.as_numpy_dtype if hasattr(value.dtype, "as_numpy_dtype")
                    else value.dtype).name


def describe(leaves):
    """The protocol's `inputs` list: name, shape (null for non-tensors), dtype."""
    described = []
    for name, value in leaves:
        if is_tensor(value):
            described.append({"name": name, "shape": [int(d) for d in value.shape],
                              "dtype": dtype_name(value)})
        else:
            described.append({"name": name, "shape": None, "dtype": type(value).__name__})
    return described


def map_tensors(value, fn):
    """A copy of the container structure with every tensor leaf replaced by fn(tensor)."""
    if is_tensor(value):
        return fn(value)
    if isinstance(value, dict) and value:
        return inputs._rebuild_container(value, [(k, map_tensors(v, fn))
                                                 for k, v in value.items()])
    if isinstance(value, (tuple, list)) and value:
        return inputs._rebuild_container(value, [map_tensors(v, fn) for v in value])
    return value


def tensors_of(value):
    found = []
    map_tensors(value, lambda t: found.append(t) or t)
    return found


def to_numpy(tensor):
    """An owned NumPy copy of a tensor leaf (the script may change its own array later)."""
    return np.array(tensor.numpy() if tf.is_tensor(tensor) else tensor, copy=True)


def capture(args, kwargs):
    """NumPy copies of the call's tensors, taken before the call can change them."""
    return map_tensors(tuple(args), to_numpy), {k: map_tensors(v, to_numpy)
                                                for k, v in kwargs.items()}


def as_tensors(args, kwargs):
    """The captured call with fresh tf.Tensors in place of its arrays."""
    return map_tensors((args, kwargs), lambda a: tf.convert_to_tensor(np.array(a, copy=True)))


def layers_of(model):
    """(path, layer) of the model and every layer under it, depth-first, the model as ''."""
    found = [("", model)]
    seen = {id(model)}

    def visit(prefix, layer):
        for child in getattr(layer, "_layers", None) or getattr(layer, "layers", None) or []:
            if id(child) in seen:
                continue
            seen.add(id(child))
            path = "%s%s" % (prefix, child.name)
            found.append((path, child))
            visit(path + "/", child)

    visit("", model)
    return found


def _config_text(layer):
    """The layer's configuration without its name (Keras numbers names per process: dense,
    dense_1...) as stable JSON; '' where the layer has none."""
    try:
        config = layer.get_config()
    except Exception:  # noqa: BLE001 (subclassed models without get_config)
        return ""
    return json.dumps(_without_names(config), sort_keys=True, default=lambda v: type(v).__name__)


def _without_names(value):
    if isinstance(value, dict):
        return {k: _without_names(v) for k, v in value.items() if k not in ("name", "build_config")}
    if isinstance(value, (list, tuple)):
        return [_without_names(v) for v in value]
    return value


def _call_rendering(layer):
    cls = type(layer)
    if cls.__module__.split(".")[0] in _LIBRARIES:
        return "library:" + hashing.class_path(cls)
    call = getattr(cls, "call", None)
    source = hashing._source_rendering(call) if call is not None else None
    if source is not None:
        return "source:" + source
    out = []
    if getattr(call, "__code__", None) is not None:
        hashing._render_code(call.__code__, out)
    return "".join(out) or "opaque:" + hashing.class_path(cls)


def model_hash(model, described):
    """Hex sha256 of a Keras model called with `described` inputs (docs/hashing.md, Keras):
    the class, configuration and call code of every layer, every weight's dtype, shape and
    bytes, and the input signature. Layer names are left out (Keras numbers them per process)."""
    h = hashlib.sha256()
    hashing._field(h, "version", b"turnkey-keras-model-hash-v1")
    order = {}
    for n, (path, layer) in enumerate(layers_of(model)):
        order[id(layer)] = n
        hashing._field(h, "layer", ("%d|%s" % (n, hashing.class_path(type(layer)))).encode())
        hashing._field(h, "config", _config_text(layer).encode())
        hashing._field(h, "call", _call_rendering(layer).encode())
    weights = list(model.weights)
    digests = hashing._chunk_digests([np.ascontiguousarray(w.numpy()).reshape(-1).view("uint8")
                                      for w in weights])
    for n, (weight, data) in enumerate(zip(weights, digests)):
        header = "%d|%s|%s" % (n, dtype_name(weight), ",".join(str(d) for d in weight.shape))
        hashing._field(h, "weight", header.encode())
        hashing._field(h, "data", data)
    for item in described:
        shape = "null" if item["shape"] is None else ",".join(str(d) for d in item["shape"])
        hashing._field(h, "input", ("%s|%s|%s" % (item["name"], item["dtype"], shape)).encode())
    return h.hexdigest()


def parameters(model):
    """(count, bytes) of the model's weights, trainable or not (BatchNorm's statistics too, as
    torch's buffers are not: Keras counts them in count_params())."""
    count = sum(int(np.prod(w.shape)) for w in model.weights)
    size = sum(int(np.prod(w.shape)) * np.dtype(dtype_name(w)).itemsize for w in model.weights)
    return count, size
