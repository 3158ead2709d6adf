"""Reading transformers configurations and forwards: values from a configuration or its
sub-configurations, the token ids they name, what a forward accepts, and a call on fake tensors."""

import inspect
import logging


# The fields naming the token a model splices image or video features in at (Llava, Idefics, the
# Q-Former models; InstructBLIPVideo's queries of each frame at its video token).
MEDIA_TOKENS = ("image_token_index", "image_token_id", "video_token_index", "video_token_id")


def get(holder, name):
    """holder.name, or None: also where transformers refuses to give one value for an attribute
    that may differ per layer (AmbiguousGlobalPerLayerAttributeError, Gemma 4)."""
    try:
        return getattr(holder, name, None)
    except Exception:
        return None


def sub(config, name):
    """`name` from the configuration or one of its sub-configurations (vision_config, ...; a
    model beside its vocoder: FastSpeech 2 with HiFi-GAN's `model_config`)."""
    for holder in (config, getattr(config, "vision_config", None),
                   getattr(config, "encoder", None), getattr(config, "text_config", None),
                   getattr(config, "model_config", None)):
        value = get(holder, name) if holder is not None else None
        if value is not None:
            return value
    return None


def as_size(value, default):
    """An image size as (height, width): a side, a (height, width) pair (MGP-STR's text lines
    are 32x128, YOLOS's images 512x864: a square image of either side is refused or read
    wrong), or an image processor's dict."""
    if isinstance(value, (list, tuple)):
        sides = [int(side) for side in value[:2]] or [default]
        return sides[0], sides[-1]
    if isinstance(value, dict):
        height = int(value.get("height") or value.get("shortest_edge") or default)
        return height, int(value.get("width") or height)
    side = int(value) if value else default
    return side, side


def configs(config, depth=0):
    """The configuration and its sub-configurations (text_config, vision_config, encoder, ...)."""
    from transformers import PretrainedConfig  # only the transformers scripts come here

    yield config
    if depth < 3:
        for value in list(vars(config).values()):
            if isinstance(value, PretrainedConfig) and value is not config:
                yield from configs(value, depth + 1)


# Token ids with a meaning of their own, which random text must not hold.
_ORDINARY_TOKENS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id",
                    "sep_token_id", "cls_token_id", "unk_token_id", "mask_token_id",
                    "forced_bos_token_id", "forced_eos_token_id")


def token_fields(config):
    """(configuration, field name, token id) of every token id the configuration and its
    sub-configurations name (`*_token_id`, `*_token_index`)."""
    for holder in configs(config):
        for name, value in sorted(vars(holder).items()):
            if (name.endswith(("_token_id", "_token_index")) and isinstance(value, int)
                    and not isinstance(value, bool)):
                yield holder, name, value


def placeholder_tokens(config):
    """The ids of the placeholder tokens a model splices its towers' embeddings in at (image,
    audio, video tokens, and their begin and end markers), in the configuration and its parts."""
    return {value for _, name, value in token_fields(config) if name not in _ORDINARY_TOKENS}


def accepts(model, name):
    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _accepted(function, kwargs):
    """kwargs without the names function does not take (all of them where it takes **kwargs)."""
    accepted = inspect.signature(function).parameters
    if any(p.kind == p.VAR_KEYWORD for p in accepted.values()):
        return kwargs
    return {k: v for k, v in kwargs.items() if k in accepted}


def on_fake_tensors(function, kwargs):
    """function(**kwargs) on fake tensors: shapes only, no compute, and not an execution for
    turnkey's discovery. Raises what the function raises."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    kwargs = _accepted(function, kwargs)
    log = logging.getLogger("torch._subclasses.fake_tensor")  # logs each failed try as an error
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        with FakeTensorMode(allow_non_fake_inputs=True):
            return function(**kwargs)
    finally:
        log.setLevel(level)


# What fake tensors raise at an operation whose output shape depends on the data (`nonzero`,
# masked selection, `.item()`): a call that gets that far passed everything before it.
_DATA_DEPENDENT = ("DataDependentOutputException", "DynamicOutputShapeException")


def shape_depends_on_data(error):
    """Whether a call on fake tensors stopped at an operation only a real run can follow."""
    return type(error).__name__ in _DATA_DEPENDENT


def meets_meta_weights(error):
    """Whether a call on fake tensors stopped where a tensor made on the CPU inside the forward
    (torch.arange without a device) met weights on the meta device: bench/transformers_dry_run's
    own limit, which a real run does not have."""
    return type(error).__name__ == "FakeTensorDeviceMismatchError"


def on_weights(model, inputs):
    """inputs with their tensors moved to where model's weights are (the meta device in a dry
    run), for a try on fake tensors."""
    import torch

    device = next(model.parameters(), torch.empty(0)).device
    return {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def _verdict(model, inputs):
    """How model's forward meets the keyword arguments `inputs` on fake tensors: "through" where
    it runs through; "data" where it runs as far as an operation whose shape depends on the data
    (it passed all before; only a real run follows); "unjudged" where a tensor made on the CPU
    inside the forward meets weights on the meta device (bench/transformers_dry_run's own limit:
    only a real run says); "refused" where it raises otherwise."""
    try:
        on_fake_tensors(model.forward, on_weights(model, inputs))
        return "through"
    except Exception as error:  # not this layout, unless fake tensors cannot follow it
        if meets_meta_weights(error):
            return "unjudged"
        return "data" if shape_depends_on_data(error) else "refused"


# Each verdict as taken() says it: taken, not taken, or only a real run can say (None).
_TAKEN = {"through": True, "data": True, "unjudged": None, "refused": False}


def taken(model, inputs):
    """Whether model's forward takes the keyword arguments `inputs` on fake tensors (_verdict):
    True where it runs through or as far as an operation only a real run follows, None where
    only a real run can say, False where it refuses them."""
    return _TAKEN[_verdict(model, inputs)]


def _first_of(judged):
    """first_taken's choice among (layout, verdict) pairs."""
    return next((inputs for inputs, v in judged if _TAKEN[v]),
                next((inputs for inputs, v in judged if _TAKEN[v] is None), None))


def first_taken(model, layouts):
    """The first of `layouts` (keyword arguments of model's forward, tried in order; any
    iterable) that the forward takes on fake tensors, else the first only a real run can judge,
    else None: the caller falls back to its own guess, so that the script fails in the
    forward's words."""
    judged = []
    for inputs in layouts:
        judged.append((inputs, _verdict(model, inputs)))
        if _TAKEN[judged[-1][1]]:
            break
    return _first_of(judged)


def _runs(model, inputs):
    """Whether a real forward of model takes `inputs` (turnkeyml.trials: not an execution of it
    for turnkey's discovery)."""
    import torch

    from .. import trials

    try:
        with torch.no_grad():
            trials.trial_call(model, **_accepted(model.forward, inputs))
        return True
    except Exception:  # noqa: BLE001 (not this layout)
        return False


def first_run(model, layouts):
    """first_taken for forwards that read their inputs' values before their shapes (Inkling 2's
    tower counts its patches from its grid before it reshapes them, so that every layout runs on
    fake tensors as far as that count): where the first layout not refused only reaches an
    operation a real run follows, and others are not refused either, the first of those a real
    forward takes; else (or where none does: weights on the meta device) first_taken's choice."""
    judged = []
    for inputs in layouts:
        judged.append((inputs, _verdict(model, inputs)))
        if judged[-1][1] == "through" and all(v == "refused" for _, v in judged[:-1]):
            return inputs  # the first layout not refused runs through: nothing to tell apart
    open_layouts = [(inputs, v) for inputs, v in judged if v != "refused"]
    if len(open_layouts) > 1 and open_layouts[0][1] != "through":
        found = next((inputs for inputs, _ in open_layouts if _runs(model, inputs)), None)
        if found is not None:
            return found
    return _first_of(judged)
