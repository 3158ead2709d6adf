"""How many feature vectors a multimodal model splices into its text: its forward, run on fake
tensors, hands them to `get_placeholder_mask` (transformers' check that placeholder tokens and
features match), where the count is read and the run stops. Per class, the count is what its
towers make after pooling, merging, tiling and padding (Gemma 3n pads its audio to 188), which
no reading of the configuration gets right for every class."""

import inspect

from .config import on_fake_tensors, on_weights


class _Counted(Exception):
    def __init__(self, features):
        super().__init__(features)
        self.features = features


def _counting(method, argument):
    """`method` (a bound get_placeholder_mask) that raises _Counted with the number of feature
    vectors given as `argument`, instead of checking them."""
    signature = inspect.signature(method)

    def count(*args, **kwargs):
        given = signature.bind_partial(*args, **kwargs).arguments
        features, embeds = given.get(argument), given.get("inputs_embeds")
        if features is None or embeds is None:
            return method(*args, **kwargs)
        raise _Counted(int(features.numel()) // int(embeds.shape[-1]))
    return count


def feature_count(model, inputs, argument):
    """The feature vectors model's forward makes of inputs and hands its placeholder check as
    `argument` (image_features, audio_features), or None."""
    patched = [m for m in model.modules() if hasattr(type(m), "get_placeholder_mask")]
    for m in patched:
        m.get_placeholder_mask = _counting(m.get_placeholder_mask, argument)
    try:
        on_fake_tensors(model.forward, on_weights(model, inputs))
    except _Counted as counted:
        return counted.features
    except Exception:  # noqa: BLE001 (no count: the caller goes on without one)
        return None
    finally:
        for m in patched:
            del m.get_placeholder_mask
    return None
