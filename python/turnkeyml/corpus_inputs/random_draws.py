"""Noise a forward draws itself where it is not given (UnivNet's `noise_sequence`, ViTMAE's and
Hiera's masking `noise`): given as an input, as the libraries' feature extractors and tests give
it. Drawn inside the forward, PyTorch's run and the exported graph (a random op: RandomNormal,
or no translation at all: "Error when translating node %randn") draw other numbers, so no
correctness verdict can hold, and an export may fail on the op alone."""

import contextlib
import inspect

import torch

from .config import on_fake_tensors, on_weights

_DRAWS = ("rand", "randn")  # torch's functions a forward draws its noise with


@contextlib.contextmanager
def _recording(draws):
    """torch.rand and torch.randn, recording (name, size) of each call into `draws`."""
    originals = {name: getattr(torch, name) for name in _DRAWS}

    def recorder(name):
        def draw(*size, **kwargs):
            shape = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list,
                                                                               torch.Size)) \
                else tuple(size)
            draws.append((name, tuple(int(d) for d in shape)))
            return originals[name](*size, **kwargs)
        return draw

    for name in _DRAWS:
        setattr(torch, name, recorder(name))
    try:
        yield
    finally:
        for name, original in originals.items():
            setattr(torch, name, original)


def _draws(model, inputs):
    """The noise model's forward draws with inputs, on fake tensors: [(function, size)], or None
    where the forward does not run through."""
    draws = []
    try:
        with _recording(draws):
            on_fake_tensors(model.forward, on_weights(model, inputs))
    except Exception:  # noqa: BLE001 (not known: the inputs stay as they are)
        return None
    return draws


def _noise_parameters(model, inputs):
    try:
        parameters = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return []
    return [name for name, p in parameters.items()
            if "noise" in name and p.default is None and name not in inputs]


def with_drawn_noise(model, inputs):
    """inputs with the noise the forward would draw itself, where it takes one argument of noise
    (a parameter named for it, None by default) and draws one tensor without it that it no
    longer draws with it; inputs as given otherwise."""
    names = _noise_parameters(model, inputs)
    if len(names) != 1:
        return inputs
    draws = _draws(model, inputs)
    if not draws or len(draws) != 1:
        return inputs
    function, size = draws[0]
    given = dict(inputs, **{names[0]: getattr(torch, function)(size)})
    return given if _draws(model, given) == [] else inputs
