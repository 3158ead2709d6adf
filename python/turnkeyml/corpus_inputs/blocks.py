"""timm models made to fit this machine: where a model's defaults are over the corpus's budget,
the same model with fewer blocks per stage (same widths, heads and input size), found by trying
the model's own constructor arguments on the meta device. models/timm/generate writes the keyword
argument it finds into the script:

    fit = fewer_blocks("eva_giant_patch14_560", (3, 560, 560))
    fit.kwargs   # {'depth': 23}: timm.create_model(name, pretrained=False, **fit.kwargs)
"""

import collections
import dataclasses
import inspect

import torch

from .config import on_fake_tensors, shape_depends_on_data
from .fitting import MAX_PARAMETERS

# The constructor arguments that count a model's blocks, under the names timm's families give
# them: depth (ViT, EVA, BEiT, DINOv3, RegNet's configuration), depths (ConvNeXt, Swin, DaViT,
# FocalNet, MaxViT and CoAtNet's configuration), layers (ResNet, ResNetV2), stages (Hiera).
_BLOCK_COUNTS = ("depth", "depths", "layers", "stages", "num_blocks")

# What fewer_blocks found: the keyword arguments for timm.create_model, the parameters before and
# after, and what changed in words ("depth 40 -> 23").
Fit = collections.namedtuple("Fit", "kwargs before after changed")


def parameters(name, **kwargs):
    """Parameters of timm.create_model(name, **kwargs), built on the meta device (no memory)."""
    return sum(p.numel() for p in _built(name, kwargs).parameters())


def _built(name, kwargs):
    import timm

    with torch.device("meta"):
        return timm.create_model(name, pretrained=False, **kwargs)


def _constructor_arguments(name, cls):
    """The arguments cls.__init__ got (defaults included, its **kwargs spread out) when
    timm.create_model(name) built it: what the entry point and the model's configuration chose,
    read where timm hands them over, whatever the family calls them."""
    seen = {}
    original = cls.__dict__.get("__init__")
    init = cls.__init__

    def recording(self, *args, **kwargs):
        if not seen:  # the outer model, not a submodule of the same class
            bound = inspect.signature(init).bind(self, *args, **kwargs)
            bound.apply_defaults()
            seen.update(bound.arguments)
        init(self, *args, **kwargs)

    cls.__init__ = recording
    try:
        _built(name, {})
    finally:
        if original is None:
            del cls.__init__
        else:
            cls.__init__ = original
    for key, parameter in inspect.signature(init).parameters.items():
        if parameter.kind == parameter.VAR_KEYWORD:
            seen.update(seen.pop(key, {}))
    return seen


def _block_counts(arguments):
    """{argument name: its value} for the arguments that count blocks: given to the constructor
    or fields of a configuration dataclass it was given (MaxViT's `cfg.depths`), either of which
    timm.create_model takes as a keyword argument."""
    found = {}
    holders = [arguments] + [{f.name: getattr(v, f.name) for f in dataclasses.fields(v)}
                             for v in arguments.values()
                             if dataclasses.is_dataclass(v) and not isinstance(v, type)]
    for holder in holders:
        for name in _BLOCK_COUNTS:
            value = holder.get(name)
            if _counts(value) and max(_counts(value)) > 1:
                found.setdefault(name, value)
    return found


def _counts(value):
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, (list, tuple)) and value and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        return list(value)
    return []


def _capped(value, most):
    """value with every stage's block count capped at `most`."""
    if isinstance(value, int):
        return min(value, most)
    return type(value)(min(v, most) for v in value)


def _parameters_or_none(name, kwargs):
    try:
        return parameters(name, **kwargs)
    except Exception:  # the family does not take this argument that way, or not on meta
        return None


def _most_blocks(name, argument, value, max_parameters):
    """(cap, parameters): the most blocks per stage that keep the model within max_parameters
    (fewer blocks, fewer parameters: a bisection), or None where one block per stage does not."""
    at_one = _parameters_or_none(name, {argument: _capped(value, 1)})
    if at_one is None or at_one > max_parameters:
        return None
    low, high, best = 1, max(_counts(value)) - 1, (1, at_one)
    while low < high:
        middle = (low + high + 1) // 2
        count = _parameters_or_none(name, {argument: _capped(value, middle)})
        if count is not None and count <= max_parameters:
            low, best = middle, (middle, count)
        else:
            high = middle - 1
    return best


def _forward_takes(name, kwargs, input_size):
    """Whether the model so built takes a batch of input_size images on fake tensors (an
    operation whose shape depends on the data counts as taken: only a real run says)."""
    model = _built(name, kwargs).eval()
    try:
        with torch.no_grad():
            on_fake_tensors(lambda images: model(images),
                            {"images": torch.empty(1, *input_size, device="meta")})
        return True
    except Exception as error:
        return shape_depends_on_data(error)


def fewer_blocks(name, input_size, max_parameters=MAX_PARAMETERS):
    """None where timm's model `name` has at most max_parameters parameters (or cannot be built
    on the meta device: the script builds it as is, and fails in its own words); else a Fit: the
    argument counting its blocks (the first of _BLOCK_COUNTS its constructor got that works),
    capped per stage at the most blocks that fit, the same model otherwise. A Fit with empty
    kwargs where none fits (its `changed` says so)."""
    before = _parameters_or_none(name, {})
    if before is None or before <= max_parameters:
        return None
    arguments = _constructor_arguments(name, type(_built(name, {})))
    for argument, value in _block_counts(arguments).items():
        most = _most_blocks(name, argument, value, max_parameters)
        if most is None:
            continue
        kwargs = {argument: _capped(value, most[0])}
        if _forward_takes(name, kwargs, input_size):
            return Fit(kwargs, before, most[1], "%s %r -> %r" % (argument, value,
                                                                 kwargs[argument]))
    tried = ", ".join(_block_counts(arguments)) or "no argument counting blocks"
    return Fit({}, before, before, "none fits (tried: %s)" % tried)
