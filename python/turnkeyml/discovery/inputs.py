"""Input signatures of module calls: a cheap lookup key, named descriptions, capture and rebuild.

Every function here walks a call's (args, kwargs) in the same order: positional arguments first,
then keyword arguments in canonical order (see `canonical_kwargs`), containers depth-first.
Tuples, lists, dicts and dataclass instances (transformers' ModelOutput, diffusers' BaseOutput,
a user's @dataclass) are containers; everything else is a leaf. A leaf that is neither a tensor nor
an immutable value (a cache object such as transformers' DynamicCache, which a forward fills in
place) is state: `capture` and `copy_call` deep-copy it, so every use starts from the state the
call had before the model ran.
"""

import copy
import dataclasses
import enum
import inspect

import torch

# Leaves that no forward can change: kept by reference.
_IMMUTABLE = (int, float, complex, str, bytes, type(None), type, enum.Enum, torch.dtype,
              torch.device, torch.Size, torch.layout, torch.memory_format, range, slice)


def _is_dataclass_object(value):
    """A dataclass instance that is not a dict (ModelOutput and BaseOutput are dicts too, walked
    by their items)."""
    return (hasattr(type(value), "__dataclass_fields__") and not isinstance(value, dict)
            and not isinstance(value, type))


def _fields(value):
    return [f.name for f in dataclasses.fields(value)]


def is_state(value):
    """A leaf a forward may change in place (a cache object), not a tensor, module or function.
    An empty dict, list or tuple (the kwargs of a call without any) is a leaf of the walk but no
    state: taking it for one made every later call of a module count for its first."""
    if isinstance(value, (dict, list, tuple, set, frozenset)) and not value:
        return False
    return not (isinstance(value, _IMMUTABLE) or isinstance(value, torch.Tensor)
                or isinstance(value, torch.nn.Module) or callable(value))


def copy_state(value):
    """A deep copy of a state leaf (the leaf itself when it cannot be copied)."""
    try:
        return copy.deepcopy(value)
    except Exception:  # noqa: BLE001 (an object that refuses to be copied is used as it is)
        return value


def leaf_key(value):
    """A hashable key of a value's structure: shapes and dtypes of tensors, types of the rest.

    Called on every tracked module call, so it stays minimal: two calls with equal keys have
    equal named signatures (the names depend only on the structure and the module's forward).
    """
    if isinstance(value, torch.Tensor):
        return (value.shape, value.dtype)
    if isinstance(value, (tuple, list)):
        return (type(value), tuple([leaf_key(item) for item in value]))
    if isinstance(value, dict):
        return (type(value), tuple([(k, leaf_key(item)) for k, item in value.items()]))
    if _is_dataclass_object(value):
        return (type(value), tuple([(k, leaf_key(getattr(value, k))) for k in _fields(value)]))
    return type(value)


def call_key(args, kwargs):
    if kwargs:
        return (tuple([leaf_key(a) for a in args]),
                tuple(sorted([(k, leaf_key(v)) for k, v in kwargs.items()])))
    return tuple([leaf_key(a) for a in args])


def _forward_signature(module):
    try:
        return inspect.signature(module.forward)
    except (TypeError, ValueError):
        return None


def positional_names(module, count):
    """Names of `count` positional arguments of module.forward; extras of *args become args[i]."""
    sig = _forward_signature(module)
    if sig is None:
        return ["arg%d" % i for i in range(count)]
    names = []
    var_positional = None
    for param in sig.parameters.values():
        if param.kind in (param.POSITIONAL_ONLY, param.POSITIONAL_OR_KEYWORD):
            names.append(param.name)
        elif param.kind == param.VAR_POSITIONAL:
            var_positional = param.name
            break
    if count <= len(names):
        return names[:count]
    extra = count - len(names)
    if var_positional is not None:
        return names + ["%s[%d]" % (var_positional, i) for i in range(extra)]
    return names + ["arg%d" % (len(names) + i) for i in range(extra)]


def canonical_kwargs(module, kwargs):
    """kwargs reordered: forward's named parameters in declaration order, then the rest by name.

    Calls that differ only in keyword order are the same signature; the order fixes the order
    of the graph inputs of the exported model.
    """
    if not kwargs:
        return {}
    sig = _forward_signature(module)
    declared = list(sig.parameters) if sig is not None else []
    ordered = {k: kwargs[k] for k in declared if k in kwargs}
    for k in sorted(k for k in kwargs if k not in ordered):
        ordered[k] = kwargs[k]
    return ordered


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def walk(value, name, visit):
    """Calls visit(name, leaf) for every leaf of value, depth-first; `name` is the root's."""
    if isinstance(value, dict) and value:
        for k, item in value.items():
            walk(item, "%s[%r]" % (name, k), visit)
    elif isinstance(value, (tuple, list)) and value:
        for i, item in enumerate(value):
            walk(item, "%s[%d]" % (name, i), visit)
    elif _is_dataclass_object(value):
        for k in _fields(value):
            walk(getattr(value, k), "%s.%s" % (name, k), visit)
    else:
        visit(name, value)


def named_leaves(module, args, kwargs):
    """[(name, value)] of every leaf, in canonical order. kwargs must be canonical already."""
    leaves = []
    visit = lambda name, value: leaves.append((name, value))
    for name, value in zip(positional_names(module, len(args)), args):
        walk(value, name, visit)
    for name, value in kwargs.items():
        walk(value, name, visit)
    return leaves


def describe(leaves):
    """The protocol's `inputs` list: name, shape (null for non-tensors), dtype."""
    described = []
    for name, value in leaves:
        if isinstance(value, torch.Tensor):
            described.append({"name": name, "shape": list(value.shape),
                              "dtype": _dtype_name(value.dtype)})
        else:
            described.append({"name": name, "shape": None, "dtype": type(value).__name__})
    return described


def _rebuild_container(original, items):
    if isinstance(original, dict) and dataclasses.is_dataclass(original):
        # ModelOutput / BaseOutput: their constructors take fields, not pairs; a copy with the
        # items set again keeps the class, its attributes and its field order.
        rebuilt = copy.copy(original)
        for k, item in items:
            rebuilt[k] = item
        return rebuilt
    if _is_dataclass_object(original):
        rebuilt = copy.copy(original)
        for k, item in zip(_fields(original), items):
            object.__setattr__(rebuilt, k, item)  # frozen dataclasses too
        return rebuilt
    if isinstance(original, dict):
        try:
            return type(original)(items)
        except Exception:  # dict subclasses with their own constructors
            return dict(items)
    if isinstance(original, tuple) and hasattr(original, "_fields"):  # namedtuple
        return type(original)(*items)
    try:
        return type(original)(items)
    except Exception:
        return tuple(items) if isinstance(original, tuple) else list(items)


def map_tensors(value, fn, other=None):
    """A copy of the container structure with every tensor leaf replaced by fn(tensor) (and
    every other leaf by other(leaf), when given)."""
    if isinstance(value, torch.Tensor):
        return fn(value)
    if isinstance(value, dict) and value:
        return _rebuild_container(value, [(k, map_tensors(v, fn, other))
                                          for k, v in value.items()])
    if isinstance(value, (tuple, list)) and value:
        return _rebuild_container(value, [map_tensors(v, fn, other) for v in value])
    if _is_dataclass_object(value):
        return _rebuild_container(value, [map_tensors(getattr(value, k), fn, other)
                                          for k in _fields(value)])
    return other(value) if other is not None else value


def _copy_leaf(value):
    return copy_state(value) if is_state(value) else value


def copy_call(call, fn):
    """`call` ((args, kwargs), or any structure) with every tensor replaced by fn(tensor) and
    every state leaf (a cache object) deep-copied: one use's own inputs."""
    return map_tensors(call, fn, _copy_leaf)


def has_state(call):
    """Whether `call` holds a state leaf (a cache object), which every use must copy anew."""
    found = []
    map_tensors(call, lambda t: t, lambda leaf: found.append(leaf) if is_state(leaf) else None)
    return bool(found)


def capture(args, kwargs):
    """Detached clones of the call's tensors and deep copies of its state leaves (a cache
    object), taken before forward can modify them in place."""
    args, kwargs = copy_call((tuple(args), dict(kwargs)), lambda t: t.detach().clone())
    return tuple(args), kwargs


def tensors_of(value):
    """Tensor leaves of a (possibly nested) value, in walk order."""
    found = []

    def collect(t):
        found.append(t)
        return t

    map_tensors(value, collect)
    return found
